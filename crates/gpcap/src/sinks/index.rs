//! The packet index behind the TUI: a few dozen bytes per event, built by a sink on the
//! loader's thread and sent to the screen's thread as updates over a channel, so the
//! screen owns its copy and never waits on a lock while drawing.

use crate::sinks::analysis::Report;
use gpcap_dissect::FaultKind;
use gpcap_engine::seq::SeqEvent;
use gpcap_engine::{Flow, FlowId, Kind, Layer, PacketEvent, Sink, SinkError, Status};
use gpcap_wire::decode::IcmpTooBig;
use hashbrown::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;

mod rows;
mod scan;
pub(crate) use rows::CHUNK;
pub use rows::{Chunk, Rows};
pub(crate) use scan::needs_kept;
pub use scan::{Snapshot, put_back, scan};

pub mod status {
    pub const CRC_OK: u16 = 1;
    pub const CRC_FAIL: u16 = 2;
    pub const MALFORMED: u16 = 4;
    pub const IP_FRAG: u16 = 8;
    pub const OVER_BUDGET: u16 = 16;
    pub const GAME: u16 = 32;
    pub const TRUNCATED: u16 = 64;
    pub const ICMP: u16 = 128;
    pub const OTHER_UDP: u16 = 256;
    pub const IP_PIECE: u16 = 512;
    pub const BAD_FRAME: u16 = 1024;
    /// A game packet reassembled from its fragments (the row of the completing frame).
    pub const REASSEMBLED: u16 = 2048;
    /// The sequence analysis' verdicts on the datagram (as `analyze` counts them).
    pub const LATE: u16 = 4096;
    pub const DUP: u16 = 8192;
    /// Sequences were skipped before it (how many: [`super::Row::gap`]).
    pub const GAP: u16 = 16384;
    /// A new sequence of its flow (in order or after a gap).
    pub const SEQ_NEW: u16 = 32768;
}

/// What the stream analysis said of a datagram's messages ([`Row::streams`]): one of
/// them came after a gap in its stream, late, or as a duplicate.
pub mod stream_note {
    pub const GAP: u8 = 1;
    pub const LATE: u8 = 2;
    pub const DUP: u8 = 4;
}

/// One row of the packet list, as read from the index (kept packed: see [`Rows`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Row {
    pub frame: u64,
    /// Where the record starts in the (decompressed) file.
    pub offset: u64,
    pub ts_ns: i64,
    pub flow: u32,
    pub size: u32,
    pub seq: u64,
    /// `u16::MAX` when there is no header.
    pub ptype: u16,
    /// Fragment count of a fragment, or of the fragments a packet was reassembled from.
    pub frag_count: u16,
    pub linktype: u16,
    pub status: u16,
    pub frag_id: u8,
    /// `FaultKind` index + 1, 0 for none.
    pub fault: u8,
    /// Sequences the engine found skipped just before this datagram (with [`status::GAP`];
    /// the TUI charts the engine's gaps rather than finding its own).
    pub gap: u32,
    /// Its messages' verdicts in their streams ([`stream_note`]); rare, so a row with
    /// any is kept whole rather than packed.
    pub streams: u8,
}

pub const NO_FLOW: u32 = u32::MAX;

/// `seq` of a reassembled row that has a type but no sequence (a message from fragments
/// inside messages, `reassembled-as`).
const NO_SEQUENCE: u64 = u64::MAX;

const _: () = assert!(std::mem::size_of::<Row>() == 56);

impl Row {
    pub fn has(&self, flag: u16) -> bool {
        self.status & flag != 0
    }

    /// The row's sequence: none without a header, nor for a message reassembled from
    /// fragments inside messages (read as a type, it has a header but no sequence).
    pub fn sequence(&self) -> Option<u64> {
        let header = self.has(status::GAME) && self.ptype != u16::MAX;
        let message = self.has(status::REASSEMBLED) && self.seq == NO_SEQUENCE;
        (header && !message).then_some(self.seq)
    }

    pub fn fault(&self) -> Option<FaultKind> {
        FaultKind::ALL.get((self.fault as usize).checked_sub(1)?).copied()
    }

