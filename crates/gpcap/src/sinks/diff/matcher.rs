//! Matching two captures' datagrams in one pass each, in bounded memory.
//!
//! The run hands the matcher each point's sightings in that point's order, always the
//! one whose time is earlier once both clocks are aligned (at first by the captures'
//! first datagrams, then by the running offset of the datagrams matched). A datagram
//! waits in its point's window until the other point has read `window` past it; then
//! its fate at this point is settled and it leaves. Whatever the clocks' offset, a
//! window holds `window` of traffic (and never more than `max_pending` datagrams).
//! Until the first datagram is found at both points nothing leaves but what a full
//! window pushes out: captures that began minutes apart still meet.
//!
//! A flow at A is paired with a flow at B when they have the same addresses and ports,
//! or (through NAT) when three of their datagrams are identical. A datagram's identity
//! is its sequence and payload together (a hash of the payload's head and its size);
//! copies of one identity at one point are duplicates when the protocol has a
//! sequence, and distinct datagrams matched in order when it has none.

use super::pair::{Event, Pair, PairedBy, Sample};
use super::sighting::{FlowGaps, Seen, Sighting};
use super::timeline::{self, Timelines};
use gpcap_engine::FlowId;
use hashbrown::HashMap;
use std::collections::VecDeque;

pub const A: usize = 0;
pub const B: usize = 1;
const NONE: u32 = u32::MAX;
/// Identical datagrams that pair two flows of different addresses.
const VOTES: u32 = 3;
/// Settled identities swept out of the key table at once, at least.
const SWEEP: usize = 4096;
/// Candidate pairs remembered at most (a flood of flows sharing payloads).
const MAX_VOTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How far (aligned time) a datagram waits for its copy at the other point.
    pub window_ns: i64,
    /// Datagrams a point's window holds at most.
    pub max_pending: usize,
    /// Delay samples kept over every pair; past it, one in two, four…
    pub max_samples: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window_ns: 10_000_000_000,
            max_pending: 1 << 19,
            max_samples: 1 << 20,
        }
    }
}

struct Rec {
    s: Sighting,
    entry: u32,
    /// The first copy of its identity at this point.
    first: bool,
}

/// A flow at one point.
#[derive(Debug, Clone)]
pub struct FlowSide {
    pub id: FlowId,
    pub pair: Option<u32>,
    pub datagrams: u64,
    pub damaged: u64,
    pub gaps: Option<FlowGaps>,
    /// Its datagrams that left the window before the flow was paired.
    pub unpaired: u64,
    pending: VecDeque<u64>,
}

/// One point: its window and flows.
#[derive(Default)]
pub struct Side {
    fifo: VecDeque<Rec>,
    base: u64,
    pub flows: Vec<Option<FlowSide>>,
    by_id: HashMap<FlowId, u32>,
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    pub ended: bool,
    /// First and last frame of the capture (any frame) and how many.
    pub span: Option<(i64, i64, u64)>,
    pub datagrams: u64,
    /// Damaged datagrams of flows not tracked by the engine or not announced.
    pub damaged: u64,
    pub untracked: u64,
    /// Datagrams that left a full window early.
    pub evicted_early: u64,
}

/// One identity: its copies at both points.
struct Entry {
    pair: u32,
    copies: [u16; 2],
    refs: u32,
    /// The point's first copy has left its window: no copy joins any more.
    closed: [bool; 2],
    t: [i64; 2],
    frame: [u64; 2],
    pos: [u64; 2],
    seq: Option<u64>,
    fragment: Option<(u16, u16)>,
    next: u32,
    /// Settled, waiting for the next sweep to leave its chain.
    dead: bool,
}

pub struct Matcher {
    pub opts: Options,
    pub sides: [Side; 2],
    pub pairs: Vec<Pair>,
    entries: Vec<Entry>,
    /// Entries to reuse, the longest settled first: entries are then taken in about the
    /// order their datagrams arrive and settle a window later in that order, which the
    /// cache's prefetcher follows (reused last-freed-first, they were scattered).
    free: VecDeque<u32>,
    /// Settled identities still in their chains (see `sweep`).
    dead: Vec<u32>,
    keys: HashMap<(u32, u64), u32>,
    votes: HashMap<(u32, u32), u32>,
    /// For datagrams of unpaired flows: the latest with this hash at each point.
    hashes: HashMap<u64, [Option<(u32, u64)>; 2]>,
    /// B's clock minus A's: running estimate from the datagrams matched.
    pub align: Option<f64>,
    pub samples: usize,
    /// A's clock at x = 0 of the delay lines.
    pub origin: Option<i64>,
    pub timelines: Timelines,
    pub matches: u64,
}

