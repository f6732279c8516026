//! Where the bits go: a per-field bandwidth profile of the capture (`analyze --bits`).
//! Every captured bit lands in exactly one row — a field path of a packet type (array
//! elements added up by path), or an overhead row: link/IP/UDP headers, the protocol
//! header, fragment headers and data, alignment, check words, trailing bytes, a malformed
//! remainder, datagrams that failed the checksum, other traffic — so the rows add up to
//! the captured bytes × 8. The rows are read from the field tree the engine records.

pub mod fast;
#[cfg(feature = "export")]
pub(crate) mod parquet;
pub(crate) mod report;
mod slots;
pub(crate) mod values;

use gpcap_dissect::program::{Kind as NodeKind, Program, Side};
use gpcap_dissect::{Dissection, FaultKind, Label, Value};
use gpcap_engine::{Flow, Kind, Needs, PacketEvent, Sink, SinkError, Status};
use hashbrown::HashMap;
pub use report::{BandwidthReport, Row, ValuesSeen};
use std::sync::Arc;
use values::{FloatStats, IntStats, Seen};

mod merge;
mod paths;
mod previous;
#[cfg(test)]
mod tests;
mod tree;
use paths::*;
use previous::*;
use tree::*;

/// Previous values remembered for deltas, over every flow, type and field (8 bytes
/// each).
pub const MAX_PREVIOUS: usize = 1 << 21;

/// (flow, packet type) pairs whose previous packet is kept; the values of later ones
/// count as `not_tracked`.
pub const MAX_STATES: usize = 1 << 16;

/// Flows whose previous packets are found by index, not hashed.
const DENSE_FLOWS: usize = 1 << 16;

/// Packet types found by index.
const DENSE_TYPES: usize = 1 << 10;

/// No previous packet kept yet.
const NO_STATE: u32 = u32::MAX;

/// Entries of the part-path cache.
const PART_CACHE: usize = 256;

/// No packet type, message type or parent path.
pub const NONE: u32 = u32::MAX;

/// What a row's bits are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Field,
    Header,
    MessageHeader,
    FragmentHeader,
    Padding,
    Check,
    FinalByte,
    Trailing,
    Malformed,
    FragmentData,
    ChecksumFailed,
    ChecksumUnverified,
    Truncated,
    NotDissected,
    LinkHeaders,
    OtherTraffic,
}

impl Category {
    /// The word used in every output.
    pub fn code(self) -> &'static str {
        match self {
            Category::Field => "field",
            Category::Header => "header",
            Category::MessageHeader => "message_header",
            Category::FragmentHeader => "fragment_header",
            Category::Padding => "padding",
            Category::Check => "check",
            Category::FinalByte => "final_byte",
            Category::Trailing => "trailing_bytes",
            Category::Malformed => "malformed_remainder",
            Category::FragmentData => "fragment_data",
            Category::ChecksumFailed => "checksum_failed",
            Category::ChecksumUnverified => "checksum_unverified",
            Category::Truncated => "truncated",
            Category::NotDissected => "not_dissected",
            Category::LinkHeaders => "link_headers",
            Category::OtherTraffic => "other_traffic",
        }
    }

    /// Whether the row is a field whose values are estimated.
    pub fn has_values(self) -> bool {
        matches!(
            self,
            Category::Field | Category::Header | Category::MessageHeader | Category::FragmentHeader
        )
    }
}

/// A row: direction, packet type, message type, path, what the bits are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// 0 unknown, 1 from the client, 2 from the server (the type's `from=`).
    pub dir: u8,
    pub type_id: u32,
    pub msg_type: u32,
    pub path: u32,
    pub cat: Category,
}

/// One row's counters. Laid out as read per field (`repr(C)`): the counters every
/// occurrence adds to, then the integer values' figures, so that a field touches a line
/// or three of its row, not six (rows did not fit the first-level cache).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Acc {
    pub bits: u64,
    pub occurrences: u64,
    /// Packets (or frames, for rows outside a packet type) the row appears in.
    pub packets: u64,
    /// The widest occurrence, in bits.
    pub declared: u64,
    /// The last packet counted in `packets`.
    last_packet: u64,
    /// The field's kind as the tree names it, and a compressed float's step.
    pub kind: &'static str,
    /// Its index among the rows of its packet type (where a flow's previous packet of
    /// the type keeps its values).
    local: u32,
    pub ints: Option<IntStats>,
    pub key: Key,
    pub step: f64,
    pub floats: Option<FloatStats>,
    /// Floats quantized at `resolution` (`--what-if`, or a compressed float's own).
    pub quantized: Option<IntStats>,
    pub resolution: Option<(f64, &'static str)>,
    /// Floats whose steps at `resolution` pass ±2^62: in no figure, and the row's
    /// figures are withheld (they would rest on the other values only).
    pub past_range: u64,
}

impl Acc {
    /// The integer figures a value of this row goes to: floats quantized at a
    /// resolution, or integers.
    fn values_mut(&mut self, quantized: bool) -> Option<&mut IntStats> {
        if quantized {
            self.quantized.as_mut()
        } else {
            self.ints.as_mut()
        }
    }
}