    /// The row as the one packet model, for the display filter (no bytes, no tree).
    pub fn event(&self, flows: &[FlowId]) -> PacketEvent<'static> {
        let flow = flows.get(self.flow as usize).copied();
        let game = self.has(status::GAME);
        let header = game && self.ptype != u16::MAX;
        let status = if !game {
            Status::None
        } else if self.has(status::TRUNCATED) {
            Status::Truncated
        } else if self.has(status::CRC_FAIL) {
            Status::CrcMismatch
        } else if self.has(status::MALFORMED) {
            if header {
                Status::Malformed
            } else {
                Status::BadHeader
            }
        } else {
            Status::Ok
        };
        let kind = if self.has(status::REASSEMBLED) {
            Kind::Reassembled
        } else if game {
            Kind::Game
        } else if self.has(status::OTHER_UDP) {
            Kind::OtherUdp
        } else if self.has(status::ICMP) {
            Kind::Icmp
        } else if self.has(status::IP_PIECE) {
            Kind::IpPiece
        } else if self.has(status::BAD_FRAME) {
            Kind::BadFrame
        } else {
            Kind::NotUdp
        };
        let fragment =
            (self.frag_count > 0 && !self.has(status::REASSEMBLED)).then_some(gpcap_dissect::FragmentInfo {
                id: self.frag_id as u32,
                count: self.frag_count as u32,
                data_offset: 0,
                data_len: 0,
                lead: 0,
            });
        let seq_event = if self.has(status::LATE) {
            Some(SeqEvent::Late)
        } else if self.has(status::DUP) {
            Some(SeqEvent::Duplicate)
        } else if self.has(status::SEQ_NEW) {
            Some(SeqEvent::New { gap: self.gap })
        } else {
            None
        };
        PacketEvent {
            kind,
            seq_event,
            frame: self.frame,
            ts_ns: self.ts_ns,
            offset: self.offset,
            linktype: self.linktype as i32,
            flow,
            flow_index: None,
            ip_fragments: if self.has(status::IP_FRAG) { 2 } else { 1 },
            truncated: self.has(status::TRUNCATED),
            over_budget: self.has(status::OVER_BUDGET),
            status,
            crc: if self.has(status::CRC_OK) {
                Some(gpcap_wire::validate::CrcStatus::Ok)
            } else if self.has(status::CRC_FAIL) {
                Some(gpcap_wire::validate::CrcStatus::Mismatch {
                    stored: 0,
                    computed: 0,
                })
            } else {
                None
            },
            sequence: self.sequence(),
            packet_type: header.then_some(self.ptype as u32),
            fragment,
            fault: self.fault(),
            size: self.size,
            ..PacketEvent::empty()
        }
    }
}

/// A fragmented game packet: which of its fragments arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragPacket {
    pub flow: u32,
    pub seq: u64,
    pub count: u16,
    pub received: [u64; 4],
    pub duplicates: u16,
    pub first_frame: u64,
}

impl FragPacket {
    pub fn has(&self, id: u32) -> bool {
        id < 256 && self.received[(id / 64) as usize] >> (id % 64) & 1 == 1
    }

    pub fn received_count(&self) -> u32 {
        self.received.iter().map(|w| w.count_ones()).sum()
    }

    pub fn complete(&self) -> bool {
        self.received_count() >= self.count as u32
    }
}

/// Fragmented packets tracked for the reassembly view.
const MAX_FRAG_PACKETS: usize = 200_000;
/// Payloads kept for rows whose bytes are in no single frame (IP-rebuilt datagrams and
/// reassembled packets), with the frames of reassembled packets' fragments: 1.7 bytes a
/// packet of a 10M-frame capture. Past it a reassembled packet keeps only its fragments'
/// frames and is put back together from them when shown or filtered.
pub(crate) const KEPT_BYTES: usize = 16 << 20;

/// Bytes of a row that no single frame holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    pub payload: Vec<u8>,
    /// The frames of a reassembled packet's fragments, by fragment id.
    pub fragment_frames: Vec<u64>,
}

/// The fragments' frames of reassembled packets whose bytes were not kept (a field scan
/// puts them back together from the file): a few bytes a packet where its bytes were
/// hundreds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragments {
    /// Rows, ascending, and where their frames end in `frames`.
    rows: Vec<(u32, u32)>,
    frames: Vec<u64>,
}

impl Fragments {
    pub fn push(&mut self, row: u32, frames: &[u64]) {
        self.frames.extend_from_slice(frames);
        self.rows.push((row, self.frames.len() as u32));
    }

