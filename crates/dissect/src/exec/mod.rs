//! Executes a compiled [`Program`] over one datagram with the shared bit reader, into a
//! flat pre-order field tree where every field carries its bit offset and length.

use super::expr::eval;
use super::model::*;
use super::paths::{ancestors, path_of, render_path};
use super::plan;
use super::prims::{self, Raw};
use super::program::*;
use crate::bits::{BitError, BitReader, ErrorKind, Prim, RELATIVE_INDEX_LADDER, ReadStream};
use crate::validate::{CountEncoding, FRAGMENT_TYPE};

mod arrays;
mod fields;
mod fragments;
mod packet;
mod planned;
mod record;
mod words;

use planned::{ELEMENT_STACK, Element};

/// Reusable execution state: dissecting many packets allocates nothing once warm.
#[derive(Clone)]
pub struct Dissector {
    program: std::sync::Arc<Program>,
    slots: Vec<i64>,
    /// Primitives traced while reading one leaf (reused).
    prims: Vec<Prim>,
    /// Array and list elements plan runs are inside (reused).
    elements: Vec<Element>,
    /// Slot values saved before each plan run, to start a block read again from them.
    saved: Vec<i64>,
    /// Record fields (false: validate only, for the fast path).
    pub record: bool,
    /// Plan runs that failed, so the interpreter read their block again: on valid
    /// packets none (a test holds it), or the plan is only slower, never wrong.
    pub plan_fallbacks: u64,
    /// Run the program's compiled blocks where it has them (false: the plan executor,
    /// the oracle they are tested against).
    pub native: bool,
    /// The datagram padded for compiled code (reused).
    padded: super::native::Padded,
}

impl Dissector {
    pub fn new(program: std::sync::Arc<Program>) -> Self {
        Dissector {
            slots: vec![0; program.slot_count],
            prims: Vec::with_capacity(8),
            elements: Vec::with_capacity(4 * ELEMENT_STACK),
            saved: Vec::new(),
            record: true,
            plan_fallbacks: 0,
            native: true,
            padded: Default::default(),
            program,
        }
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The slots as the last datagram left them: what later ops and roles read (the
    /// compiled code and the plan executor are held to the same ones).
    pub fn slots(&self) -> &[i64] {
        &self.slots
    }

    /// Dissects one datagram into `out` (cleared first).
    pub fn dissect_into(&mut self, data: &[u8], out: &mut Dissection) {
        out.fields.clear();
        out.messages.clear();
        out.learnt.clear();
        out.send_time = None;
        out.crc_at = None;
        out.crc_stand_in = false;
        out.crc = None;
        out.sequence = None;
        out.packet_type = None;
        out.fragment = None;
        out.ack = None;
        out.ack_bits = None;
        out.ack_items.clear();
        out.fault = None;
        self.program.plan.clear_read_slots(&mut self.slots);
        let mut r = BitReader::new(data);
        self.padded.reset();
        let mut exec = Exec {
            program: &self.program,
            slots: &mut self.slots,
            prims: &mut self.prims,
            elements: &mut self.elements,
            saved: &mut self.saved,
            native: self.native,
            padded: &mut self.padded,
            record: self.record,
            count: std::cell::Cell::new(0),
            rest: std::cell::Cell::new(None),
            seen: 0,
            fallbacks: 0,
            total_bits: data.len() as u64 * 8,
            items_from: 0,
            last_ack: LastAck::None,
        };
        let _ = exec.packet(&mut r, out);
        self.plan_fallbacks += exec.fallbacks;
        out.bits_read = r.bits_read();
        if !self.record && out.fault.is_some() {
            // Validation keeps no parents, so a fault's path would lack them: faults are
            // rare, read the packet again in full for the exact path.
            self.record = true;
            self.dissect_into(data, out);
            self.record = false;
            out.fields.clear();
        }
    }

    /// Dissects a message reassembled from fragments inside messages as the body of
    /// message type `ty` (`reassembled-as`): no datagram header, no message header, and
    /// bytes left after the body are trailing. Always the interpreter: such messages
    /// are rare, and a fault's path is then exact.
    pub fn dissect_message_into(&mut self, ty: u32, data: &[u8], out: &mut Dissection) {
        *out = Dissection {
            fields: std::mem::take(&mut out.fields),
            messages: std::mem::take(&mut out.messages),
            learnt: std::mem::take(&mut out.learnt),
            ..Dissection::default()
        };
        out.fields.clear();
        out.messages.clear();
        out.learnt.clear();
        out.packet_type = Some(ty);
        self.slots.iter_mut().for_each(|x| *x = 0);
        let mut r = BitReader::new(data);
        self.padded.reset();
        let mut exec = Exec {
            program: &self.program,
            slots: &mut self.slots,
            prims: &mut self.prims,
            elements: &mut self.elements,
            saved: &mut self.saved,
            native: self.native,
            padded: &mut self.padded,
            record: true,
            count: std::cell::Cell::new(0),
            rest: std::cell::Cell::new(None),
            seen: 0,
            fallbacks: 0,
            total_bits: data.len() as u64 * 8,
            items_from: 0,
            last_ack: LastAck::None,
        };
        let _ = exec.message_alone(&mut r, out, ty);
        out.bits_read = r.bits_read();
        if !self.record {
            out.fields.clear();
        }
    }

    pub fn dissect(&mut self, data: &[u8]) -> Dissection {
        let mut d = Dissection::default();
        self.dissect_into(data, &mut d);
        d
    }
}

struct Exec<'p> {
    program: &'p Program,
    slots: &'p mut Vec<i64>,
    prims: &'p mut Vec<Prim>,
    /// Open elements of the plan runs under way, innermost last (each run keeps its
    /// own above where it started).
    elements: &'p mut Vec<Element>,
    saved: &'p mut Vec<i64>,
    /// Whether to run compiled blocks, and the datagram padded for them.
    native: bool,
    padded: &'p mut super::native::Padded,
    record: bool,
    /// Fields read so far (counted even when not recorded, for the limit).
    count: std::cell::Cell<u32>,
    /// Where the `rest` field's bytes are (fragment data) and its described lead.
    rest: std::cell::Cell<Option<(usize, usize, usize)>>,
    /// Role slots written on this packet's path (bit per slot).
    seen: u32,
    /// Plan runs that failed on this packet.
    fallbacks: u64,
    /// The datagram's length in bits (what `remaining` counts down from).
    total_bits: u64,
    /// Ack items from here on are the message's being read (0: the datagram's).
    items_from: usize,
    /// The ack read last, which an echoed time answers.
    last_ack: LastAck,
}

/// The ack an `ack-time` field echoes the time of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LastAck {
    None,
    /// The message's single ack.
    Single,
    /// The ack item at this index.
    Item(usize),
}

struct Stop;

type Step = Result<(), Stop>;

/// Where a node is being read: its id, label and kind name, its parent and depth in
/// the field tree, and the bit it starts at.
#[derive(Clone, Copy)]
struct Here {
    id: NodeId,
    label: Label,
    kind: &'static str,
    parent: u32,
    depth: u16,
    at: u64,
}
