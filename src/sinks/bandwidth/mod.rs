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

use crate::dissect::program::{Kind as NodeKind, Program, Side};
use crate::dissect::{Dissection, FaultKind, Label, Value};
use crate::engine::{Flow, Kind, Needs, PacketEvent, Sink, Status};
use hashbrown::HashMap;
pub use report::{BandwidthReport, Row};
use std::sync::Arc;
use values::{FloatStats, IntStats, Seen};

/// Previous values remembered for deltas, over every flow, type and field (16 bytes
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

/// Where the profile stands, per node: which block a definition node belongs to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Body,
    Header,
    Fragment,
    MessageHeader,
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

/// A packet being counted: its row keys, its flow's previous packet of the type, the
/// bits its fields covered.
struct Counting {
    type_id: u32,
    dir: u8,
    total: u64,
    data_at: Option<u64>,
    /// Where the flow and type's previous packet is kept (None: past the cap).
    state: Option<u32>,
    keep: bool,
    prev: Previous,
    covered: u64,
}

/// One flow and type's previous packet: each row's values by occurrence, in one
/// contiguous array (a row's range grows by moving it to the end, the holes left behind
/// compacted away): a `Vec` per row was a pointer to chase, and a line to miss, per
/// field of every packet.
#[derive(Debug, Clone, Default)]
struct Previous {
    /// By row (its index among its type's): (start in `values`, values, room).
    rows: Vec<(u32, u32, u32)>,
    values: Vec<i128>,
    /// Room the rows hold in `values` (the rest is holes).
    room: usize,
}