    /// The fragments' frames of the packet at `row`, by fragment id.
    pub fn of(&self, row: u32) -> Option<&[u64]> {
        let i = self.rows.binary_search_by_key(&row, |r| r.0).ok()?;
        let start = i.checked_sub(1).map_or(0, |p| self.rows[p].1) as usize;
        self.frames.get(start..self.rows[i].1 as usize)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn append(&mut self, more: Fragments) {
        let base = self.frames.len() as u32;
        self.frames.extend(more.frames);
        self.rows
            .extend(more.rows.into_iter().map(|(r, end)| (r, end + base)));
    }

    /// Bytes it takes in memory.
    pub fn bytes(&self) -> usize {
        self.rows.capacity() * 8 + self.frames.capacity() * 8
    }
}

/// An ICMP "too big" row: its addresses and what it says, for the list's columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcmpRow {
    pub from: IpAddr,
    pub to: IpAddr,
    pub info: String,
}

/// ICMP rows described (a flood of them is shown without addresses beyond).
const MAX_ICMP_ROWS: usize = 100_000;

/// What the loader sends the screen.
#[derive(Debug)]
pub enum Update {
    /// New rows, the flows first named by them, and bytes kept for some of them (by row).
    Rows {
        rows: Vec<Row>,
        flows: Vec<FlowId>,
        kept: Vec<(u32, Kept)>,
        /// Fragments' frames of reassembled packets not kept.
        fragments: Fragments,
        /// ICMP rows' addresses and summaries, by row.
        icmp: Vec<(u32, IcmpRow)>,
        /// Frames held in memory (live capture, where there is no file to read back).
        frames: Vec<(u64, Vec<u8>)>,
        bytes_read: u64,
    },
    /// The fragment grid, whole.
    Frags(Vec<FragPacket>),
    Report(Box<Report>),
    /// A line about the live capture (drops), for the status bar.
    LiveStatus(String),
    Done {
        error: Option<String>,
    },
}

/// Recent frames kept in memory when there is no file to read them back from (live
/// capture), bounded by bytes.
#[derive(Debug, Default)]
pub struct FrameStore {
    frames: std::collections::VecDeque<(u64, Vec<u8>)>,
    bytes: usize,
    pub limit: usize,
}

impl FrameStore {
    pub fn new(limit: usize) -> Self {
        FrameStore {
            limit,
            ..FrameStore::default()
        }
    }

    pub fn push(&mut self, frame: u64, data: Vec<u8>) {
        self.bytes += data.len();
        self.frames.push_back((frame, data));
        while self.bytes > self.limit {
            match self.frames.pop_front() {
                Some((_, d)) => self.bytes -= d.len(),
                None => break,
            }
        }
    }

    pub fn get(&self, frame: u64) -> Option<&[u8]> {
        let i = self.frames.partition_point(|(n, _)| *n < frame);
        self.frames
            .get(i)
            .filter(|(n, _)| *n == frame)
            .map(|(_, d)| d.as_slice())
    }
}

/// The screen's copy of the index.
#[derive(Debug, Default)]
pub struct Index {
    pub name: String,
    pub path: PathBuf,
    pub rows: Rows,
    /// Rows that are reassembled packets rather than frames.
    pub reassembled: u64,
    pub flows: Vec<FlowId>,
    pub frags: Vec<FragPacket>,
    /// Shared with a field scan (settled once the capture is indexed).
    pub kept: Arc<HashMap<u32, Kept>>,
    /// Rows whose bytes no single frame holds (`needs_kept`): all kept when `kept`
    /// has as many.
    pub needs_kept: u64,
    /// Reassembled packets not kept: their fragments' frames (shared with a field scan).
    pub fragments: Arc<Fragments>,
    pub icmp: HashMap<u32, IcmpRow>,
    pub bytes_read: u64,
    pub total_bytes: u64,
    pub done: bool,
    pub error: Option<String>,
    pub report: Option<Report>,
    /// Frames held in memory (live capture); files are read back instead.
    pub store: Option<FrameStore>,
    pub live_status: Option<String>,
}

impl Index {
    /// The first and last times of the rows (rows are in capture order, but a capture's
    /// clock may step back).
    pub fn span(&self) -> (i64, i64) {
        let first = self.rows.first().map_or(0, |r| r.ts_ns);
        let last = self.rows.iter().map(|r| r.ts_ns).max().unwrap_or(first);
        (first, last)
    }