impl Matcher {
    pub fn new(opts: Options) -> Matcher {
        Matcher {
            opts,
            sides: Default::default(),
            pairs: Vec::new(),
            entries: Vec::new(),
            free: VecDeque::new(),
            dead: Vec::new(),
            keys: HashMap::new(),
            votes: HashMap::new(),
            hashes: HashMap::new(),
            align: None,
            samples: 0,
            origin: None,
            timelines: Timelines::default(),
            matches: 0,
        }
    }

    /// B's clock minus A's as the matcher aligns them now: the running estimate, else
    /// the captures' first datagrams (given the heads when none was read yet).
    fn offset(&self, heads: [Option<i64>; 2]) -> f64 {
        if let Some(o) = self.align {
            return o;
        }
        match (
            self.sides[A].first_ts.or(heads[A]),
            self.sides[B].first_ts.or(heads[B]),
        ) {
            (Some(a), Some(b)) => (b - a) as f64,
            _ => 0.0,
        }
    }

    fn aligned_with(&self, side: usize, ts: i64, off: f64) -> f64 {
        if side == A { ts as f64 } else { ts as f64 - off }
    }

    /// The point whose next datagram (`heads`: its time, None when the point has none
    /// left) comes first on the aligned clocks.
    pub fn next_side(&self, heads: [Option<i64>; 2]) -> Option<usize> {
        let off = self.offset(heads);
        match heads {
            [Some(a), Some(b)] => Some(if (a as f64) <= self.aligned_with(B, b, off) {
                A
            } else {
                B
            }),
            [Some(_), None] => Some(A),
            [None, Some(_)] => Some(B),
            [None, None] => None,
        }
    }

    /// One item of point `side`'s stream.
    pub fn push(&mut self, side: usize, seen: Seen) {
        match seen {
            Seen::Flow { index, id } => self.announce(side, index, id),
            Seen::Datagram(s) => self.datagram(side, s),
            Seen::Damaged { flow } => match flow.and_then(|f| self.flow_mut(side, f)) {
                Some(f) => f.damaged += 1,
                None => self.sides[side].damaged += 1,
            },
            Seen::Untracked => self.sides[side].untracked += 1,
            Seen::Gaps { index, gaps } => {
                if let Some(f) = self.flow_mut(side, index) {
                    f.gaps = Some(gaps);
                }
            }
            Seen::Span {
                first_ns,
                last_ns,
                frames,
            } => self.sides[side].span = Some((first_ns, last_ns, frames)),
        }
    }

    /// Point `side` has nothing more: every datagram of the other point's window is
    /// settled, and when both are done, everything.
    pub fn end(&mut self, side: usize) {
        self.sides[side].ended = true;
        self.evict();
    }

    fn flow_mut(&mut self, side: usize, index: u32) -> Option<&mut FlowSide> {
        self.sides[side].flows.get_mut(index as usize)?.as_mut()
    }

    fn announce(&mut self, side: usize, index: u32, id: FlowId) {
        let flows = &mut self.sides[side].flows;
        let i = index as usize;
        if flows.len() <= i {
            flows.resize(i + 1, None);
        }
        flows[i] = Some(FlowSide {
            id,
            pair: None,
            datagrams: 0,
            damaged: 0,
            gaps: None,
            unpaired: 0,
            pending: VecDeque::new(),
        });
        self.sides[side].by_id.insert(id, index);
    }

    fn datagram(&mut self, x: usize, s: Sighting) {
        let side = &mut self.sides[x];
        let Some(Some(flow)) = side.flows.get_mut(s.flow as usize) else {
            side.untracked += 1;
            return;
        };
        flow.datagrams += 1;
        let pair = flow.pair;
        side.datagrams += 1;
        side.first_ts.get_or_insert(s.ts_ns);
        side.last_ts = Some(side.last_ts.map_or(s.ts_ns, |t| t.max(s.ts_ns)));
        if x == A {
            self.origin.get_or_insert(s.ts_ns);
        }
        let id = side.base + side.fifo.len() as u64;
        side.fifo.push_back(Rec {
            s,
            entry: NONE,
            first: false,
        });
        match pair {
            Some(_) => self.enter(x, id),
            None => self.try_pair(x, s, id),
        }
        self.evict();
    }