impl Previous {
    /// Asks for every value at once, before the packet's fields read them one by one:
    /// a flow's values were last touched a few hundred packets ago, and waiting for
    /// them field after field was a sixth of `--bits` (1 GB, 128 clients).
    #[inline]
    fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            // The values kept, not the room after them (a big packet's room stays).
            for &(start, len, _) in &self.rows {
                let Some(row) = self.values.get(start as usize..(start + len) as usize) else {
                    continue;
                };
                for line in row.chunks(4) {
                    // SAFETY: a prefetch is a hint; it reads nothing and faults on nothing.
                    unsafe {
                        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                        _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
                    }
                }
            }
        }
    }

    /// Row `row`'s value `ord` (None: not kept).
    #[inline(always)]
    fn get_mut(&mut self, row: usize, ord: u32) -> Option<&mut i128> {
        let &(start, len, _) = self.rows.get(row)?;
        if ord >= len {
            return None;
        }
        self.values.get_mut((start + ord) as usize)
    }

    /// Keeps `v` after row `row`'s values (a third of a scene's values: a packet with
    /// more objects than its flow's previous one).
    #[inline(always)]
    fn push(&mut self, row: usize, v: i128) {
        let (start, len) = match self.rows.get(row) {
            Some(&(start, len, room)) if len < room => (start, len),
            _ => self.make_room(row),
        };
        if let Some(x) = self.values.get_mut((start + len) as usize) {
            *x = v;
            self.rows[row].1 += 1;
        }
    }

    /// Room for one more value of row `row` (a row not met yet, or full): its (start,
    /// values).
    #[cold]
    fn make_room(&mut self, row: usize) -> (u32, u32) {
        if self.rows.len() <= row {
            self.rows.resize(row + 1, (0, 0, 0));
        }
        let (_, len, room) = self.rows[row];
        if len == room {
            self.grow(row);
        }
        let (start, len, _) = self.rows[row];
        (start, len)
    }

    /// Twice the room for row `row`, at the end (holes compacted first when they are
    /// most of the array).
    fn grow(&mut self, row: usize) {
        if self.values.len() > 2 * self.room + 64 {
            self.compact();
        }
        let (start, len, room) = self.rows[row];
        let more = (room * 2).max(4);
        let at = self.values.len();
        self.values.resize(at + more as usize, 0);
        self.values
            .copy_within(start as usize..(start + len) as usize, at);
        self.rows[row] = (at as u32, len, more);
        self.room += (more - room) as usize;
    }

    /// The rows' ranges moved together, holes gone.
    fn compact(&mut self) {
        let mut values = Vec::with_capacity(self.room);
        for r in &mut self.rows {
            let (start, _, room) = *r;
            let at = values.len() as u32;
            values.extend_from_slice(&self.values[start as usize..(start + room) as usize]);
            r.0 = at;
        }
        self.values = values;
    }
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
    pub fn for_config(cfg: &crate::engine::Config, opts: Options, plan: bool) -> (Self, bool) {
        match &cfg.program {
            Some(p) if plan && fast::eligible(cfg) => (Bandwidth::planned(p.clone(), opts), false),
            p => (Bandwidth::new(p.clone(), opts), true),
        }
    }

    /// Interns path `name` under `parent`: a node's (by id), or a part's.
    fn path_id(&mut self, parent: u32, name: &'static str, node: u32) -> u32 {
        let code = if node != NONE {
            node
        } else {
            let same = |p: &&str| std::ptr::eq(p.as_ptr(), name.as_ptr()) && p.len() == name.len();
            let found = self.parts.iter().position(same);
            let i = match found.or_else(|| self.parts.iter().position(|p| *p == name)) {
                Some(i) => i,
                None => {
                    self.parts.push(name);
                    self.parts.len() - 1
                }
            };
            NONE - 1 - i as u32
        };
        if let Some(&id) = self.path_ids.get(&(parent, code)) {
            return id;
        }
        let text = match self.paths.get(parent as usize).filter(|p| !p.is_empty()) {
            Some(p) => format!("{p}.{name}"),
            None => name.to_string(),
        };
        // One id per text: two nodes of one name (`ack` of two packet types, the two
        // branches of an `if`) are one path, in every shard alike.
        let id = self.path_by_text(&text);
        self.path_ids.insert((parent, code), id);
        id
    }

    /// [`Self::path_id`] of a part, through [`Self::part_cache`].
    fn part_path(&mut self, parent: u32, name: &'static str) -> u32 {
        let (at, len) = (name.as_ptr() as usize, name.len());
        let h = (u64::from(parent) << 32 ^ at as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h >> 56) as usize % PART_CACHE;
        if let Some(&(p, a, l, pid)) = self.part_cache.get(i)
            && (p, a, l) == (parent, at, len)
        {
            return pid;
        }
        let pid = self.path_id(parent, name, NONE);
        if let Some(c) = self.part_cache.get_mut(i) {
            *c = (parent, at, len, pid);
        }
        pid
    }

    /// A named path outside the field tree (`(link/IP/UDP headers)`).
    fn named(&mut self, name: &'static str) -> u32 {
        self.path_id(0, name, NONE)
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

    /// The bits of a game datagram (or reassembled packet) field by field.
    fn packet_bits(&mut self, e: &PacketEvent<'_>, d: &Dissection) {
        let mut at = self.begin_packet(e);
        let mut paths = std::mem::take(&mut self.field_paths);
        paths.clear();
        let mut children = std::mem::take(&mut self.children);
        children.clear();
        children.resize(d.fields.len(), 0);
        for f in &d.fields {
            if let Some(c) = children.get_mut(f.parent as usize) {
                *c += f.bit_len;
            }
        }
        for (i, f) in d.fields.iter().enumerate() {
            let parent = paths.get(f.parent as usize).copied().unwrap_or(0);
            // Packets of a type mostly repeat their tree: the field at the same index
            // under the same parent path has the same path as last time.
            let pid = match self.field_cache.get(i) {
                Some(&(p, l, pid)) if p == parent && l == f.label => pid,
                _ => {
                    let pid = self.label_path(parent, f.label);
                    if self.field_cache.len() <= i {
                        self.field_cache.resize(i + 1, (NONE, Label::Index(0), 0));
                    }
                    self.field_cache[i] = (parent, f.label, pid);
                    pid
                }
            };
            paths.push(pid);
            if at.data_at.is_some_and(|a| f.bit_offset >= a) {
                continue;
            }
            // Bits of the field its children do not cover (all of a leaf's).
            let own = f.bit_len.saturating_sub(children.get(i).copied().unwrap_or(0));
            let msg_type = message_of(&d.messages, f.bit_offset);
            let value = (f.bit_len == own).then_some((f.raw, f.value));
            self.count_field(&mut at, pid, msg_type, f.node, f.kind, own, value);
        }
        self.field_paths = paths;
        self.children = children;
        self.end_packet_bits(at, d.fault.as_ref().map(|f| f.kind));
    }

    /// The path of a field labelled `label` under path `parent`.
    fn label_path(&mut self, parent: u32, label: Label) -> u32 {
        match label {
            Label::Index(_) => parent,
            Label::Node(id) => match self.node_paths.get(id as usize) {
                // A node is mostly met under one parent path: no lookup then.
                Some(&(p, pid)) if p == parent => pid,
                _ => {
                    let name = self.node_name(id);
                    let pid = self.path_id(parent, name, id);
                    if let Some(c) = self.node_paths.get_mut(id as usize) {
                        *c = (parent, pid);
                    }
                    pid
                }
            },
            Label::Part(s) => self.part_path(parent, s),
        }
    }

    /// Where a packet's counting starts: its type and direction counted, its flow's
    /// previous packet of the type taken out.
    fn begin_packet(&mut self, e: &PacketEvent<'_>) -> Counting {
        let type_id = e.packet_type.unwrap_or(NONE);
        let dir = match (
            self.type_dirs.get(type_id as usize),
            self.dense_packets.get_mut(type_id as usize),
        ) {
            (Some(&dir), Some(n)) => {
                *n += 1;
                dir
            }
            _ => {
                let dir = self.direction(e.packet_type);
                *self.type_packets.entry((dir, type_id)).or_default() += 1;
                dir
            }
        };
        let total = e.payload.len() as u64 * 8;
        // A fragment's data (from its first byte) belongs to the packet it is put back into.
        let data_at = match (e.kind, e.fragment) {
            (Kind::Game, Some(f)) => Some((f.data_offset as u64 * 8).min(total)),
            _ => None,
        };
        let state = e.flow_index.and_then(|f| self.state_of(f, type_id));
        let prev = state
            .and_then(|i| self.states.get_mut(i as usize))
            .map(std::mem::take)
            .unwrap_or_default();
        prev.prefetch();
        Counting {
            type_id,
            dir,
            total,
            data_at,
            state,
            keep: state.is_some(),
            prev,
            covered: 0,
        }
    }

    /// Where flow `flow`'s previous packet of `type_id` is kept: past the cap of kept
    /// states, a new flow and type gets none (and no deltas).
    #[inline]
    fn state_of(&mut self, flow: u32, type_id: u32) -> Option<u32> {
        let types = self.type_dirs.len();
        let dense = (flow as usize) < DENSE_FLOWS && (type_id as usize) < types;
        let at = flow as usize * types + type_id as usize;
        let found = if dense {
            if self.flow_states.len() <= at {
                self.flow_states.resize((flow as usize + 1) * types, NO_STATE);
            }
            self.flow_states[at]
        } else {
            self.state_ids.get(&(flow, type_id)).copied().unwrap_or(NO_STATE)
        };
        if found != NO_STATE {
            return Some(found);
        }
        if self.states.len() >= MAX_STATES {
            return None;
        }
        let i = self.states.len() as u32;
        self.states.push(Previous::default());
        if dense {
            self.flow_states[at] = i;
        } else {
            self.state_ids.insert((flow, type_id), i);
        }
        Some(i)
    }

    /// The packets counted by index into `type_packets`.
    fn fold_types(&mut self) {
        for (t, n) in self.dense_packets.iter_mut().enumerate() {
            if *n > 0 {
                let dir = self.type_dirs.get(t).copied().unwrap_or(0);
                *self.type_packets.entry((dir, t as u32)).or_default() += std::mem::take(n);
            }
        }
    }

    /// One field's own bits into its row, and its value when the bits are all its own.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn count_field(
        &mut self,
        at: &mut Counting,
        pid: u32,
        msg_type: u32,
        node: u32,
        kind: &'static str,
        own: u64,
        value: Option<(u64, Value)>,
    ) {
        if own == 0 {
            return;
        }
        let cat = self.category(kind, node);
        let row = self.row(Key {
            dir: at.dir,
            type_id: at.type_id,
            msg_type,
            path: pid,
            cat,
        });
        self.count_row(at, row, cat, node, kind, own, value);
    }

    /// [`Self::count_field`] into row `row` of category `cat`, known.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn count_row(
        &mut self,
        at: &mut Counting,
        row: usize,
        cat: Category,
        node: u32,
        kind: &'static str,
        own: u64,
        value: Option<(u64, Value)>,
    ) {
        self.add_to(row, own);
        at.covered += own;
        if cat.has_values()
            && let Some((raw, v)) = value
            && let Some(value) = self.values(row, node, kind, raw, v)
        {
            self.delta(&mut at.prev, at.keep, row, value);
        }
    }

    /// The end of a packet's counting: its previous values kept, what no field covered
    /// counted as what it is.
    fn end_packet_bits(&mut self, mut at: Counting, fault: Option<FaultKind>) {
        self.end_packet(&mut at.prev);
        if let Some(slot) = at.state.and_then(|i| self.states.get_mut(i as usize)) {
            *slot = at.prev;
        }
        let (dir, type_id, total) = (at.dir, at.type_id, at.total);
        let data = at.data_at.map_or(0, |a| total - a);
        self.frag_data += data;
        let rest = total.saturating_sub(at.covered + data);
        let cat = match fault {
            Some(FaultKind::TrailingBytes) => Category::Trailing,
            Some(_) => Category::Malformed,
            None if rest < 8 => Category::FinalByte,
            None => Category::Trailing,
        };
        let name = match cat {
            Category::Trailing => "(trailing bytes)",
            Category::Malformed => "(malformed remainder)",
            _ => "(unused bits of the last byte)",
        };
        self.overhead(dir, type_id, name, cat, rest);
    }

    fn node_name(&self, id: u32) -> &'static str {
        self.names.get(id as usize).copied().unwrap_or("?")
    }

    fn category(&self, kind: &str, node: u32) -> Category {
        match kind {
            "align" => return Category::Padding,
            "check" => return Category::Check,
            _ => {}
        }
        match self.places.get(node as usize) {
            Some(Place::Header) => Category::Header,
            Some(Place::Fragment) => Category::FragmentHeader,
            Some(Place::MessageHeader) => Category::MessageHeader,
            _ => Category::Field,
        }
    }

    /// The value estimates of one occurrence.
    fn values(
        &mut self,
        row: usize,
        node: u32,
        kind: &'static str,
        raw: u64,
        v: Value,
    ) -> Option<(i128, bool)> {
        if self.rows[row].kind.is_empty() {
            let step = match self
                .program
                .as_deref()
                .and_then(|p| p.nodes.get(node as usize))
                .map(|n| &n.kind)
            {
                Some(NodeKind::CompressedFloat(cf) | NodeKind::CompressedVector(cf)) if cf.max_int > 0 => {
                    f64::from(cf.max - cf.min) / f64::from(cf.max_int)
                }
                _ => 0.0,
            };
            self.rows[row].kind = kind;
            self.rows[row].step = step;
        }
        let int = match v {
            Value::Int(i) => Some(i128::from(i)),
            Value::UInt(u) => Some(i128::from(u)),
            Value::Bool(b) => Some(i128::from(b)),
            Value::Float(_) if kind == "compressed-float" => Some(i128::from(raw)),
            _ => None,
        };
        let float = match v {
            Value::Float(f) => Some(f64::from(f)),
            Value::Double(f) => Some(f),
            _ => None,
        };
        let r = &mut self.rows[row];
        if let Some(f) = float {
            r.floats.get_or_insert_with(Default::default).add(f);
        }
        let q = match (float, r.resolution) {
            (Some(f), Some((res, _))) if f.is_finite() && res > 0.0 => {
                let q = (f / res).round();
                if q.abs() >= 4.6e18 {
                    // Not read at the declared resolution instead: said, not replaced.
                    r.past_range += 1;
                    return None;
                }
                Some(q as i128)
            }
            _ => None,
        };
        match (q, int) {
            (Some(q), _) => {
                r.quantized.get_or_insert_with(Default::default).add(q);
                Some((q, true))
            }
            (None, Some(i)) => {
                r.ints.get_or_insert_with(Default::default).add(i);
                Some((i, false))
            }
            _ => None,
        }
    }

    /// The delta of a value against the same occurrence of its row in the previous
    /// packet of the flow and type, which it then replaces.
    fn delta(
        &mut self,
        prev: &mut Previous,
        tracked_flow: bool,
        row: usize,
        (value, quantized): (i128, bool),
    ) {
        // Rows of one packet type, by their index within it.
        let local = self.rows[row].local;
        let ord = self.ordinal(local);
        if self.rows[row].values_mut(quantized).is_none() {
            return;
        }
        let seen = self.previous(prev, tracked_flow, local, ord, value);
        if let Some(s) = self.rows[row].values_mut(quantized) {
            s.delta.see(seen);
        }
    }

    /// The occurrence in this packet of the row at `local` among its type's, from 0.
    #[inline(always)]
    fn ordinal(&mut self, local: u32) -> u32 {
        let local = local as usize;
        if self.ordinals.len() <= local {
            self.ordinals.resize(local + 1, 0);
        }
        let ord = self.ordinals[local];
        if ord == 0 {
            self.touched.push(local as u32);
        }
        self.ordinals[local] += 1;
        ord
    }

    /// `value`, occurrence `ord` of the row at `local`, against the same occurrence in
    /// the previous packet `prev`, which it replaces (or joins, while there is room).
    #[inline(always)]
    fn previous(
        &mut self,
        prev: &mut Previous,
        tracked_flow: bool,
        local: u32,
        ord: u32,
        value: i128,
    ) -> Seen {
        if let Some(p) = prev.get_mut(local as usize, ord) {
            let d = value - *p;
            *p = value;
            Seen::Delta(d)
        } else if tracked_flow && self.stored < MAX_PREVIOUS {
            prev.push(local as usize, value);
            self.stored += 1;
            self.peak_stored = self.peak_stored.max(self.stored);
            Seen::Kept
        } else {
            Seen::NotTracked
        }
    }

    /// Forgets the occurrences the packet did not have: the next packet compares with
    /// this one only.
    fn end_packet(&mut self, prev: &mut Previous) {
        for (row, r) in prev.rows.iter_mut().enumerate() {
            let keep = self.ordinals.get(row).copied().unwrap_or(0);
            if r.1 > keep {
                self.stored -= (r.1 - keep) as usize;
                r.1 = keep;
            }
        }
        for &row in &self.touched {
            if let Some(o) = self.ordinals.get_mut(row as usize) {
                *o = 0;
            }
        }
        self.touched.clear();
    }

    /// Folds in a shard of the same capture (disjoint flows; frames counted once).
    pub fn merge(&mut self, mut o: Bandwidth) {
        self.fold_types();
        o.fold_types();
        self.fold_fast();
        o.fold_fast();
        for r in o.rows {
            let path = o.paths.get(r.key.path as usize).cloned().unwrap_or_default();
            let pid = self.path_by_text(&path);
            let key = Key { path: pid, ..r.key };
            let i = self.row(key);
            let m = &mut self.rows[i];
            if m.kind.is_empty() {
                // A row the other shard met first: what its values are.
                m.kind = r.kind;
                m.step = r.step;
            }
            m.bits += r.bits;
            m.occurrences += r.occurrences;
            m.packets += r.packets;
            m.declared = m.declared.max(r.declared);
            m.past_range += r.past_range;
            merge_opt(&mut m.ints, r.ints.as_ref(), IntStats::merge);
            merge_opt(&mut m.quantized, r.quantized.as_ref(), IntStats::merge);
            merge_opt(&mut m.floats, r.floats.as_ref(), FloatStats::merge);
        }
        if let (Some(f), Some(of)) = (self.fast.as_mut(), o.fast.as_ref()) {
            f.planned += of.planned;
            f.trees += of.trees;
        }
        self.captured_bits += o.captured_bits;
        self.first_ns = min_opt(self.first_ns, o.first_ns);
        self.last_ns = self.last_ns.max(o.last_ns);
        for (k, n) in o.type_packets {
            *self.type_packets.entry(k).or_default() += n;
        }
        self.frames += o.frames;
        self.frag_data += o.frag_data;
        self.reassembled += o.reassembled;
        self.game_frames += o.game_frames;
        self.game_payload += o.game_payload;
        self.header_count += o.header_count;
    }

    /// Whether shards that held these states between them may have decided otherwise
    /// than one profile of the whole capture: together they could have reached a cap
    /// of kept states or previous values (each shard counts only its own), so the
    /// capture must be profiled on one core. Flows are disjoint among shards, so at any
    /// moment the whole's count is the shards' sum, never over the sum of their peaks.
    pub fn shards_may_reach_caps(shards: &[Bandwidth]) -> bool {
        let states: usize = shards.iter().map(|b| b.states.len()).sum();
        let stored: usize = shards.iter().map(|b| b.peak_stored).sum();
        states >= MAX_STATES || stored >= MAX_PREVIOUS
    }

    /// What the rows were counted from: the validation plan's leaves, field trees, or
    /// both (datagrams the plan cannot walk are dissected into a tree).
    pub fn computed_from(&self) -> &'static str {
        match &self.fast {
            Some(f) if f.planned > 0 && f.trees > 0 => "validation plan and field tree",
            Some(f) if f.planned > 0 => "validation plan",
            _ => "field tree",
        }
    }

    /// The id of a path given as text (merging shards, whose ids differ).
    fn path_by_text(&mut self, text: &str) -> u32 {
        if let Some(&i) = self.text_ids.get(text) {
            return i;
        }
        let id = self.paths.len() as u32;
        self.paths.push(text.to_string());
        self.text_ids.insert(text.to_string(), id);
        id
    }

    /// Closes the rows that are only known at the end: headers, and fragment data that
    /// no completed packet took.
    fn close(&mut self) {
        let frag = self.program.as_deref().map_or(NONE, |p| p.fragment_type);
        let headers = self.game_frames.saturating_sub(self.game_payload);
        let row = self.overhead_row(0, NONE, "(link/IP/UDP headers)", Category::LinkHeaders, headers);
        if let Some(i) = row {
            // Summed here, so added once: it occurred once per frame.
            let more = self.header_count.saturating_sub(1);
            self.rows[i].occurrences += more;
            self.rows[i].packets += more;
        }
        let left = self.frag_data.saturating_sub(self.reassembled);
        self.overhead(
            0,
            frag,
            "(fragment data not read as a reassembled packet)",
            Category::FragmentData,
            left,
        );
        self.game_frames = 0;
        self.game_payload = 0;
        self.header_count = 0;
        self.frag_data = 0;
        self.reassembled = 0;
    }

    /// The finished profile.
    pub fn report(mut self) -> BandwidthReport {
        self.fold_types();
        self.fold_fast();
        self.close();
        report::build(&self)
    }
}

