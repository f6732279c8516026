//! Executes a compiled [`Program`] over one datagram with the shared bit reader, into a
//! flat pre-order field tree where every field carries its bit offset and length.

use super::expr::eval;
use super::plan;
use super::prims::{self, Raw};
use super::program::*;
use crate::bits::{BitError, BitReader, ErrorKind, Prim, RELATIVE_INDEX_LADDER, ReadStream};
use crate::validate::{CountEncoding, FRAGMENT_TYPE};
use serde::Serialize;

#[path = "exec_words.rs"]
mod words;

#[path = "exec_fragments.rs"]
mod fragments;

/// Parent index of root fields.
pub const ROOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Value {
    None,
    Int(i64),
    UInt(u64),
    Bool(bool),
    Float(f32),
    Double(f64),
    /// A byte range of the datagram (zero-copy).
    Bytes {
        offset: usize,
        len: usize,
    },
    Vec3([f32; 3]),
    Quat([f32; 4]),
}

/// What a field is called: its definition node, an element index, or a fixed part name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Node(NodeId),
    Index(u32),
    Part(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field {
    /// The definition node this field belongs to (`u32::MAX` for the end check).
    pub node: NodeId,
    pub label: Label,
    pub kind: &'static str,
    pub parent: u32,
    pub depth: u16,
    pub bit_offset: u64,
    pub bit_len: u64,
    /// The bits as read (for ≤ 64-bit leaves).
    pub raw: u64,
    pub value: Value,
}

impl Field {
    /// Fields that hold other fields (their value, if any, summarises the children).
    pub fn is_group(&self) -> bool {
        matches!(
            self.kind,
            "array"
                | "list"
                | "relative-list"
                | "struct"
                | "vector"
                | "quaternion"
                | "compressed-vector"
                | "smallest-three"
                | "string"
                | "element"
                | "relative-index"
                | "sentinel"
        )
    }
}

/// Why a dissection stopped. Serialized by [`FaultKind::code`], the one spelling used in
/// every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    PastEnd,
    OutOfRange,
    NonZeroPadding,
    Check,
    UnknownType,
    TrailingBytes,
    Limit,
    /// An expression of the definition could not be evaluated (division by zero).
    Expression,
    /// An encrypted body's MAC failed under its connection's key (a wrong key,
    /// tampering).
    Mac,
    /// An encrypted packet that opened, but repeats a sequence its direction of the
    /// connection received already, or is older than the receiver's replay window.
    Replayed,
}

impl FaultKind {
    pub fn from_error(e: &ErrorKind) -> FaultKind {
        match e {
            ErrorKind::PastEnd { .. } => FaultKind::PastEnd,
            ErrorKind::OutOfRange { .. } => FaultKind::OutOfRange,
            ErrorKind::NonZeroPadding { .. } => FaultKind::NonZeroPadding,
            ErrorKind::CheckMismatch { .. } => FaultKind::Check,
            ErrorKind::Invalid { .. } => FaultKind::Limit,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            FaultKind::PastEnd => "past_end",
            FaultKind::OutOfRange => "out_of_range",
            FaultKind::NonZeroPadding => "nonzero_padding",
            FaultKind::Check => "check",
            FaultKind::UnknownType => "unknown_type",
            FaultKind::TrailingBytes => "trailing_bytes",
            FaultKind::Limit => "limit",
            FaultKind::Expression => "expression",
            FaultKind::Mac => "mac_failure",
            FaultKind::Replayed => "replayed",
        }
    }

    pub const ALL: [FaultKind; 10] = [
        FaultKind::PastEnd,
        FaultKind::OutOfRange,
        FaultKind::NonZeroPadding,
        FaultKind::Check,
        FaultKind::UnknownType,
        FaultKind::TrailingBytes,
        FaultKind::Limit,
        FaultKind::Expression,
        FaultKind::Mac,
        FaultKind::Replayed,
    ];
}

impl Serialize for FaultKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

/// Where and why a dissection stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fault {
    pub kind: FaultKind,
    /// Path of the field being read, e.g. `objects[3].position.x`.
    pub field: String,
    pub bit: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FragmentInfo {
    pub id: u32,
    pub count: u32,
    pub data_offset: usize,
    pub data_len: usize,
    /// Bytes at the start of the data that the fragment's `rest { … }` describes (the
    /// packet header fragment 0 carries): part of the reassembled packet, but not
    /// counted against `fragment-size`.
    pub lead: usize,
}

/// One message of a datagram that carries several: its type and where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MessageInfo {
    /// `None`: the message's header could not be read.
    pub type_id: Option<u32>,
    pub bit_offset: u64,
    pub bit_len: u64,
    /// The message's sequence in its stream, when it has one.
    pub stream: Option<StreamSeq>,
    /// The fragment of a bigger message it carries, when its type carries one.
    pub fragment: Option<MessageFragment>,
    /// The datagram's send time (`role=send-time`), on messages with a stream sequence.
    pub send_time: Option<u32>,
    /// The stream sequence it acks (`role=ack stream=…`), and the send time it echoes.
    pub ack: Option<StreamSeq>,
    pub echo: Option<u32>,
}

/// A fragment carried in a message: its group's key, number, count, where its data
/// lies in the datagram, and its byte offset in the whole message with the message's
/// length (placed by number × `fragment-size` without them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MessageFragment {
    pub key: [i64; 3],
    pub id: u32,
    pub count: u32,
    pub offset: Option<u32>,
    pub total: Option<u32>,
    /// Byte offset and length of the data in the datagram.
    pub data_at: u32,
    pub data_len: u32,
}

/// A message's place in a sequence stream: which stream, its key's values, its sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamSeq {
    pub stream: u8,
    pub key: [i64; 2],
    pub sequence: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dissection {
    pub fields: Vec<Field>,
    /// The datagram's messages in order (protocols with `messages`), read or not.
    pub messages: Vec<MessageInfo>,
    /// Where the checksum field starts (a checksum declared with `field=`).
    pub crc_at: Option<u64>,
    /// The checksum is computed with a remembered value in its field (its `stand-in`
    /// and `stand-in-when` held).
    pub crc_stand_in: bool,
    /// Fields the conversation remembers: (value, bit offset, bit length).
    pub learnt: Vec<(u8, u64, u64)>,
    /// The header's `role=send-time` value, when read.
    pub send_time: Option<u32>,
    pub crc: Option<u32>,
    pub sequence: Option<u64>,
    pub packet_type: Option<u32>,
    pub fragment: Option<FragmentInfo>,
    /// The ack roles, when the packet's path read them.
    pub ack: Option<u16>,
    pub ack_bits: Option<u32>,
    pub fault: Option<Fault>,
    pub bits_read: u64,
}

impl Dissection {
    pub fn is_ok(&self) -> bool {
        self.fault.is_none()
    }

    /// Where each field's subtree ends: fields are in pre-order, so field `i`'s
    /// descendants are `i + 1 .. end[i]`, and its next sibling starts at `end[i]`.
    pub fn subtree_ends(&self, end: &mut Vec<u32>) {
        let n = self.fields.len();
        end.clear();
        end.resize(n, n as u32);
        let mut open: Vec<u32> = Vec::with_capacity(8);
        for (i, f) in self.fields.iter().enumerate() {
            while let Some(&top) = open.last() {
                if f.parent == top {
                    break;
                }
                end[top as usize] = i as u32;
                open.pop();
            }
            open.push(i as u32);
        }
    }
}