    fn rec(&self, x: usize, id: u64) -> Option<&Rec> {
        let side = &self.sides[x];
        id.checked_sub(side.base).and_then(|k| side.fifo.get(k as usize))
    }

    /// A datagram of an unpaired flow: pairs its flow when the other point has the
    /// same one, or when enough of their datagrams are the same.
    fn try_pair(&mut self, x: usize, s: Sighting, id: u64) {
        let y = 1 - x;
        let f = s.flow;
        let Some(flow) = self.flow_mut(x, f) else { return };
        flow.pending.push_back(id);
        let fid = flow.id;
        if let Some(&g) = self.sides[y].by_id.get(&fid)
            && self.flow_mut(y, g).is_some_and(|g| g.pair.is_none())
        {
            self.make_pair(x, f, g, PairedBy::Addresses);
            return;
        }
        let slot = self.hashes.entry(s.hash).or_default();
        let other = slot[y];
        slot[x] = Some((f, id));
        let Some((g, gid)) = other else { return };
        if self.rec(y, gid).is_none() || self.flow_mut(y, g).is_none_or(|g| g.pair.is_some()) {
            return;
        }
        let key = if x == A { (f, g) } else { (g, f) };
        if !self.votes.contains_key(&key) && self.votes.len() >= MAX_VOTES {
            return;
        }
        let v = self.votes.entry(key).or_default();
        *v += 1;
        if *v >= VOTES {
            let v = *v;
            self.make_pair(x, f, g, PairedBy::SharedDatagrams(v));
        }
    }

    fn make_pair(&mut self, x: usize, f: u32, g: u32, by: PairedBy) {
        let flows = if x == A { [f, g] } else { [g, f] };
        let p = self.pairs.len() as u32;
        let mut ids = [FlowId {
            src: ([0, 0, 0, 0], 0).into(),
            dst: ([0, 0, 0, 0], 0).into(),
        }; 2];
        let mut pending = [VecDeque::new(), VecDeque::new()];
        for side in [A, B] {
            if let Some(fl) = self.flow_mut(side, flows[side]) {
                fl.pair = Some(p);
                ids[side] = fl.id;
                pending[side] = std::mem::take(&mut fl.pending);
            }
        }
        self.pairs.push(Pair::new(flows, ids, by));
        self.timelines.add_pair();
        for side in [A, B] {
            for &id in &pending[side] {
                if self.rec(side, id).is_some() {
                    self.enter(side, id);
                }
            }
        }
    }

    /// A datagram of a paired flow joins its identity's entry (or opens one).
    fn enter(&mut self, x: usize, id: u64) {
        let y = 1 - x;
        let Some(rec) = self.rec(x, id) else { return };
        let s = rec.s;
        let Some(p) = self.sides[x].flows[s.flow as usize].as_ref().and_then(|f| f.pair) else {
            return;
        };
        let key = (p, s.hash);
        let joinable =
            |e: &Entry| !e.dead && !e.closed[x] && !e.closed[y] && (s.seq.is_some() || e.copies[x] == 0);
        let mut e = self.keys.get(&key).copied().unwrap_or(NONE);
        let mut last = NONE;
        while e != NONE && !joinable(&self.entries[e as usize]) {
            last = e;
            e = self.entries[e as usize].next;
        }
        if e == NONE {
            e = self.new_entry(p, &s);
            if last == NONE {
                self.keys.insert(key, e);
            } else {
                self.entries[last as usize].next = e;
            }
        }
        let pos = &mut self.pairs[p as usize].next_pos[x];
        let en = &mut self.entries[e as usize];
        en.refs += 1;
        en.copies[x] = en.copies[x].saturating_add(1);
        let first = en.copies[x] == 1;
        if first {
            en.t[x] = s.ts_ns;
            en.frame[x] = s.frame;
            en.pos[x] = *pos;
            *pos += 1;
        }
        let matched = first && en.copies[y] >= 1;
        let m = (en.t[B] - en.t[A]) as f64;
        let k = (id - self.sides[x].base) as usize;
        self.sides[x].fifo[k].entry = e;
        self.sides[x].fifo[k].first = first;
        if matched {
            self.matches += 1;
            self.align = Some(match self.align {
                None => m,
                Some(o) => o + (m - o) / 16.0,
            });
        }
    }