fn merge_opt<T: Default + Clone>(a: &mut Option<T>, b: Option<&T>, f: fn(&mut T, &T)) {
    if let Some(b) = b {
        f(a.get_or_insert_with(T::default), b);
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The message type of the message holding bit `at` (NONE outside messages).
fn message_of(messages: &[crate::dissect::MessageInfo], at: u64) -> u32 {
    messages
        .iter()
        .find(|m| at >= m.bit_offset && at < m.bit_offset + m.bit_len.max(1))
        .map_or(NONE, |m| m.type_id.unwrap_or(NONE - 1))
}

/// Node names as `'static` strings: a definition's names leak once per distinct name
/// (bounded by the definition, which is loaded once per run).
fn intern(name: &str) -> &'static str {
    use std::sync::Mutex;
    static NAMES: Mutex<Option<hashbrown::HashSet<&'static str>>> = Mutex::new(None);
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let set = g.get_or_insert_with(Default::default);
    if let Some(s) = set.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_string().into_boxed_str());
    set.insert(s);
    s
}

/// Which block each node belongs to (header, fragment header, message header, body).
fn places(p: &Program) -> Vec<Place> {
    let mut out = vec![Place::Body; p.nodes.len()];
    let mut mark = |b, place| {
        let mut stack = vec![b];
        let mut steps = 0;
        while let Some(b) = stack.pop() {
            steps += 1;
            if steps > 1 << 20 {
                break;
            }
            for &id in p.block(b) {
                if let Some(slot) = out.get_mut(id as usize) {
                    if *slot != Place::Body {
                        continue;
                    }
                    *slot = place;
                }
                if let Some(n) = p.nodes.get(id as usize)
                    && !matches!(n.kind, NodeKind::Rest { .. })
                {
                    stack.extend(n.kind.blocks());
                }
            }
        }
    };
    mark(p.header, Place::Header);
    if let Some(f) = p.fragment {
        mark(f, Place::Fragment);
    }
    if let Some(h) = p.message_header() {
        mark(h, Place::MessageHeader);
    }
    out
}

