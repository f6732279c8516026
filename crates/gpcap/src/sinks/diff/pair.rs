//! One direction of traffic seen at both points: a flow at A paired with a flow at B.
//! Which point it passes first is settled only at the end (from both directions'
//! delays), so each point keeps its own view as if it were upstream: what it saw in its
//! own order, what the other point lacked, and runs of those. The report reads the
//! upstream point's view.

use super::clock::Line;
use super::sighting::FlowGaps;
use gpcap_engine::FlowId;
use serde::Serialize;
use std::collections::BTreeMap;

/// Events listed per kind and direction; their counts are always exact.
pub const LISTED: usize = 1000;
/// Times a run keeps for the timeline; the rest are placed at its last.
const RUN_TIMES: usize = 4096;

/// A datagram one point saw and the other did not, or one that came late, out of
/// order or twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Its frame at the point named (the upstream one for losses).
    pub frame: u64,
    pub ts_ns: i64,
    pub seq: Option<u64>,
    /// (id, count)
    pub fragment: Option<(u16, u16)>,
}

/// A run of datagrams one point saw and the other did not, consecutive in this point's
/// order. Runs before the first datagram both saw (`lead`) and after the last (`tail`)
/// wait for the end: whether the other point was capturing then decides whether they
/// were lost or not compared.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub count: u64,
    pub first_ns: i64,
    pub last_ns: i64,
    /// (count, id) → datagrams of the run that were that fragment.
    pub fragments: BTreeMap<(u16, u16), u64>,
    pub times: Vec<i64>,
    pub events: Vec<Event>,
}

impl Run {
    pub fn add(&mut self, e: Event) {
        if self.count == 0 {
            self.first_ns = e.ts_ns;
        }
        self.count += 1;
        self.last_ns = e.ts_ns;
        if let Some((id, n)) = e.fragment {
            *self.fragments.entry((n, id)).or_default() += 1;
        }
        if self.times.len() < RUN_TIMES {
            self.times.push(e.ts_ns);
        }
        if self.events.len() < LISTED {
            self.events.push(e);
        }
    }
}

/// One point's view of a pair, as if it were upstream.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// First copies of datagrams seen here (every one, overlap or not).
    pub seen: u64,
    /// Of them, seen at the other point too.
    pub matched: u64,
    /// Seen here only, between datagrams both saw: lost on the way if this is upstream.
    pub only: u64,
    /// Before the first datagram both saw; open until then.
    pub lead: Run,
    pub lead_closed: bool,
    /// Since the last datagram both saw.
    pub tail: Run,
    /// Lengths of the runs between datagrams both saw → how many.
    pub bursts: BTreeMap<u64, u64>,
    pub lost_events: Vec<Event>,
    /// Seen at the other point after a datagram this one saw later (RFC 4737's
    /// reordered, when this point is upstream).
    pub reordered: u64,
    pub reordered_events: Vec<Event>,
    pub max_other_pos: Option<u64>,
    /// Copies beyond the first, here, of datagrams the other point saw too.
    pub extra: u64,
    /// Copies more than the other point saw (duplicated on the way, when the other
    /// point is downstream of this one).
    pub beyond: u64,
    pub beyond_events: Vec<Event>,
    /// Fragments (count, id) seen at both, and lost (seen here only, in committed runs).
    pub fragments_matched: BTreeMap<(u16, u16), u64>,
    pub fragments_lost: BTreeMap<(u16, u16), u64>,
    /// The flow's sequence gaps at this point (the engine's).
    pub gaps: Option<FlowGaps>,
    /// Datagrams of this point's flow before it was paired, read again when it was.
    pub has_seq: bool,
}

impl View {
    /// A datagram both points saw, in this point's order: the run before it closes,
    /// and is returned to be committed when it lay between two such datagrams.
    pub fn matched_here(&mut self) -> Option<Run> {
        self.matched += 1;
        if !self.lead_closed {
            self.lead_closed = true;
            None
        } else if self.tail.count > 0 {
            Some(std::mem::take(&mut self.tail))
        } else {
            None
        }
    }

    /// A datagram only this point saw.
    pub fn only_here(&mut self, e: Event) {
        if self.lead_closed {
            self.tail.add(e);
        } else {
            self.lead.add(e);
        }
    }

    /// A run counted as lost on the way (when this point is upstream).
    pub fn commit(&mut self, run: Run) {
        self.only += run.count;
        *self.bursts.entry(run.count).or_default() += 1;
        for (k, n) in &run.fragments {
            *self.fragments_lost.entry(*k).or_default() += n;
        }
        let room = LISTED.saturating_sub(self.lost_events.len());
        self.lost_events.extend(run.events.iter().take(room));
    }
}

/// How a flow at A was found to be a flow at B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PairedBy {
    /// The same addresses and ports at both points.
    Addresses,
    /// Datagrams identical at both points (sequence and payload), this many before the
    /// flows were paired.
    SharedDatagrams(u32),
}

/// A datagram's delay as both clocks read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub ta: i64,
    pub tb: i64,
    pub frame_a: u64,
    pub frame_b: u64,
    pub seq: Option<u64>,
}

/// A flow at A and its flow at B.
#[derive(Debug, Clone)]
pub struct Pair {
    pub flows: [u32; 2],
    pub ids: [FlowId; 2],
    pub by: PairedBy,
    pub views: [View; 2],
    /// Positions of first copies at each point, in its order.
    pub next_pos: [u64; 2],
    /// The delays as if A were upstream (`tb - ta` over `ta`), and as if B were
    /// (`ta - tb` over `ta`).
    pub lines: [Line; 2],
    pub samples: Vec<Sample>,
    /// Samples are kept one in this many (the sample budget was reached).
    pub stride: u64,
    pub offered: u64,
    /// Sequences of the first and last datagram both saw.
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// Datagrams seen at both points (counted when both their copies are done).
    pub both: u64,
}

impl Pair {
    pub fn new(flows: [u32; 2], ids: [FlowId; 2], by: PairedBy) -> Pair {
        Pair {
            flows,
            ids,
            by,
            views: Default::default(),
            next_pos: [0; 2],
            lines: Default::default(),
            samples: Vec::new(),
            stride: 1,
            offered: 0,
            first_seq: None,
            last_seq: None,
            both: 0,
        }
    }

    /// The delay of a datagram both saw, taken (one in `stride`); false when it was not
    /// kept.
    pub fn sample(&mut self, s: Sample, origin: i64) -> bool {
        let x = (s.ta - origin) as f64;
        let m = (s.tb - s.ta) as f64;
        self.lines[0].push(x, m);
        self.lines[1].push(x, -m);
        self.offered += 1;
        if s.seq.is_some() {
            self.first_seq.get_or_insert(s.seq.unwrap_or(0));
            self.last_seq = s.seq;
        }
        if (self.offered - 1).is_multiple_of(self.stride) {
            self.samples.push(s);
            return true;
        }
        false
    }

    /// Keeps every other sample, and one in twice as many from now on.
    pub fn thin(&mut self) {
        let mut k = 0;
        self.samples.retain(|_| {
            k += 1;
            k % 2 == 1
        });
        self.stride *= 2;
    }
}