    /// Bytes the index takes in memory, about: rows, fragments' frames, kept bytes,
    /// flows, ICMP rows and the fragment grid.
    pub fn bytes(&self) -> usize {
        let entry = |k: &Kept| 40 + k.payload.capacity() + k.fragment_frames.capacity() * 8;
        self.rows.bytes()
            + self.fragments.bytes()
            + self.kept.values().map(entry).sum::<usize>()
            + self.flows.capacity() * std::mem::size_of::<FlowId>()
            + self.icmp.values().map(|i| 80 + i.info.capacity()).sum::<usize>()
            + self.frags.capacity() * std::mem::size_of::<FragPacket>()
    }

    /// Frames indexed (rows less reassembled packets).
    pub fn frames(&self) -> u64 {
        self.rows.len() as u64 - self.reassembled
    }

    pub fn new(path: &Path) -> Self {
        Index {
            name: gpcap_wire::capture::shown(path),
            path: path.to_path_buf(),
            total_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            ..Index::default()
        }
    }

    /// Folds in one update from the loader.
    pub fn apply(&mut self, u: Update) {
        match u {
            Update::Rows {
                rows,
                flows,
                kept,
                fragments,
                icmp,
                frames,
                bytes_read,
            } => {
                if !fragments.is_empty() {
                    Arc::make_mut(&mut self.fragments).append(fragments);
                }
                self.icmp.extend(icmp);
                self.reassembled += rows.iter().filter(|r| r.has(status::REASSEMBLED)).count() as u64;
                self.needs_kept += rows.iter().filter(|r| needs_kept(r)).count() as u64;
                self.rows.extend(rows);
                self.flows.extend(flows);
                if !kept.is_empty() {
                    Arc::make_mut(&mut self.kept).extend(kept);
                }
                if !frames.is_empty() {
                    let store = self.store.get_or_insert_with(|| FrameStore::new(256 << 20));
                    for (n, d) in frames {
                        store.push(n, d);
                    }
                }
                self.bytes_read = bytes_read;
            }
            Update::Frags(f) => self.frags = f,
            Update::Report(r) => self.report = Some(*r),
            Update::LiveStatus(s) => self.live_status = Some(s),
            Update::Done { error } => {
                self.error = error;
                self.done = true;
            }
        }
    }
}

/// Builds rows from events and sends them in batches.
pub struct IndexSink {
    tx: Sender<Update>,
    rows: Vec<Row>,
    /// Rows sent so far.
    sent: u32,
    flow_ids: HashMap<FlowId, u32>,
    new_flows: Vec<FlowId>,
    frags: Vec<FragPacket>,
    frag_ids: HashMap<(u32, u64), u32>,
    frags_changed: bool,
    frags_sent_at: std::time::Instant,
    kept: Vec<(u32, Kept)>,
    kept_bytes: usize,
    /// Bytes of rows kept at most (`KEPT_BYTES`; tests lower it).
    pub kept_limit: usize,
    fragments: Fragments,
    icmp: Vec<(u32, IcmpRow)>,
    icmp_rows: usize,
    /// Keep frames in memory (live capture).
    pub keep_frames: bool,
    frames: Vec<(u64, Vec<u8>)>,
    /// Bytes read of the capture, for the progress gauge (set by the reading loop).
    pub bytes_read: Arc<AtomicU64>,
    /// The screen has gone: stop working for it.
    pub closed: bool,
}

impl IndexSink {
    pub fn new(tx: Sender<Update>) -> Self {
        IndexSink {
            tx,
            rows: Vec::new(),
            sent: 0,
            flow_ids: HashMap::new(),
            new_flows: Vec::new(),
            frags: Vec::new(),
            frag_ids: HashMap::new(),
            frags_changed: false,
            frags_sent_at: std::time::Instant::now(),
            kept: Vec::new(),
            kept_bytes: 0,
            kept_limit: KEPT_BYTES,
            fragments: Fragments::default(),
            icmp: Vec::new(),
            icmp_rows: 0,
            keep_frames: false,
            frames: Vec::new(),
            bytes_read: Arc::new(AtomicU64::new(0)),
            closed: false,
        }
    }

    fn flow_id(&mut self, f: FlowId) -> u32 {
        if let Some(&i) = self.flow_ids.get(&f) {
            return i;
        }
        let i = self.flow_ids.len() as u32;
        self.flow_ids.insert(f, i);
        self.new_flows.push(f);
        i
    }