/// Options of the profile.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `PATH=RES`: float fields read at another resolution (path as in the rows, with or
    /// without the packet type in front).
    pub what_if: Vec<(String, f64)>,
    /// Counts every datagram from its field tree, even where the plan could say: the
    /// reference the plan-counted profile is held to (tests).
    pub trees: bool,
}

/// The profile being counted: a sink of events that carry field trees.
#[derive(Debug, Clone)]
pub struct Bandwidth {
    program: Option<Arc<Program>>,
    opts: Options,
    places: Vec<Place>,
    /// Path names: (parent path, name) → id, and each id's full path.
    path_ids: HashMap<(u32, u32), u32>,
    /// Each node's name, and the part names met so far (`align`, `length`…).
    names: Vec<&'static str>,
    /// Each node's last (parent path, path), and each path's last (key, row).
    node_paths: Vec<(u32, u32)>,
    /// By field index: (parent path, label, path) of the last packet's field there.
    field_cache: Vec<(u32, Label, u32)>,
    path_rows: Vec<(Key, u32)>,
    parts: Vec<&'static str>,
    /// Recent (parent path, part name's address and length) → path: parts (a vector's
    /// axes, an index's rungs) move about in the tree from one packet to the next.
    part_cache: Vec<(u32, usize, usize, u32)>,
    pub paths: Vec<String>,
    /// Each path's id by its text.
    text_ids: HashMap<String, u32>,
    index: HashMap<Key, u32>,
    pub rows: Vec<Acc>,
    /// The previous packet's values, by (the engine's flow index, packet type): an
    /// index of `states`, where a packet's are taken out and put back without moving
    /// the map (re-inserting them was a twentieth of `--bits`). Shards keep their own:
    /// their flows are disjoint.
    state_ids: HashMap<(u32, u32), u32>,
    states: Vec<Previous>,
    /// The same index by flow × packet type, for flows below [`DENSE_FLOWS`] and the
    /// definition's types: two loads, not a hash, per packet ([`NO_STATE`]: none yet).
    flow_states: Vec<u32>,
    /// By packet type of the definition: its direction, and its packets so far (folded
    /// into `type_packets` when the profile is read or merged).
    type_dirs: Vec<u8>,
    dense_packets: Vec<u64>,
    /// Values `previous` holds, all flows together, and the most it held.
    stored: usize,
    peak_stored: usize,
    /// Rows per packet type so far.
    type_rows: HashMap<u32, u32>,
    pub captured_bits: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    /// Packets per (direction, type): the divisor of mean bits per packet.
    pub type_packets: HashMap<(u8, u32), u64>,
    /// Frames (the divisor for rows outside a packet type).
    pub frames: u64,
    /// Fragment data bits received, and bits of reassembled packets.
    frag_data: u64,
    reassembled: u64,
    /// Game frames and IP pieces, and game payloads: their difference is the headers.
    game_frames: u64,
    game_payload: u64,
    /// Game datagrams and IP pieces: the headers row's occurrences.
    header_count: u64,
    events: u64,
    // Scratch reused per packet.
    field_paths: Vec<u32>,
    children: Vec<u64>,
    /// Occurrences of each row in this packet, and the rows it touched.
    ordinals: Vec<u32>,
    touched: Vec<u32>,
    /// Counting from the plan, the engine recording no trees ([`fast::eligible`]).
    /// Boxed: taken out and put back per datagram, which moved the whole state (a
    /// kilobyte) twice per datagram.
    pub fast: Option<Box<fast::Fast>>,
}

impl Bandwidth {
    pub fn new(program: Option<Arc<Program>>, opts: Options) -> Self {
        let places = program.as_deref().map(places).unwrap_or_default();
        // Names live as long as the program: interned once, at the start.
        let names: Vec<&'static str> = program
            .as_deref()
            .map(|p| p.nodes.iter().map(|n| intern(&n.name)).collect())
            .unwrap_or_default();
        let mut b = Bandwidth {
            program,
            opts,
            places,
            path_ids: HashMap::new(),
            node_paths: vec![(NONE, NONE); names.len()],
            names,
            path_rows: Vec::new(),
            field_cache: Vec::new(),
            parts: Vec::new(),
            part_cache: vec![(NONE, 0, 0, 0); PART_CACHE],
            paths: Vec::new(),
            text_ids: HashMap::new(),
            index: HashMap::new(),
            rows: Vec::new(),
            state_ids: HashMap::new(),
            states: Vec::new(),
            flow_states: Vec::new(),
            type_dirs: Vec::new(),
            dense_packets: Vec::new(),
            stored: 0,
            peak_stored: 0,
            type_rows: HashMap::new(),
            captured_bits: 0,
            first_ns: None,
            last_ns: None,
            type_packets: HashMap::new(),
            frames: 0,
            frag_data: 0,
            reassembled: 0,
            game_frames: 0,
            game_payload: 0,
            header_count: 0,
            events: 0,
            field_paths: Vec::new(),
            children: Vec::new(),
            ordinals: Vec::new(),
            touched: Vec::new(),
            fast: None,
        };
        b.path_by_text("");
        let types = b
            .program
            .as_deref()
            .map_or(0, |p| p.by_type.len().min(DENSE_TYPES));
        b.type_dirs = (0..types as u32).map(|t| b.direction(Some(t))).collect();
        b.dense_packets = vec![0; types];
        b
    }