/// Reusable execution state: dissecting many packets allocates nothing once warm.
#[derive(Clone)]
pub struct Dissector {
    program: std::sync::Arc<Program>,
    slots: Vec<i64>,
    /// Primitives traced while reading one leaf (reused).
    prims: Vec<Prim>,
    /// Array and list elements plan runs are inside (reused).
    elements: Vec<Element>,
    /// Record fields (false: validate only, for the fast path).
    pub record: bool,
    /// Plan runs that failed, so the interpreter read their block again: on valid
    /// packets none (a test holds it), or the plan is only slower, never wrong.
    pub plan_fallbacks: u64,
}

impl Dissector {
    pub fn new(program: std::sync::Arc<Program>) -> Self {
        Dissector {
            slots: vec![0; program.slot_count],
            prims: Vec::with_capacity(8),
            elements: Vec::with_capacity(4 * ELEMENT_STACK),
            record: true,
            plan_fallbacks: 0,
            program,
        }
    }

    pub fn program(&self) -> &Program {
        &self.program
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
        out.fault = None;
        for &s in &self.program.plan.read_slots {
            if let Some(x) = self.slots.get_mut(s as usize) {
                *x = 0;
            }
        }
        let mut r = BitReader::new(data);
        let mut exec = Exec {
            program: &self.program,
            slots: &mut self.slots,
            prims: &mut self.prims,
            elements: &mut self.elements,
            record: self.record,
            count: std::cell::Cell::new(0),
            rest: std::cell::Cell::new(None),
            seen: 0,
            fallbacks: 0,
            total_bits: data.len() as u64 * 8,
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
        let mut exec = Exec {
            program: &self.program,
            slots: &mut self.slots,
            prims: &mut self.prims,
            elements: &mut self.elements,
            record: true,
            count: std::cell::Cell::new(0),
            rest: std::cell::Cell::new(None),
            seen: 0,
            fallbacks: 0,
            total_bits: data.len() as u64 * 8,
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
}

struct Stop;

/// Open array and list elements one plan run keeps (deeper nesting goes back to the
/// interpreter, which starts runs of its own).
const ELEMENT_STACK: usize = 4;

/// An array or list element a plan run is inside: where its body's plan starts, where to
/// go on when the last element is done, and what decides whether another follows.
#[derive(Clone, Copy, Default)]
struct Element {
    entry: u32,
    back: u32,
    /// Array: elements still to read after this one. List: elements done.
    left: u64,
    /// List: the index that ends it (arrays: -1).
    max: i64,
    previous: i64,
}

/// A flat element that is an optional field: `bool flag` then `if flag { … }` (or
/// `if "!flag"`) around fields that cannot be out of range — the commonest shape of
/// bitpacked game state, read as one bit and a skip.
#[derive(Clone, Copy)]
struct Flagged {
    slot: u16,
    negate: bool,
    /// The fields the flag's run counts, and the guarded run's bits and fields.
    flag_fields: u32,
    bits: u32,
    fields: u32,
}

impl Flagged {
    fn of(flat: &[plan::Segment], checks: &[plan::Check]) -> Option<Flagged> {
        let [flag, then] = flat else { return None };
        let [c] = plan::checks(checks, flag.checks) else {
            return None;
        };
        let shape = flag.slot == plan::NO_SLOT
            && flag.bits == 1
            && then.slot != plan::NO_SLOT
            && then.checks.1 == 0
            && (c.at, c.mask, c.bias, c.slot) == (0, 1, 0, then.slot)
            && c.max >= 1;
        shape.then_some(Flagged {
            slot: then.slot,
            negate: then.negate,
            flag_fields: flag.fields,
            bits: then.bits,
            fields: then.fields,
        })
    }
}

/// The width of each rung's difference, known before packets flow.
const LADDER_WIDTHS: [u32; 5] = {
    let mut w = [0; 5];
    let mut k = 0;
    while k < 5 {
        let (lo, hi) = RELATIVE_INDEX_LADDER[k];
        w[k] = match crate::bits::int_width(lo, hi) {
            Some(b) => b,
            None => 0,
        };
        k += 1;
    }
    w
};

/// A relative list's next index after `previous`, read at `pos` (the article's ladder:
/// a flag for +1, else flags choosing a range, then the difference); `None` when out
/// of bits or past `max`. Counts the element's group, its index group, the flags and
/// the difference as the interpreter does. The flags are read from one word: a path
/// that needs a bit past the end consumes more bits than there are, whatever the
/// word holds there, so one comparison at the end decides as a check per flag would.
#[inline(always)]
fn relative_next(
    data: &[u8],
    len: u64,
    pos: &mut u64,
    count: &mut u32,
    previous: i64,
    max: i64,
) -> Option<i64> {
    let word = BitReader::peek_masked(data, *pos, u32::MAX);
    if word & 1 == 1 {
        *count += 3;
        *pos += 1;
        return (*pos <= len && previous < max).then_some(previous + 1);
    }
    // Zero flags after the first before a set one: the rung (5: none set, the last range).
    let k = ((word >> 1) | 1 << 5).trailing_zeros() as usize;
    let ((lo, hi), width) = match RELATIVE_INDEX_LADDER.get(k) {
        Some(&r) => (r, LADDER_WIDTHS[k]),
        None => ((126, max + 1), crate::bits::int_width(126, max + 1).unwrap_or(0)),
    };
    // The first flag, the rung's flags (the set one included, unless none is).
    let at = 1 + (k as u64 + 1).min(5);
    if *pos + at + width as u64 > len {
        return None;
    }
    let d = lo + BitReader::peek_at(data, *pos + at, width) as i64;
    *pos += at + width as u64;
    *count += 3 + at as u32;
    let index = previous + d;
    (d <= hi && index <= max).then_some(index)
}

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

impl<'p> Exec<'p> {
    fn packet(&mut self, r: &mut BitReader, out: &mut Dissection) -> Step {
        let p = self.program;
        if self.record || !self.planned(r, out, p.plan.header)? {
            self.block(r, out, p.header, ROOT, 0)?;
        }
        out.crc = self.role(Role::Crc).map(|v| v as u32);
        if let Some(rule) = &p.params.rule
            && rule.stand_in.is_some()
        {
            let at = r.bits_read();
            out.crc_stand_in = match rule.when {
                Some(e) => self.eval_at(out, e, ROOT, Label::Part("stand-in-when"), at)? != 0,
                None => true,
            };
        }
        out.sequence = self.role(Role::Sequence).map(|v| v as u64);
        let ty = self.role(Role::Type).unwrap_or(0) as u32;
        out.packet_type = Some(ty);
        if let Some(node) = p.messages {
            out.packet_type = p.datagram_type;
            let res = self.messages(r, out, node);
            self.acks(out);
            res?;
            return self.protocol_id(out);
        }
        let fragment = match (p.fragment, p.fragment_when) {
            (Some(f), Some(when)) => {
                let at = r.bits_read();
                (self.eval_at(out, when, ROOT, Label::Part("fragment"), at)? != 0).then_some(f)
            }
            (Some(f), None) => (ty == FRAGMENT_TYPE).then_some(f),
            (None, _) => None,
        };
        if let Some(frag) = fragment {
            out.packet_type = Some(p.fragment_type);
            let res = self.block(r, out, frag, ROOT, 0);
            self.acks(out);
            res?;
            let raw = self.role(Role::FragmentCount).unwrap_or(0) as u32;
            let count = match p.params.format.count_encoding {
                CountEncoding::Count => raw,
                CountEncoding::CountMinusOne => raw + 1,
            };
            let data = self.rest.get().unwrap_or(((r.bits_read() / 8) as usize, 0, 0));
            out.fragment = Some(FragmentInfo {
                id: self.role(Role::FragmentId).unwrap_or(0) as u32,
                count,
                data_offset: data.0,
                data_len: data.1,
                lead: data.2,
            });
            return Ok(());
        }
        let res = self.body(r, out, ty);
        self.acks(out);
        res?;
        self.protocol_id(out)
    }

    /// An id sent in the clear must be the definition's: otherwise the datagram is
    /// another protocol's (or another game's), located at the id field.
    fn protocol_id(&self, out: &mut Dissection) -> Step {
        let p = self.program;
        let (Some(v), Some(id)) = (self.role(Role::ProtocolId), p.params.protocol_id) else {
            return Ok(());
        };
        if v as u64 == id.value {
            return Ok(());
        }
        let (field, bit) = out
            .fields
            .iter()
            .enumerate()
            .find(|(_, f)| matches!(f.label, Label::Node(n) if p.nodes[n as usize].role == Some(Role::ProtocolId)))
            .map(|(i, f)| (path_of(p, out, i), f.bit_offset))
            .unwrap_or_else(|| ("protocol id".into(), 0));
        self.fault(
            out,
            FaultKind::Check,
            field,
            bit,
            format!("protocol id 0x{:X} is not the definition's {id}", v as u64),
        )
    }

    fn acks(&self, out: &mut Dissection) {
        out.ack = self.role(Role::Ack).map(|v| v as u16);
        out.ack_bits = self.role(Role::AckBits).map(|v| v as u32);
    }

    /// The value of a role, when this packet's path read a field with it.
    #[inline]
    fn role(&self, role: Role) -> Option<i64> {
        let s = role.slot()?;
        (self.seen >> s & 1 == 1).then(|| self.slot(s))
    }

    fn body(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32) -> Step {
        let p = self.program;
        let entry = p.plan.bodies.get(ty as usize).copied().unwrap_or(plan::NO_ENTRY);
        if self.record || !self.planned(r, out, entry)? {
            self.body_read(r, out, ty)?;
        }
        if let Some(magic) = p.params.end_check
            && (self.record || !self.end_check_fast(r, magic))
        {
            self.leaf(
                r,
                out,
                u32::MAX,
                &Kind::Check { magic },
                Label::Part("end_check"),
                ROOT,
                0,
            )?;
        }
        if r.bits_remaining() >= 8 {
            let bytes = r.bits_remaining() / 8;
            let at = r.bits_read().div_ceil(8) * 8;
            return self.fault(
                out,
                FaultKind::TrailingBytes,
                "end_check".into(),
                at,
                format!("{bytes} trailing bytes after the end of the packet"),
            );
        }
        Ok(())
    }

    /// A top-level block's plan run straight from its entry (validation): true when it
    /// passed, false when there is none or it failed (the reader put back where it was,
    /// for the interpreter).
    #[inline(always)]
    fn planned(&mut self, r: &mut BitReader, out: &mut Dissection, entry: u32) -> Result<bool, Stop> {
        if entry == plan::NO_ENTRY {
            return Ok(false);
        }
        let (at, count) = (r.bits_read(), self.count.get());
        if self.run_plan(r, out, entry, ROOT, 0)? {
            return Ok(true);
        }
        *r = BitReader::at(r.data(), at);
        self.count.set(count);
        Ok(false)
    }

    /// A reassembled message read as message type `ty`'s body, to its last byte.
    fn message_alone(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32) -> Step {
        let p = self.program;
        let Some(def) = p.packet(ty) else {
            let reason = format!("no message is defined for type {ty}");
            return self.fault(out, FaultKind::UnknownType, "message".into(), 0, reason);
        };
        self.block(r, out, def.body, ROOT, 0)?;
        if r.bits_remaining() >= 8 {
            let bytes = r.bits_remaining() / 8;
            let at = r.bits_read().div_ceil(8) * 8;
            let reason = format!("{bytes} trailing bytes after the message");
            return self.fault(out, FaultKind::TrailingBytes, def.name.clone(), at, reason);
        }
        Ok(())
    }

    /// A packet's body by its definition (the interpreter, or a fault for a type without one).
    fn body_read(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32) -> Step {
        let p = self.program;
        let Some(def) = p.packet(ty) else {
            let at = out
                .fields
                .iter()
                .find(|f| matches!(f.label, Label::Node(n) if p.nodes[n as usize].role == Some(Role::Type)))
                .map(|f| f.bit_offset)
                .unwrap_or(0);
            let name = p
                .nodes
                .iter()
                .find(|n| n.role == Some(Role::Type))
                .map(|n| n.name.clone());
            return self.fault(
                out,
                FaultKind::UnknownType,
                name.unwrap_or_else(|| "type".into()),
                at,
                format!("no packet is defined for type {ty}"),
            );
        };
        self.block(r, out, def.body, ROOT, 0)
    }

    /// The end check without the interpreter, for validation: zero padding to the byte,
    /// then the magic. False: the interpreter reads it again and says why.
    #[inline(always)]
    fn end_check_fast(&self, r: &mut BitReader, magic: u32) -> bool {
        let (data, at) = (r.data(), r.bits_read());
        let pad = r.align_bits();
        let pos = at + pad as u64;
        let fields = self.count.get() + 1 + u32::from(pad > 0);
        if pos + 32 > r.len_bits()
            || BitReader::peek_at(data, at, pad) != 0
            || BitReader::peek_at(data, pos, 32) != magic
            || fields > self.program.limits.max_fields
        {
            return false;
        }
        self.count.set(fields);
        *r = BitReader::at(data, pos + 32);
        true
    }

    #[inline]
    fn slot(&self, s: u16) -> i64 {
        self.slots.get(s as usize).copied().unwrap_or(0)
    }

    fn path(&self, out: &Dissection, parent: u32, last: Label) -> String {
        let mut labels = vec![last];
        labels.extend(ancestors(out, parent));
        render_path(self.program, &labels)
    }

    fn fault(&self, out: &mut Dissection, kind: FaultKind, field: String, bit: u64, reason: String) -> Step {
        out.fault = Some(Fault {
            kind,
            field,
            bit,
            reason,
        });
        Err(Stop)
    }

    /// Records a read error as the packet's fault, located at the field being read.
    fn read_fault(&self, out: &mut Dissection, e: BitError, parent: u32, label: Label) -> Stop {
        let kind = FaultKind::from_error(&e.kind);
        let field = self.path(out, parent, label);
        let _ = self.fault(out, kind, field, e.at, e.kind.to_string());
        Stop
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push(
        &self,
        out: &mut Dissection,
        node: NodeId,
        label: Label,
        kind: &'static str,
        parent: u32,
        depth: u16,
        bit_offset: u64,
        bit_len: u64,
        raw: u64,
        value: Value,
    ) -> Result<u32, Stop> {
        let n = self.count.get() + 1;
        self.count.set(n);
        if n > self.program.limits.max_fields {
            let field = self.path(out, parent, label);
            let _ = self.fault(
                out,
                FaultKind::Limit,
                field,
                bit_offset,
                format!(
                    "more than {} fields in one packet",
                    self.program.limits.max_fields
                ),
            );
            return Err(Stop);
        }
        if !self.record {
            return Ok(ROOT);
        }
        out.fields.push(Field {
            node,
            label,
            kind,
            parent,
            depth,
            bit_offset,
            bit_len,
            raw,
            value,
        });
        Ok(out.fields.len() as u32 - 1)
    }

    /// Stops the packet: a hard limit was reached while reading `label`.
    fn limit(&self, out: &mut Dissection, parent: u32, label: Label, bit: u64, reason: String) -> Step {
        let field = self.path(out, parent, label);
        self.fault(out, FaultKind::Limit, field, bit, reason)
    }

    /// Opens element `i` of a list or array.
    fn element(
        &self,
        out: &mut Dissection,
        id: NodeId,
        group: u32,
        i: u32,
        depth: u16,
        at: u64,
    ) -> Result<u32, Stop> {
        self.push(
            out,
            id,
            Label::Index(i),
            "element",
            group,
            depth,
            at,
            0,
            0,
            Value::None,
        )
    }

    fn close(&self, out: &mut Dissection, group: u32, r: &BitReader, value: Value) {
        if let Some(f) = out.fields.get_mut(group as usize) {
            f.bit_len = r.bits_read() - f.bit_offset;
            if !matches!(value, Value::None) {
                f.value = value;
            }
        }
    }

    fn block(&mut self, r: &mut BitReader, out: &mut Dissection, b: Block, parent: u32, depth: u16) -> Step {
        let p = self.program;
        if !self.record
            && let Some(entry) = p.plan.entry(b)
        {
            let (at, count) = (r.bits_read(), self.count.get());
            if self.run_plan(r, out, entry, parent, depth)? {
                return Ok(());
            }
            // Read the block again node by node: it says where and why.
            *r = BitReader::at(r.data(), at);
            self.count.set(count);
        }
        for &id in p.block(b) {
            self.node(r, out, id, parent, depth)?;
        }
        Ok(())
    }

    /// Runs the validation plan from op `entry` to its `Return`. Array and list elements
    /// with plans of their own run in the same loop (a small stack of open elements),
    /// without a call per element. `Ok(false)`: an op failed — out of bits, a value out
    /// of range, a division by zero, a limit — and the interpreter must read the block
    /// again to locate it.
    #[inline]
    fn run_plan(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        entry: u32,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        let base = self.elements.len();
        let done = self.run_ops(r, out, entry, parent, depth);
        self.elements.truncate(base);
        self.fallbacks += u64::from(matches!(done, Ok(false)));
        done
    }

    #[inline(never)]
    fn run_ops(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        entry: u32,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        use plan::{NO_ENTRY, Op};
        let program = self.program;
        let plan = &program.plan;
        let (ops, checks, segments) = (&plan.ops[..], &plan.checks[..], &plan.segments[..]);
        let limits = &program.limits;
        let data = r.data();
        let len = r.len_bits();
        let mut pos = r.bits_read();
        let mut count = self.count.get();
        let base = self.elements.len();
        let mut pc = entry as usize;
        loop {
            let Some(op) = ops.get(pc) else {
                return Ok(false);
            };
            pc += 1;
            match *op {
                Op::Run {
                    bits,
                    fields,
                    checks: (first, n),
                } => {
                    if pos + bits as u64 > len || !self.checked(plan::checks(checks, (first, n)), data, pos) {
                        return Ok(false);
                    }
                    pos += bits as u64;
                    count += fields;
                }
                Op::Cond {
                    slot,
                    negate,
                    bits,
                    fields,
                    checks: (first, n),
                } => {
                    if (self.slot(slot) != 0) == negate {
                        continue;
                    }
                    if pos + bits as u64 > len || !self.checked(plan::checks(checks, (first, n)), data, pos) {
                        return Ok(false);
                    }
                    pos += bits as u64;
                    count += fields;
                }
                Op::Unless { cond, to } => match eval(program.expr(cond), self.slots) {
                    Ok(0) => pc = to as usize,
                    Ok(_) => {}
                    Err(_) => return Ok(false),
                },
                Op::UnlessSlot { slot, negate, to } => {
                    if (self.slot(slot) == 0) != negate {
                        pc = to as usize;
                    }
                }
                Op::Goto { to } => pc = to as usize,
                Op::Array {
                    count: c,
                    body,
                    entry,
                    fixed,
                    flat,
                } => {
                    let n = match c {
                        Count::Const(n) => n,
                        Count::Expr(e) => match eval(program.expr(e), self.slots) {
                            Ok(n) => n.max(0) as u64,
                            Err(_) => return Ok(false),
                        },
                    };
                    if n > limits.max_elements {
                        return Ok(false);
                    }
                    // The array's group, then per element its group and body.
                    count += 1;
                    if n == 0 {
                        continue;
                    }
                    if fixed
                        && let Some(Op::Run {
                            bits,
                            fields,
                            checks: (first, k),
                        }) = ops.get(entry as usize)
                    {
                        // One run per element and no slot: one bounds check for all.
                        let total = n as u128 * (u64::from(*fields) + 1) as u128;
                        if pos as u128 + n as u128 * *bits as u128 > len as u128
                            || count as u128 + total > limits.max_fields as u128
                        {
                            return Ok(false);
                        }
                        let run = plan::checks(checks, (*first, *k));
                        if let [c] = run {
                            // The common element, one checked value: its place, mask and
                            // bound held in registers across the loop.
                            let (at, step, mask, max) = (pos + c.at as u64, *bits as u64, c.mask, c.max);
                            if (0..n).any(|i| BitReader::peek_masked(data, at + i * step, mask) > max) {
                                return Ok(false);
                            }
                        } else if !run.is_empty() {
                            for i in 0..n {
                                let at = pos + i * *bits as u64;
                                if run
                                    .iter()
                                    .any(|c| BitReader::peek_masked(data, at + c.at as u64, c.mask) > c.max)
                                {
                                    return Ok(false);
                                }
                            }
                        }
                        pos += n * *bits as u64;
                        count += total as u32;
                    } else if flat.1 > 0 || entry == NO_ENTRY {
                        let flat = segments
                            .get(flat.0 as usize..(flat.0 + flat.1) as usize)
                            .unwrap_or(&[]);
                        if let Some(f) = Flagged::of(flat, checks) {
                            if !self.flagged(f, n, data, len, (&mut pos, &mut count)) {
                                return Ok(false);
                            }
                            continue;
                        }
                        for _ in 0..n {
                            count += 1;
                            if !self.planned_element(
                                r,
                                out,
                                flat,
                                body,
                                (data, len),
                                (&mut pos, &mut count),
                                (parent, depth),
                            )? {
                                return Ok(false);
                            }
                        }
                    } else if self.elements.len() - base < ELEMENT_STACK {
                        count += 1;
                        self.elements.push(Element {
                            entry,
                            back: pc as u32,
                            left: n - 1,
                            max: -1,
                            previous: 0,
                        });
                        pc = entry as usize;
                    } else {
                        return Ok(false);
                    }
                }
                Op::RelativeList {
                    max,
                    body,
                    entry,
                    flat,
                } => {
                    // The list's group.
                    count += 1;
                    let Some(index) = relative_next(data, len, &mut pos, &mut count, -1, max) else {
                        return Ok(false);
                    };
                    if index == max {
                        continue;
                    }
                    if flat.1 > 0 || entry == NO_ENTRY {
                        let flat = segments
                            .get(flat.0 as usize..(flat.0 + flat.1) as usize)
                            .unwrap_or(&[]);
                        let mut previous = index;
                        let mut i = 0u64;
                        loop {
                            if !self.planned_element(
                                r,
                                out,
                                flat,
                                body,
                                (data, len),
                                (&mut pos, &mut count),
                                (parent, depth),
                            )? {
                                return Ok(false);
                            }
                            i += 1;
                            if i > limits.max_elements || count > limits.max_fields {
                                return Ok(false);
                            }
                            match relative_next(data, len, &mut pos, &mut count, previous, max) {
                                None => return Ok(false),
                                Some(index) if index == max => break,
                                Some(index) => previous = index,
                            }
                        }
                    } else if self.elements.len() - base < ELEMENT_STACK {
                        self.elements.push(Element {
                            entry,
                            back: pc as u32,
                            max,
                            previous: index,
                            left: 0,
                        });
                        pc = entry as usize;
                    } else {
                        return Ok(false);
                    }
                }
                Op::Node(id) => {
                    *r = BitReader::at(data, pos);
                    self.count.set(count);
                    self.node(r, out, id, parent, depth)?;
                    pos = r.bits_read();
                    count = self.count.get();
                }
                Op::Return => {
                    if self.elements.len() <= base {
                        break;
                    }
                    let Some(e) = self.elements.last_mut() else {
                        break;
                    };
                    // Every element adds a field: the limit bounds the work too.
                    if count > limits.max_fields {
                        return Ok(false);
                    }
                    let more = if e.max >= 0 {
                        // `left` counts the elements done.
                        e.left += 1;
                        if e.left > limits.max_elements {
                            return Ok(false);
                        }
                        match relative_next(data, len, &mut pos, &mut count, e.previous, e.max) {
                            None => return Ok(false),
                            Some(index) => {
                                e.previous = index;
                                index != e.max
                            }
                        }
                    } else if e.left > 0 {
                        e.left -= 1;
                        count += 1;
                        true
                    } else {
                        false
                    };
                    if more {
                        pc = e.entry as usize;
                    } else {
                        pc = e.back as usize;
                        self.elements.pop();
                    }
                }
            }
        }
        if count > limits.max_fields {
            return Ok(false);
        }
        *r = BitReader::at(data, pos);
        self.count.set(count);
        Ok(true)
    }

    /// One element of a flat body: its runs and conditional runs in order, a run not
    /// taken checked anyway and dropped, so the data's flags cost no branch. False: out
    /// of bits or a value out of range.
    #[inline(always)]
    fn segments(
        &mut self,
        segments: &[plan::Segment],
        checks: &[plan::Check],
        data: &[u8],
        len: u64,
        pos: &mut u64,
        count: &mut u32,
    ) -> bool {
        for s in segments {
            if s.slot != plan::NO_SLOT {
                let take = (self.slot(s.slot) != 0) != s.negate;
                // Taken or not without a branch on the flag (the data's own coin toss)
                // when there is nothing to check, or a window checks it all in a few
                // instructions (a conditional run fills no slot). Checks one by one
                // cost more than the branch saved.
                let bad = match &s.pack {
                    _ if s.checks.1 == 0 => Some(false),
                    Some(p) if p.slot_count == 0 => plan::window(data, *pos).map(|w| p.out_of_range(w) != 0),
                    _ => None,
                };
                if let Some(bad) = bad {
                    if take & ((*pos + s.bits as u64 > len) | bad) {
                        return false;
                    }
                    *pos += std::hint::select_unpredictable(take, s.bits as u64, 0);
                    *count += std::hint::select_unpredictable(take, s.fields, 0);
                    continue;
                }
                if !take {
                    continue;
                }
            }
            if *pos + s.bits as u64 > len {
                return false;
            }
            let ok = match (&s.pack, plan::window(data, *pos)) {
                (Some(p), Some(window)) => self.packed(p, window),
                _ => self.checked(plan::checks(checks, s.checks), data, *pos),
            };
            if !ok {
                return false;
            }
            *pos += s.bits as u64;
            *count += s.fields;
        }
        *count <= self.program.limits.max_fields
    }

    /// A run's checks from its window, the range checks two groups at once: what
    /// [`Exec::checked`] decides, in a few instructions a group instead of a dozen a
    /// value.
    #[inline(always)]
    fn packed(&mut self, p: &plan::Pack, window: u128) -> bool {
        if p.out_of_range(window) != 0 {
            return false;
        }
        for c in p.slots() {
            let v = (window >> c.at) as u32 & c.mask;
            if v > c.max {
                return false;
            }
            self.write_slot(c.slot, v as i64 + c.bias);
        }
        true
    }

    /// `n` elements of the [`Flagged`] shape: a bit, and the fields it guards skipped or
    /// not. What the segments would do, element by element, without their loop: the
    /// flag's slot, which only its own element reads, is written once, as the last
    /// element left it. False: out of bits or past the field limit.
    #[inline(always)]
    fn flagged(
        &mut self,
        f: Flagged,
        n: u64,
        data: &[u8],
        len: u64,
        (pos, count): (&mut u64, &mut u32),
    ) -> bool {
        let max_fields = self.program.limits.max_fields;
        let mut last = 0;
        for _ in 0..n {
            *count += 1 + f.flag_fields;
            if *pos >= len {
                return false;
            }
            last = BitReader::peek_masked(data, *pos, 1);
            *pos += 1;
            let take = (last != 0) != f.negate;
            if take & (*pos + f.bits as u64 > len) {
                return false;
            }
            *pos += std::hint::select_unpredictable(take, f.bits as u64, 0);
            *count += std::hint::select_unpredictable(take, f.fields, 0);
            if *count > max_fields {
                return false;
            }
        }
        if n > 0 {
            self.write_slot(f.slot, i64::from(last));
        }
        true
    }

    /// A run's range checks, its bits at `pos` known to lie in the datagram, and the
    /// slots its fields fill. False: a value out of range.
    #[inline(always)]
    fn checked(&mut self, checks: &[plan::Check], data: &[u8], pos: u64) -> bool {
        for c in checks {
            let v = BitReader::peek_masked(data, pos + c.at as u64, c.mask);
            if v > c.max {
                return false;
            }
            if c.slot != plan::NO_SLOT {
                self.write_slot(c.slot, v as i64 + c.bias);
            }
        }
        true
    }

    /// One array or list element inside a plan run, whose body has no plan of its own to
    /// jump to: its flat segments, or (none) the interpreter.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn planned_element(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        flat: &[plan::Segment],
        body: Block,
        (data, len): (&[u8], u64),
        (pos, count): (&mut u64, &mut u32),
        (parent, depth): (u32, u16),
    ) -> Result<bool, Stop> {
        if flat.is_empty() {
            return self.interpret(r, out, pos, count, body, parent, depth);
        }
        let checks = &self.program.plan.checks[..];
        Ok(self.segments(flat, checks, data, len, pos, count))
    }

    /// One element without a plan, read by the interpreter at `pos` inside a plan.
    #[allow(clippy::too_many_arguments)]
    fn interpret(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        pos: &mut u64,
        count: &mut u32,
        body: Block,
        parent: u32,
        depth: u16,
    ) -> Result<bool, Stop> {
        *r = BitReader::at(r.data(), *pos);
        self.count.set(*count);
        self.block(r, out, body, parent, depth)?;
        *pos = r.bits_read();
        *count = self.count.get();
        Ok(*count <= self.program.limits.max_fields)
    }

    fn bits(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        n: u32,
        parent: u32,
        label: Label,
    ) -> Result<u32, Stop> {
        r.read_bits(n).map_err(|e| self.read_fault(out, e, parent, label))
    }

    fn align(&self, r: &mut BitReader, out: &mut Dissection, node: NodeId, parent: u32, depth: u16) -> Step {
        let at = r.bits_read();
        let label = Label::Part("align");
        let pad = if self.program.params.msb {
            r.read_align_msb()
        } else {
            r.read_align()
        }
        .map_err(|e| self.read_fault(out, e, parent, label))?;
        if pad > 0 {
            self.push(
                out,
                node,
                label,
                "align",
                parent,
                depth,
                at,
                pad as u64,
                0,
                Value::UInt(0),
            )?;
        }
        Ok(())
    }

    /// An expression's value; a division by zero stops the packet, located at the
    /// field whose expression it is.
    #[inline(always)]
    fn eval_at(
        &self,
        out: &mut Dissection,
        e: Expr,
        parent: u32,
        label: Label,
        bit: u64,
    ) -> Result<i64, Stop> {
        let code = self.program.expr(e);
        let v = if self.program.params.remaining {
            super::expr::eval_remaining(code, self.slots, self.total_bits.saturating_sub(bit))
        } else {
            eval(code, self.slots)
        };
        match v {
            Ok(v) => Ok(v),
            Err(_) => Err(self.division_by_zero(out, parent, label, bit)),
        }
    }

    #[cold]
    fn division_by_zero(&self, out: &mut Dissection, parent: u32, label: Label, bit: u64) -> Stop {
        let field = self.path(out, parent, label);
        let _ = self.fault(
            out,
            FaultKind::Expression,
            field,
            bit,
            "division by zero in the field's expression".into(),
        );
        Stop
    }

    fn count(&self, out: &mut Dissection, c: Count, h: &Here) -> Result<u64, Stop> {
        match c {
            Count::Const(n) => Ok(n),
            Count::Expr(e) => Ok(self.eval_at(out, e, h.parent, h.label, h.at)?.max(0) as u64),
        }
    }

    /// One field: leaves through the primitive table, everything else here.
    #[inline(always)]
    fn node(&mut self, r: &mut BitReader, out: &mut Dissection, id: NodeId, parent: u32, depth: u16) -> Step {
        let p = self.program;
        if p.params.tracks() {
            return self.node_tracked(r, out, id, parent, depth);
        }
        self.node_read(r, out, id, parent, depth)
    }

    /// A field whose place matters beyond its value: the checksum's, or one the
    /// conversation remembers.
    #[inline(never)]
    fn node_tracked(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let node = &self.program.nodes[id as usize];
        let (role, remember, stream, start) = (node.role, node.remember, node.stream, r.bits_read());
        self.node_read(r, out, id, parent, depth)?;
        let len = r.bits_read() - start;
        if role == Some(Role::Crc) {
            out.crc_at = Some(start);
        }
        match (role, stream) {
            (Some(Role::Ack), Some(si)) => self.stream_ack(out, id, si),
            (_, Some(si)) => self.stream_seq(out, id, si),
            (Some(Role::SendTime), _) => out.send_time = self.node_value(id),
            (Some(Role::AckTime), _) => {
                let v = self.node_value(id);
                if let Some(m) = out.messages.last_mut() {
                    m.echo = v;
                }
            }
            _ => {}
        }
        if role == Some(Role::FragmentData) && !out.messages.is_empty() {
            self.message_fragment(out, id, parent, start, len)?;
        }
        if let Some(i) = remember
            && start.is_multiple_of(8)
            && len.is_multiple_of(8)
            && len <= 64
        {
            out.learnt.push((i, start, len));
        }
        Ok(())
    }

    #[inline(always)]
    fn node_read(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let p = self.program;
        let node = &p.nodes[id as usize];
        let start = r.bits_read();
        if !self.record {
            match self.leaf_untraced(r, &node.kind, node.slot) {
                Some(true) => return Ok(()),
                Some(false) => *r = BitReader::at(r.data(), start),
                None => return self.node_general(r, out, id, parent, depth),
            }
        } else if prims::field_count(&node.kind) == 0 {
            return self.node_general(r, out, id, parent, depth);
        }
        self.leaf_traced(r, out, id, &node.kind, Label::Node(id), parent, depth, start)
    }

    /// Validation: reads a leaf untraced, counts its fields and sets what expressions
    /// see. `None`: not a leaf; `Some(false)`: a fault or the field limit, to be read
    /// again traced to say where.
    #[inline(always)]
    fn leaf_untraced(&mut self, r: &mut BitReader, kind: &Kind, slot: Option<u16>) -> Option<bool> {
        let mut raw = Raw::default();
        match prims::serialize_leaf(r, kind, &mut raw) {
            Ok(0) => None,
            Ok(fields) => {
                let n = self.count.get() + fields;
                if n > self.program.limits.max_fields {
                    return Some(false);
                }
                self.count.set(n);
                if let Some(s) = slot {
                    self.write_slot(s, raw.0[0] as i64);
                }
                Some(true)
            }
            Err(_) => Some(false),
        }
    }

    /// A leaf outside `node` (the end check, `node_general`'s callers).
    #[allow(clippy::too_many_arguments)]
    fn leaf(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        kind: &Kind,
        label: Label,
        parent: u32,
        depth: u16,
    ) -> Step {
        let start = r.bits_read();
        if !self.record {
            let slot = self.program.nodes.get(id as usize).and_then(|n| n.slot);
            if self.leaf_untraced(r, kind, slot) == Some(true) {
                return Ok(());
            }
            *r = BitReader::at(r.data(), start);
        }
        self.leaf_traced(r, out, id, kind, label, parent, depth, start)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn leaf_traced(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        kind: &Kind,
        label: Label,
        parent: u32,
        depth: u16,
        start: u64,
    ) -> Step {
        let mut raw = Raw::default();
        // Without a fault no trace is needed: a one-field leaf spans what was read, a
        // group's parts lie one after the other.
        let fields = prims::field_count(kind);
        if fields == 1 || prims::is_group(kind) {
            let mut quick = BitReader::at(r.data(), start);
            if prims::serialize_leaf(&mut quick, kind, &mut raw).is_ok() {
                *r = quick;
                if fields == 1 {
                    let (bits, value) = prims::single(kind, raw.0[0], self.record);
                    self.push(
                        out,
                        id,
                        label,
                        kind.name(),
                        parent,
                        depth,
                        start,
                        r.bits_read() - start,
                        bits,
                        value,
                    )?;
                    self.set_slot(id, raw.0[0] as i64);
                    return Ok(());
                }
                let group = self.open_leaf_group(out, id, kind, label, parent, depth, start)?;
                let mut pushed = Ok(0);
                let value = prims::parts_of(kind, &raw, start, self.record, &mut |f: &prims::LeafField| {
                    if pushed.is_ok() {
                        pushed = self.push_leaf_field(out, id, f, label, parent, depth, group);
                    }
                });
                pushed?;
                if let Some(g) = group {
                    self.close(out, g, r, value);
                }
                return Ok(());
            }
        }
        self.prims.clear();
        let mut s = ReadStream::from_reader(BitReader::at(r.data(), start), &mut *self.prims);
        let res = prims::serialize_leaf(&mut s, kind, &mut raw);
        *r = s.into_reader();
        let group = self.open_leaf_group(out, id, kind, label, parent, depth, start)?;
        let prims_read = std::mem::take(self.prims);
        let mut pushed = Ok(0);
        let group_value = prims::fields(kind, &prims_read, self.record, &mut |f: &prims::LeafField| {
            if pushed.is_ok() {
                pushed = self.push_leaf_field(out, id, f, label, parent, depth, group);
            }
        });
        *self.prims = prims_read;
        pushed?;
        if let Some(g) = group {
            self.close(out, g, r, group_value);
        }
        match res {
            Ok(_) => {
                self.set_slot(id, raw.0[0] as i64);
                Ok(())
            }
            Err(e) => {
                let (flabel, fparent) = match (prims::failed_part(kind, self.prims, &e), group) {
                    (Some("align"), _) => (Label::Part("align"), parent),
                    (Some(name), Some(g)) => (Label::Part(name), g),
                    _ => (label, parent),
                };
                Err(self.read_fault(out, e, fparent, flabel))
            }
        }
    }

    /// The group field of a grouped leaf (vector, quaternion, …), closed by the caller.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn open_leaf_group(
        &self,
        out: &mut Dissection,
        id: NodeId,
        kind: &Kind,
        label: Label,
        parent: u32,
        depth: u16,
        start: u64,
    ) -> Result<Option<u32>, Stop> {
        if !prims::is_group(kind) {
            return Ok(None);
        }
        let g = self.push(
            out,
            id,
            label,
            kind.name(),
            parent,
            depth,
            start,
            0,
            0,
            Value::None,
        )?;
        Ok(Some(g))
    }

    /// One field a leaf made: padding beside the leaf, a part under its group, or the
    /// leaf itself.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push_leaf_field(
        &self,
        out: &mut Dissection,
        id: NodeId,
        f: &prims::LeafField,
        label: Label,
        parent: u32,
        depth: u16,
        group: Option<u32>,
    ) -> Result<u32, Stop> {
        let (label, parent, depth) = match (f.part, group) {
            (Some("align"), _) => (Label::Part("align"), parent, depth),
            (Some(name), Some(g)) => (Label::Part(name), g, depth + 1),
            _ => (label, parent, depth),
        };
        self.push(
            out,
            id,
            label,
            f.kind,
            parent,
            depth,
            f.bit_offset,
            f.bit_len,
            f.raw,
            f.value,
        )
    }

    #[inline]
    fn set_slot(&mut self, id: NodeId, v: i64) {
        if let Some(s) = self.program.nodes.get(id as usize).and_then(|n| n.slot) {
            self.write_slot(s, v);
        }
    }

    /// Slot `s` holds `v`; a role slot is marked as read on this packet's path.
    #[inline(always)]
    fn write_slot(&mut self, s: u16, v: i64) {
        self.seen |= u32::from((s as usize) < ROLE_SLOTS) << (s & 31);
        if let Some(x) = self.slots.get_mut(s as usize) {
            *x = v;
        }
    }

    /// Everything that is not a leaf primitive: one method each.
    #[inline(never)]
    fn node_general(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let p = self.program;
        let node = &p.nodes[id as usize];
        // Built only for what records a group or reads bytes.
        let here = |r: &BitReader| Here {
            id,
            label: Label::Node(id),
            kind: node.kind.name(),
            parent,
            depth,
            at: r.bits_read(),
        };
        match &node.kind {
            Kind::Align => self.align(r, out, id, parent, depth),
            Kind::Bytes(c) => self.bytes(r, out, &here(r), *c),
            Kind::String { max } => self.string(r, out, &here(r), *max),
            Kind::Rest { body } => self.rest_of_datagram(r, out, &here(r), *body),
            Kind::LeUint(c) => self.le_uint(r, out, &here(r), *c),
            Kind::Msb(m) => self.msb(r, out, &here(r), *m),
            Kind::ByteInt { count, big, signed } => self.byte_int(r, out, &here(r), *count, *big, *signed),
            Kind::Varint { zigzag } => self.varint(r, out, &here(r), *zigzag),
            Kind::Text { len } => self.text(r, out, &here(r), *len),
            Kind::CString { max } => self.cstring(r, out, &here(r), *max),
            Kind::Derived(e) => {
                let at = r.bits_read();
                let v = self.eval_at(out, *e, parent, Label::Node(id), at)?;
                self.set_slot(id, v);
                self.push(
                    out,
                    id,
                    Label::Node(id),
                    "derived",
                    parent,
                    depth,
                    at,
                    0,
                    v as u64,
                    Value::Int(v),
                )?;
                Ok(())
            }
            Kind::Struct { body } => {
                let g = self.open(out, &here(r), Value::None)?;
                self.block(r, out, *body, g, depth + 1)?;
                self.close(out, g, r, Value::None);
                Ok(())
            }
            Kind::Array { count, body } => self.array(r, out, &here(r), *count, *body),
            Kind::List { end, body } => self.list(r, out, &here(r), *end, *body),
            Kind::RelativeList { max, body } => self.relative_list(r, out, &here(r), *max, *body),
            Kind::Inline { body } => self.block(r, out, *body, parent, depth),
            Kind::If {
                cond,
                then,
                otherwise,
            } => {
                let b = if self.eval_at(out, *cond, parent, Label::Node(id), r.bits_read())? != 0 {
                    *then
                } else {
                    *otherwise
                };
                self.block(r, out, b, parent, depth)
            }
            leaf => self.leaf(r, out, id, leaf, Label::Node(id), parent, depth),
        }
    }

    /// A group field for the node at `h`, closed by the caller.
    #[inline(always)]
    fn open(&self, out: &mut Dissection, h: &Here, value: Value) -> Result<u32, Stop> {
        self.push(out, h.id, h.label, h.kind, h.parent, h.depth, h.at, 0, 0, value)
    }

    /// `bytes name COUNT`: align, then COUNT bytes (zero-copy).
    fn bytes(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, count: Count) -> Step {
        let n = self.count(out, count, h)?;
        self.align(r, out, h.id, h.parent, h.depth)?;
        let at = r.bits_read();
        let len = usize::try_from(n).unwrap_or(usize::MAX);
        let b = r
            .read_bytes(len)
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        self.push_bytes(out, h, at, b.len())
    }

    /// The field of `len` bytes read at bit `at` (zero-copy: an offset into the datagram).
    fn push_bytes(&self, out: &mut Dissection, h: &Here, at: u64, len: usize) -> Step {
        self.push_bytes_spanning(out, h, at, len, len as u64 * 8)
    }

    /// The field whose value is `len` bytes at bit `at`, spanning `bits` on the wire
    /// (a `cstring`'s NUL is read but not shown).
    pub(super) fn push_bytes_spanning(
        &self,
        out: &mut Dissection,
        h: &Here,
        at: u64,
        len: usize,
        bits: u64,
    ) -> Step {
        let value = Value::Bytes {
            offset: (at / 8) as usize,
            len,
        };
        self.push(out, h.id, h.label, h.kind, h.parent, h.depth, at, bits, 0, value)?;
        Ok(())
    }

    /// `string name MAX`: a length in `int(0, MAX-1)`, align, the bytes.
    fn string(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, max: u32) -> Step {
        let g = self.open(out, h, Value::None)?;
        let ll = Label::Part("length");
        let top = max as i64 - 1;
        let width = crate::bits::int_width(0, top).unwrap_or(0);
        let len = self.bits(r, out, width, g, ll)?;
        self.push(
            out,
            h.id,
            ll,
            "int",
            g,
            h.depth + 1,
            h.at,
            width as u64,
            len as u64,
            Value::Int(len as i64),
        )?;
        if len as i64 > top {
            let e = BitError::new(
                ErrorKind::OutOfRange {
                    value: len as i64,
                    min: 0,
                    max: top,
                },
                h.at,
            );
            return Err(self.read_fault(out, e, g, ll));
        }
        self.align(r, out, h.id, g, h.depth + 1)?;
        let at = r.bits_read();
        let dl = Label::Part("data");
        let b = r
            .read_bytes(len as usize)
            .map_err(|e| self.read_fault(out, e, g, dl))?;
        let value = Value::Bytes {
            offset: (at / 8) as usize,
            len: b.len(),
        };
        self.push(
            out,
            h.id,
            dl,
            "bytes",
            g,
            h.depth + 1,
            at,
            b.len() as u64 * 8,
            0,
            value,
        )?;
        self.close(out, g, r, value);
        Ok(())
    }

    /// `rest name`: align, then the rest of the datagram (fragment data).
    fn rest_of_datagram(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, body: Block) -> Step {
        self.align(r, out, h.id, h.parent, h.depth)?;
        let at = r.bits_read();
        let b = r
            .read_rest()
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        let (offset, len) = ((at / 8) as usize, b.len());
        self.rest.set(Some((offset, len, 0)));
        self.push_bytes(out, h, at, len)?;
        if body.len > 0 {
            // What the bytes start with, read in place: fields under the rest field.
            let group = if self.record {
                out.fields.len() as u32 - 1
            } else {
                ROOT
            };
            let mut inner = BitReader::at(r.data(), at);
            self.block(&mut inner, out, body, group, h.depth + 1)?;
            let lead = (inner.bits_read() - at).div_ceil(8) as usize;
            self.rest.set(Some((offset, len, lead)));
        }
        Ok(())
    }

    /// `le-uint name BYTES`: 1 to 8 bytes, lowest first.
    fn le_uint(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, c: Count) -> Step {
        let n = self.count(out, c, h)?;
        if !(1..=8).contains(&n) {
            return self.fault(
                out,
                FaultKind::OutOfRange,
                self.path(out, h.parent, h.label),
                h.at,
                format!("le-uint of {n} bytes: 1 to 8 are allowed"),
            );
        }
        let mut v = 0u64;
        for i in 0..n {
            v |= (self.bits(r, out, 8, h.parent, h.label)? as u64) << (8 * i);
        }
        self.set_slot(h.id, v as i64);
        self.push(
            out,
            h.id,
            h.label,
            h.kind,
            h.parent,
            h.depth,
            h.at,
            n * 8,
            v,
            Value::UInt(v),
        )?;
        Ok(())
    }

    /// `array name COUNT { … }`.
    #[inline(always)]
    fn array(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        count: Count,
        body: Block,
    ) -> Step {
        let n = self.count(out, count, h)?;
        let g = self.open(out, h, Value::UInt(n))?;
        let max = self.program.limits.max_elements;
        if n > max {
            return self.limit(
                out,
                h.parent,
                h.label,
                h.at,
                format!("array of {n} elements (limit {max})"),
            );
        }
        for i in 0..n as u32 {
            let e = self.element(out, h.id, g, i, h.depth + 1, r.bits_read())?;
            self.block(r, out, body, e, h.depth + 2)?;
            self.close(out, e, r, Value::None);
        }
        self.close(out, g, r, Value::None);
        Ok(())
    }

    /// `list name END { first … }`: elements until END holds after an element's first
    /// field.
    #[inline(always)]
    fn list(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, end: Expr, body: Block) -> Step {
        let p = self.program;
        let g = self.open(out, h, Value::None)?;
        let ids = p.block(body);
        let mut i = 0u32;
        loop {
            if i as u64 >= p.limits.max_elements {
                let reason = format!("list longer than {} elements", p.limits.max_elements);
                return self.limit(out, h.parent, h.label, r.bits_read(), reason);
            }
            let eat = r.bits_read();
            let e = self.element(out, h.id, g, i, h.depth + 1, eat)?;
            let Some((&first, rest)) = ids.split_first() else {
                break;
            };
            self.node(r, out, first, e, h.depth + 2)?;
            let done = self.eval_at(out, end, e, Label::Index(i), r.bits_read())? != 0;
            if !done {
                for &nid in rest {
                    self.node(r, out, nid, e, h.depth + 2)?;
                }
            }
            self.close(out, e, r, Value::None);
            if done {
                break;
            }
            if r.bits_read() == eat {
                return self.limit(
                    out,
                    g,
                    Label::Index(i),
                    eat,
                    "list element consumed no bits".into(),
                );
            }
            i += 1;
        }
        self.close(out, g, r, Value::UInt(i as u64));
        Ok(())
    }

    /// `relative-list name MAX { … }`: the article's ascending object indices, ending
    /// at MAX.
    #[inline(always)]
    fn relative_list(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        max: i64,
        body: Block,
    ) -> Step {
        let limit = self.program.limits.max_elements;
        let g = self.open(out, h, Value::None)?;
        let mut previous = -1i64;
        let mut i = 0u32;
        loop {
            if i as u64 > limit {
                return self.limit(
                    out,
                    h.parent,
                    h.label,
                    r.bits_read(),
                    format!("more than {limit} objects"),
                );
            }
            let e = self.element(out, h.id, g, i, h.depth + 1, r.bits_read())?;
            let index = self.relative_index(r, out, h.id, e, h.depth + 2, previous, max)?;
            previous = index;
            if index == max {
                // The sentinel is not an element: fold it into the list as `end`.
                if let Some(f) = out.fields.get_mut(e as usize) {
                    f.label = Label::Part("end");
                    f.kind = "sentinel";
                }
                self.close(out, e, r, Value::Int(index));
                break;
            }
            self.block(r, out, body, e, h.depth + 2)?;
            self.close(out, e, r, Value::None);
            i += 1;
        }
        self.close(out, g, r, Value::UInt(i as u64));
        Ok(())
    }

    /// The relative index ladder: flags and one int, grouped as `index`.
    #[allow(clippy::too_many_arguments)]
    fn relative_index(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
        previous: i64,
        max: i64,
    ) -> Result<i64, Stop> {
        const RUNGS: [&str; 5] = ["upto_5", "upto_13", "upto_29", "upto_61", "upto_125"];
        let at = r.bits_read();
        let g = self.push(
            out,
            id,
            Label::Part("index"),
            "relative-index",
            parent,
            depth,
            at,
            0,
            0,
            Value::None,
        )?;
        let diff = if self.flag(r, out, id, g, depth + 1, "plus_one")? {
            1
        } else {
            let mut range = (126, max + 1);
            for (k, rung) in RELATIVE_INDEX_LADDER.into_iter().enumerate() {
                if self.flag(r, out, id, g, depth + 1, RUNGS[k])? {
                    range = rung;
                    break;
                }
            }
            let (lo, hi) = range;
            let dat = r.bits_read();
            let dl = Label::Part("difference");
            let width = crate::bits::int_width(lo, hi).unwrap_or(0);
            let raw = self.bits(r, out, width, g, dl)?;
            let d = lo + raw as i64;
            self.push(
                out,
                id,
                dl,
                "int",
                g,
                depth + 1,
                dat,
                width as u64,
                raw as u64,
                Value::Int(d),
            )?;
            if d > hi {
                let e = BitError::new(
                    ErrorKind::OutOfRange {
                        value: d,
                        min: lo,
                        max: hi,
                    },
                    dat,
                );
                return Err(self.read_fault(out, e, g, dl));
            }
            d
        };
        let index = previous + diff;
        self.close(out, g, r, Value::Int(index));
        if index > max {
            let e = BitError::new(
                ErrorKind::OutOfRange {
                    value: index,
                    min: previous + 1,
                    max,
                },
                at,
            );
            return Err(self.read_fault(out, e, parent, Label::Part("index")));
        }
        Ok(index)
    }

    #[inline(always)]
    fn flag(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
        name: &'static str,
    ) -> Result<bool, Stop> {
        if !self.record {
            let n = self.count.get() + 1;
            if n <= self.program.limits.max_fields
                && let Ok(v) = r.read_bits(1)
            {
                self.count.set(n);
                return Ok(v != 0);
            }
        }
        let at = r.bits_read();
        let v = self.bits(r, out, 1, parent, Label::Part(name))?;
        self.push(
            out,
            id,
            Label::Part(name),
            "bool",
            parent,
            depth,
            at,
            1,
            v as u64,
            Value::Bool(v != 0),
        )?;
        Ok(v != 0)
    }
}

pub fn label_name(p: &Program, l: Label) -> &str {
    match l {
        Label::Node(n) => p.nodes.get(n as usize).map(|n| n.name.as_str()).unwrap_or("?"),
        Label::Index(_) => "",
        Label::Part(s) => s,
    }
}

/// Labels from field `i` up to the root.
fn ancestors(d: &Dissection, i: u32) -> impl Iterator<Item = Label> + '_ {
    let mut at = i;
    std::iter::from_fn(move || {
        let f = d.fields.get(at as usize)?;
        at = f.parent;
        Some(f.label)
    })
}

/// Joins labels given leaf first: `objects[3].position.x`.
fn render_path(p: &Program, leaf_first: &[Label]) -> String {
    let mut s = String::new();
    for l in leaf_first.iter().rev() {
        match l {
            Label::Index(i) => s.push_str(&format!("[{i}]")),
            other => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(label_name(p, *other));
            }
        }
    }
    s
}

/// The path of field `i`, e.g. `objects[3].position.x`.
pub fn path_of(p: &Program, d: &Dissection, i: usize) -> String {
    let labels: Vec<Label> = ancestors(d, i as u32).collect();
    render_path(p, &labels)
}