    fn new_entry(&mut self, pair: u32, s: &Sighting) -> u32 {
        let e = Entry {
            pair,
            copies: [0; 2],
            refs: 0,
            closed: [false; 2],
            t: [0; 2],
            frame: [0; 2],
            pos: [0; 2],
            seq: s.seq,
            fragment: s.fragment,
            next: NONE,
            dead: false,
        };
        match self.free.pop_front() {
            Some(i) => {
                self.entries[i as usize] = e;
                i
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u32
            }
        }
    }

    /// Settles every datagram the other point has read `window` past (or that a full
    /// window pushes out).
    fn evict(&mut self) {
        let off = self.offset([None, None]);
        let w = self.opts.window_ns as f64;
        for x in [A, B] {
            let y = 1 - x;
            // The other point read `window` past it; once the other point has ended, this
            // one has (its own later copies of a datagram may still come).
            let by = match (self.sides[x].ended, self.sides[y].ended) {
                (true, true) => None,
                (_, false) => Some(y),
                (false, true) => Some(x),
            };
            let limit = match by {
                None => f64::INFINITY,
                // Until a datagram is found at both points the clocks' alignment is a
                // guess (the captures' first datagrams): nothing leaves but what a full
                // window pushes out, so captures that began far apart still meet.
                Some(_) if self.align.is_none() => f64::NEG_INFINITY,
                Some(z) => match self.sides[z].last_ts {
                    Some(t) => self.aligned_with(z, t, off) - w,
                    None => f64::NEG_INFINITY,
                },
            };
            loop {
                let side = &self.sides[x];
                let Some(front) = side.fifo.front() else { break };
                let full = side.fifo.len() > self.opts.max_pending;
                if !full && self.aligned_with(x, front.s.ts_ns, off) >= limit {
                    break;
                }
                if full && self.aligned_with(x, front.s.ts_ns, off) >= limit {
                    self.sides[x].evicted_early += 1;
                }
                self.settle(x);
            }
        }
    }

    /// The oldest datagram of point `x`'s window leaves it.
    fn settle(&mut self, x: usize) {
        let side = &mut self.sides[x];
        let Some(rec) = side.fifo.pop_front() else { return };
        let id = side.base;
        side.base += 1;
        if rec.entry == NONE {
            self.unpaired_leaves(x, &rec, id);
            return;
        }
        let e = rec.entry as usize;
        if rec.first {
            self.first_copy_leaves(x, &rec);
        }
        let en = &mut self.entries[e];
        en.refs -= 1;
        if en.refs == 0 {
            self.finalize(e as u32);
        }
    }

    fn unpaired_leaves(&mut self, x: usize, rec: &Rec, id: u64) {
        if let Some(f) = self.flow_mut(x, rec.s.flow) {
            f.unpaired += 1;
            if f.pending.front() == Some(&id) {
                f.pending.pop_front();
            }
        }
        if let Some(slot) = self.hashes.get_mut(&rec.s.hash) {
            if slot[x].is_some_and(|(_, i)| i == id) {
                slot[x] = None;
            }
            if slot[A].is_none() && slot[B].is_none() {
                self.hashes.remove(&rec.s.hash);
            }
        }
    }

    /// A first copy's fate at its point: seen at the other point too (and in which
    /// order), or only here.
    fn first_copy_leaves(&mut self, x: usize, rec: &Rec) {
        let y = 1 - x;
        let en = &mut self.entries[rec.entry as usize];
        en.closed[x] = true;
        let (p, matched, other_pos) = (en.pair as usize, en.copies[y] >= 1, en.pos[y]);
        let (t, frame, seq) = (en.t, en.frame, en.seq);
        let fragment = en.fragment;
        let ev = Event {
            frame: rec.s.frame,
            ts_ns: rec.s.ts_ns,
            seq,
            fragment,
        };
        let on_a = |ts: i64, x: usize, off: f64| if x == A { ts } else { (ts as f64 - off) as i64 };
        let off = self.align.unwrap_or(0.0);
        let lane_t = on_a(rec.s.ts_ns, x, off);
        self.timelines.add(p, lane_t, timeline::SEEN + x, 1);
        let pair = &mut self.pairs[p];
        pair.views[x].seen += 1;
        pair.views[x].has_seq |= seq.is_some();
        if !matched {
            pair.views[x].only_here(ev);
            return;
        }
        // In this point's order, a datagram the other point saw after a later one:
        // reordered on the way, when the other point is upstream.
        let up = &mut pair.views[y];
        match up.max_other_pos {
            Some(m) if other_pos < m => {
                up.reordered += 1;
                if up.reordered_events.len() < super::pair::LISTED {
                    up.reordered_events.push(ev);
                }
                self.timelines.add(p, lane_t, timeline::REORDERED + x, 1);
            }
            _ => up.max_other_pos = Some(other_pos),
        }
        if let Some(run) = self.pairs[p].views[x].matched_here() {
            self.commit_run(p, x, run);
        }
        let view = &mut self.pairs[p].views[x];
        if let Some((id, n)) = fragment {
            *view.fragments_matched.entry((n, id)).or_default() += 1;
        }
        if x == A {
            let origin = self.origin.unwrap_or(t[A]);
            let s = Sample {
                ta: t[A],
                tb: t[B],
                frame_a: frame[A],
                frame_b: frame[B],
                seq,
            };
            if self.pairs[p].sample(s, origin) {
                self.samples += 1;
                if self.samples > self.opts.max_samples {
                    for pair in &mut self.pairs {
                        pair.thin();
                    }
                    self.samples = self.pairs.iter().map(|p| p.samples.len()).sum();
                }
            }
        }
    }