    fn send(&mut self, u: Update) {
        if self.tx.send(u).is_err() {
            self.closed = true;
        }
    }

    /// Sends what was gathered; the fragment grid (rewritten as fragments arrive) at most
    /// once a second unless `all`, so publishing stays cheap on millions of packets.
    pub fn publish(&mut self, all: bool) {
        if !self.rows.is_empty()
            || !self.new_flows.is_empty()
            || !self.kept.is_empty()
            || !self.fragments.is_empty()
            || !self.icmp.is_empty()
            || all
        {
            self.sent += self.rows.len() as u32;
            let u = Update::Rows {
                rows: std::mem::take(&mut self.rows),
                flows: std::mem::take(&mut self.new_flows),
                kept: std::mem::take(&mut self.kept),
                fragments: std::mem::take(&mut self.fragments),
                icmp: std::mem::take(&mut self.icmp),
                frames: std::mem::take(&mut self.frames),
                bytes_read: self.bytes_read.load(Ordering::Relaxed),
            };
            self.send(u);
        }
        if self.frags_changed && (all || self.frags_sent_at.elapsed() > std::time::Duration::from_secs(1)) {
            self.frags_changed = false;
            self.frags_sent_at = std::time::Instant::now();
            let f = self.frags.clone();
            self.send(Update::Frags(f));
        }
    }

    /// Ends the index: what is left, the report and how reading ended.
    pub fn done(&mut self, report: Option<Report>, error: Option<String>) {
        self.publish(true);
        if let Some(r) = report {
            self.send(Update::Report(Box::new(r)));
        }
        self.send(Update::Done { error });
    }

    pub fn live_status(&mut self, line: String) {
        self.send(Update::LiveStatus(line));
    }

    /// The report so far (live capture).
    pub fn report(&mut self, r: Report) {
        self.send(Update::Report(Box::new(r)));
    }

    /// Keeps the bytes of `row` while they fit; a reassembled packet's fragments' frames
    /// otherwise.
    fn keep(&mut self, row: u32, payload: &[u8], fragment_frames: &[u64]) {
        let cost = payload.len() + fragment_frames.len() * 8;
        if self.kept_bytes + cost > self.kept_limit {
            if !fragment_frames.is_empty() {
                self.fragments.push(row, fragment_frames);
            }
        } else {
            self.kept_bytes += cost;
            self.kept.push((
                row,
                Kept {
                    payload: payload.to_vec(),
                    fragment_frames: fragment_frames.to_vec(),
                },
            ));
        }
    }

    fn grid(&mut self, e: &PacketEvent, flow: u32) {
        let (Some(seq), Some(frag)) = (e.sequence, e.fragment) else {
            return;
        };
        let key = (flow, seq);
        let i = match self.frag_ids.get(&key) {
            Some(&i) => Some(i as usize),
            None if self.frags.len() < MAX_FRAG_PACKETS => {
                self.frags.push(FragPacket {
                    flow,
                    seq,
                    count: frag.count.min(256) as u16,
                    received: [0; 4],
                    duplicates: 0,
                    first_frame: e.frame,
                });
                self.frag_ids.insert(key, self.frags.len() as u32 - 1);
                Some(self.frags.len() - 1)
            }
            None => None,
        };
        if let Some(p) = i.and_then(|i| self.frags.get_mut(i))
            && frag.id < 256
        {
            if p.has(frag.id) {
                p.duplicates += 1;
            } else {
                p.received[(frag.id / 64) as usize] |= 1 << (frag.id % 64);
            }
            self.frags_changed = true;
        }
    }
}

/// What an ICMP "too big" message says, as the Info column reads.
fn icmp_row(i: &IcmpTooBig) -> IcmpRow {
    let what = if i.v6 {
        "packet too big"
    } else {
        "fragmentation needed"
    };
    let quoted = i
        .quoted
        .map(|q| format!(" for {} → {} ({} bytes)", q.src, q.dst, q.ip_len))
        .unwrap_or_default();
    IcmpRow {
        from: i.from,
        to: i.to,
        info: format!("{what}: MTU {}{quoted}", i.mtu),
    }
}