impl Bandwidth {
    /// One event ([`Sink::packet`]).
    fn take(&mut self, e: &PacketEvent<'_>) {
        self.events += 1;
        if e.kind != Kind::Reassembled {
            let bits = e.frame_data.len() as u64 * 8;
            self.captured_bits += bits;
            self.frames += 1;
            if e.ts_ns != 0 || self.first_ns.is_some() {
                self.first_ns = min_opt(self.first_ns, Some(e.ts_ns));
                self.last_ns = self.last_ns.max(Some(e.ts_ns));
            }
        }
        let frame_bits = e.frame_data.len() as u64 * 8;
        match e.kind {
            Kind::Reassembled => {
                // Its bits are its fragments' data: they move from the fragment data row
                // to the packet's fields only when the packet was read field by field (a
                // message put back from fragments inside messages is bare bytes, already
                // counted in its fragments' message fields).
                if let (Status::Ok | Status::Malformed | Status::BadHeader, Some(d)) =
                    (e.status, e.dissection)
                    && !d.fields.is_empty()
                {
                    self.reassembled += e.payload.len() as u64 * 8;
                    self.packet_bits(e, d);
                } else if matches!(e.status, Status::Ok | Status::Malformed | Status::BadHeader)
                    && e.dissection.is_none()
                    && self.fast.is_some()
                {
                    self.packet_untreed(e);
                }
                return;
            }
            Kind::Game => {
                self.game_frames += frame_bits;
                self.game_payload += e.payload.len() as u64 * 8;
                self.header_count += 1;
            }
            Kind::IpPiece => {
                self.game_frames += frame_bits;
                self.header_count += 1;
                return;
            }
            _ => {
                self.overhead(0, NONE, "(other traffic)", Category::OtherTraffic, frame_bits);
                return;
            }
        }
        let payload = e.payload.len() as u64 * 8;
        let failed = match e.status {
            Status::Truncated => Some(("(truncated: not validated)", Category::Truncated)),
            Status::CrcMismatch | Status::TooShort => {
                Some(("(failed the checksum)", Category::ChecksumFailed))
            }
            Status::Unverified => Some(("(checksum not verifiable)", Category::ChecksumUnverified)),
            _ => None,
        };
        match (failed, e.dissection) {
            (None, Some(d)) => self.packet_bits(e, d),
            (None, None) if self.fast.is_some() => self.packet_untreed(e),
            (Some((name, cat)), _) => self.overhead(0, NONE, name, cat, payload),
            (None, None) => self.overhead(0, NONE, "(not dissected)", Category::NotDissected, payload),
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

    fn packet(&mut self, e: &PacketEvent<'_>) -> Flow {
        self.take(e);
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::Previous;

    /// The flat previous values hold what a `Vec` per row would, through rows that grow
    /// past their room (moved to the end), shrink, and holes compacted away.
    #[test]
    fn flat_previous_values_are_a_vec_per_row() {
        let mut flat = Previous::default();
        let mut model: Vec<Vec<i128>> = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..20_000i128 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let row = (x % 7) as usize;
            if model.len() <= row {
                model.resize(row + 1, Vec::new());
            }
            match (x >> 8) % 5 {
                // Shorter, as a packet with fewer occurrences leaves it.
                0 => {
                    let keep = ((x >> 16) % 40) as u32;
                    if let Some(r) = flat.rows.get_mut(row)
                        && r.1 > keep
                    {
                        r.1 = keep;
                    }
                    model[row].truncate(keep as usize);
                }
                1 | 2 => {
                    flat.push(row, step);
                    model[row].push(step);
                }
                _ => {
                    let ord = ((x >> 16) % 50) as u32;
                    if let Some(p) = flat.get_mut(row, ord) {
                        *p = -step;
                    }
                    if let Some(p) = model[row].get_mut(ord as usize) {
                        *p = -step;
                    }
                }
            }
            for (r, want) in model.iter().enumerate() {
                let got: Vec<i128> = (0..want.len() as u32 + 1)
                    .map_while(|o| flat.get_mut(r, o).map(|v| *v))
                    .collect();
                assert_eq!(&got, want, "row {r} after step {step}");
            }
        }
        assert!(
            flat.values.len() <= 2 * flat.room + 64 + 2 * 64,
            "holes are compacted"
        );
    }
}