    /// A profile counted from the plan ([`fast`]): its engine must record no trees.
    pub fn planned(program: Arc<Program>, opts: Options) -> Self {
        let mut b = Bandwidth::new(Some(program.clone()), opts);
        b.fast = Some(Box::new(fast::Fast::new(program)));
        b
    }

    /// A profile for `cfg` and whether its engine records trees (false: counted from
    /// the plan).
    pub fn for_config(cfg: &gpcap_engine::Config, opts: Options, plan: bool) -> (Self, bool) {
        match &cfg.program {
            Some(p) if plan && fast::eligible(cfg) => (Bandwidth::planned(p.clone(), opts), false),
            p => (Bandwidth::new(p.clone(), opts), true),
        }
    }

    fn row(&mut self, key: Key) -> usize {
        // The row a path last went to, which it mostly goes to again.
        if let Some(&(k, i)) = self.path_rows.get(key.path as usize)
            && k == key
        {
            return i as usize;
        }
        if let Some(&i) = self.index.get(&key) {
            self.remember_row(key, i);
            return i as usize;
        }
        let resolution = self.resolution_for(&key);
        let i = self.rows.len();
        let local = self.type_rows.entry(key.type_id).or_default();
        let at = *local;
        *local += 1;
        self.rows.push(Acc {
            local: at,
            key,
            bits: 0,
            occurrences: 0,
            packets: 0,
            declared: 0,
            ints: None,
            floats: None,
            quantized: None,
            resolution,
            past_range: 0,
            kind: "",
            step: 0.0,
            last_packet: 0,
        });
        self.index.insert(key, i as u32);
        self.remember_row(key, i as u32);
        i
    }

    fn remember_row(&mut self, key: Key, i: u32) {
        let at = key.path as usize;
        if self.path_rows.len() <= at {
            self.path_rows.resize(at + 1, (key, u32::MAX));
        }
        self.path_rows[at] = (key, i);
    }

    /// The `--what-if` resolution of a row, by its path with or without the type.
    fn resolution_for(&self, key: &Key) -> Option<(f64, &'static str)> {
        let path = self.paths.get(key.path as usize)?;
        let ty = self.type_name(key.type_id);
        self.opts
            .what_if
            .iter()
            .find(|(p, _)| {
                p == path
                    || ty.is_some_and(|t| p.strip_prefix(t).and_then(|r| r.strip_prefix('.')) == Some(path))
            })
            .map(|(_, r)| (*r, "what-if"))
    }

    pub fn type_name(&self, type_id: u32) -> Option<&str> {
        self.program.as_deref()?.type_name(type_id)
    }

    pub fn message_name(&self, type_id: u32) -> Option<&str> {
        self.program.as_deref()?.packet(type_id).map(|d| d.name.as_str())
    }

    /// Adds `bits` to a row, once more, in packet `packet`.
    fn add(&mut self, key: Key, bits: u64) -> usize {
        let i = self.row(key);
        self.add_to(i, bits);
        i
    }

    /// [`Self::add`] to row `i`.
    #[inline]
    fn add_to(&mut self, i: usize, bits: u64) {
        let r = &mut self.rows[i];
        r.bits += bits;
        r.occurrences += 1;
        r.declared = r.declared.max(bits);
        self.count_packet(i);
    }

    /// Row `i` appears in the packet being counted (once, however often).
    #[inline]
    fn count_packet(&mut self, i: usize) {
        let seq = self.events;
        if let Some(r) = self.rows.get_mut(i)
            && r.last_packet != seq
        {
            r.last_packet = seq;
            r.packets += 1;
        }
    }

    /// A row outside the field tree.
    fn overhead(&mut self, dir: u8, type_id: u32, name: &'static str, cat: Category, bits: u64) {
        self.overhead_row(dir, type_id, name, cat, bits);
    }

    /// [`Self::overhead`], saying which row took the bits.
    fn overhead_row(
        &mut self,
        dir: u8,
        type_id: u32,
        name: &'static str,
        cat: Category,
        bits: u64,
    ) -> Option<usize> {
        if bits == 0 {
            return None;
        }
        let path = self.named(name);
        Some(self.add(
            Key {
                dir,
                type_id,
                msg_type: NONE,
                path,
                cat,
            },
            bits,
        ))
    }

    fn direction(&self, type_id: Option<u32>) -> u8 {
        let from = type_id.and_then(|t| self.program.as_deref()?.packet(t)?.from);
        match from {
            Some(Side::Client) => 1,
            Some(Side::Server) => 2,
            None => 0,
        }
    }
}

impl Sink for Bandwidth {
    /// The profile counts the bits of every field: from the field tree, unless it counts
    /// them from the plan ([`fast`]), which reads the datagram itself.
    fn needs(&self) -> Needs {
        Needs {
            fields: self.fast.is_none(),
            layers: None,
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.take(e);
        Ok(Flow::Continue)
    }
}