/// The status bits of an event.
pub(crate) fn status_bits(e: &PacketEvent) -> u16 {
    let mut st = match e.kind {
        Kind::Game => status::GAME,
        Kind::Reassembled => status::GAME | status::REASSEMBLED,
        Kind::OtherUdp => status::OTHER_UDP,
        Kind::IpPiece => status::IP_PIECE,
        Kind::Icmp => status::ICMP,
        Kind::BadFrame => status::BAD_FRAME,
        // Not UDP (and a kind the engine adds later: no bits until it is given some).
        _ => 0,
    };
    match e.status {
        Status::Ok | Status::Malformed | Status::BadHeader if e.crc.is_some() => st |= status::CRC_OK,
        Status::CrcMismatch | Status::TooShort => st |= status::CRC_FAIL,
        _ => {}
    }
    if e.fault.is_some() {
        st |= status::MALFORMED;
    }
    if e.ip_fragments > 1 {
        st |= status::IP_FRAG;
    }
    if e.over_budget {
        st |= status::OVER_BUDGET;
    }
    if e.truncated || e.snaplen_cut() {
        st |= status::TRUNCATED;
    }
    match e.seq_event {
        Some(SeqEvent::Late) => st |= status::LATE,
        Some(SeqEvent::Duplicate) => st |= status::DUP,
        Some(SeqEvent::New { gap }) if gap > 0 => st |= status::GAP | status::SEQ_NEW,
        Some(SeqEvent::New { .. }) => st |= status::SEQ_NEW,
        _ => {}
    }
    st
}

/// [`Row::streams`] of event `e`.
fn stream_notes(e: &PacketEvent) -> u8 {
    (e.stream_events().iter()).fold(0, |n, s| {
        n | match s.event {
            SeqEvent::Late => stream_note::LATE,
            SeqEvent::Duplicate => stream_note::DUP,
            SeqEvent::New { gap } if gap > 0 => stream_note::GAP,
            _ => 0,
        }
    })
}

impl Sink for IndexSink {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        let flow = e.flow.map(|fl| self.flow_id(fl)).unwrap_or(NO_FLOW);
        let fault = e
            .fault
            .and_then(|k| FaultKind::ALL.iter().position(|x| *x == k))
            .map_or(0, |i| i as u8 + 1);
        let (frag_id, frag_count) = match (e.kind, e.fragment) {
            (Kind::Reassembled, _) => (0, e.fragment_frames.len() as u32),
            (_, Some(f)) => (f.id, f.count),
            _ => (0, 0),
        };
        let row = self.sent + self.rows.len() as u32;
        // A message reassembled from fragments inside messages has a type but no
        // sequence (`reassembled-as`).
        let header = e.packet_type.is_some() && (e.sequence.is_some() || e.kind == Kind::Reassembled);
        self.rows.push(Row {
            frame: e.frame,
            offset: e.offset,
            ts_ns: e.ts_ns,
            flow,
            size: if e.flow.is_some() { e.size } else { 0 },
            seq: match (e.sequence, header) {
                (Some(s), _) => s,
                (None, true) => NO_SEQUENCE,
                (None, false) => 0,
            },
            ptype: if header {
                e.packet_type
                    .map_or(u16::MAX, |t| t.min(u16::MAX as u32 - 1) as u16)
            } else {
                u16::MAX
            },
            frag_count: frag_count.min(u16::MAX as u32) as u16,
            linktype: e.linktype as u16,
            status: status_bits(e),
            frag_id: frag_id.min(255) as u8,
            fault,
            gap: match e.seq_event {
                Some(SeqEvent::New { gap }) => gap,
                _ => 0,
            },
            streams: stream_notes(e),
        });
        if e.kind == Kind::Reassembled || (e.is_game() && e.ip_fragments > 1) {
            self.keep(row, e.payload, e.fragment_frames);
        }
        if e.kind == Kind::Game && !e.status.crc_failed() {
            self.grid(e, flow);
        }
        if let Layer::Icmp(i) = e.layer
            && self.icmp_rows < MAX_ICMP_ROWS
        {
            self.icmp_rows += 1;
            self.icmp.push((row, icmp_row(&i)));
        }
        if self.keep_frames && e.kind != Kind::Reassembled {
            self.frames.push((e.frame, e.frame_data.to_vec()));
        }
        if self.rows.len() >= 65536 {
            self.publish(false);
        }
        // The screen closed: nobody reads the rest.
        Ok(Flow::stop_if(self.closed))
    }
}