    /// A run of datagrams seen only at point `x` counted as lost on the way (if `x` is
    /// upstream), its datagrams marked on the timeline.
    pub fn commit_run(&mut self, p: usize, x: usize, run: super::pair::Run) {
        let off = self.align.unwrap_or(0.0);
        let on_a = |t: i64| if x == A { t } else { (t as f64 - off) as i64 };
        for &t in &run.times {
            self.timelines.add(p, on_a(t), timeline::ONLY + x, 1);
        }
        let rest = run.count.saturating_sub(run.times.len() as u64);
        if rest > 0 {
            self.timelines.add(
                p,
                on_a(run.last_ns),
                timeline::ONLY + x,
                rest.min(u32::MAX as u64) as u32,
            );
        }
        self.pairs[p].views[x].commit(run);
    }

    /// An identity whose every copy has left: copies beyond the other point's.
    fn finalize(&mut self, e: u32) {
        let en = &self.entries[e as usize];
        let (p, c) = (en.pair as usize, en.copies);
        let ev = |x: usize| Event {
            frame: en.frame[x],
            ts_ns: en.t[x],
            seq: en.seq,
            fragment: en.fragment,
        };
        let evs = [ev(A), ev(B)];
        let pair = &mut self.pairs[p];
        if c[A] >= 1 && c[B] >= 1 {
            pair.both += 1;
            for x in [A, B] {
                let y = 1 - x;
                let beyond = c[y].saturating_sub(c[x]) as u64;
                if beyond > 0 {
                    let v = &mut pair.views[x];
                    v.beyond += beyond;
                    if v.beyond_events.len() < super::pair::LISTED {
                        v.beyond_events.push(evs[y]);
                    }
                }
            }
        }
        for x in [A, B] {
            pair.views[x].extra += c[x].saturating_sub(1) as u64;
        }
        // Out of its chain of identities at the next sweep: a removal now would miss the
        // cache (the key was last touched a window ago), a sweep reads the table in order.
        self.entries[e as usize].dead = true;
        self.dead.push(e);
        if self.dead.len() >= SWEEP && self.dead.len() * 2 >= self.keys.len() {
            self.sweep();
        }
    }

    /// Drops the settled identities from their chains and the key table, and frees them.
    fn sweep(&mut self) {
        let entries = &mut self.entries;
        let alive = |entries: &[Entry], mut h: u32| {
            while h != NONE && entries[h as usize].dead {
                h = entries[h as usize].next;
            }
            h
        };
        self.keys.retain(|_, head| {
            *head = alive(entries, *head);
            let mut cur = *head;
            while cur != NONE {
                let n = alive(entries, entries[cur as usize].next);
                entries[cur as usize].next = n;
                cur = n;
            }
            *head != NONE
        });
        self.free.extend(self.dead.drain(..));
    }

    /// Datagrams waiting in both windows (for tests of the bound).
    pub fn pending(&self) -> [usize; 2] {
        [self.sides[A].fifo.len(), self.sides[B].fifo.len()]
    }

    /// Identities open (for tests: every one is settled at the end).
    pub fn open_entries(&self) -> usize {
        self.entries.len() - self.free.len() - self.dead.len()
    }
}
