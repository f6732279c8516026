//! The report of `gpcap diff` (its JSON is documented in docs/json.md): for each
//! direction of traffic seen at both points, which point it passes first, what passed
//! there, what arrived at the other, what was lost between (and before), duplicated,
//! reordered, and its one-way delay once the clocks are fitted.

use super::clock::{self, MAX_SKEW_PPM, Signed};
use super::delays::{self, Delay, Delayed};
use super::matcher::{A, B, Matcher};
use super::notes::{ClockMethod, ClockReason, DelayNote, Matching, Note, Pairing};
use super::pair::{Event, PairedBy, Run};
use super::timeline::{self, Bin};
use crate::sinks::analysis::report::wilson;
use gpcap_engine::FlowId;
use serde::Serialize;

/// Bumped when a field is renamed or removed (docs/json.md).
pub const SCHEMA_VERSION: u32 = 1;
/// A direction's floor may move this much across the capture before the clocks are
/// said not to fit one line.
const FLOOR_SPREAD_NS: f64 = 5e6;
/// Segments of the capture over which a floor is checked.
const SEGMENTS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Directions were matched and compared.
    Compared,
    /// A capture holds no game datagram.
    NoGameTraffic,
    /// No flow of one capture is a flow of the other.
    NoCommonFlow,
    /// Flows were paired (by their addresses) but no datagram is in both.
    NoCommonDatagram,
}

/// How the clocks are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockMode {
    /// Fitted from the delays (offset and skew).
    Fit,
    /// The captures share one clock (one host, network namespaces, PTP).
    Same,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockStatus {
    Fitted,
    Same,
    NotFitted,
}

impl ClockStatus {
    /// The word every output uses.
    pub fn word(self) -> &'static str {
        match self {
            ClockStatus::Fitted => "fitted",
            ClockStatus::Same => "same",
            ClockStatus::NotFitted => "not_fitted",
        }
    }
}

/// One capture point.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Point {
    pub name: String,
    pub frames: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub game_datagrams: u64,
    /// Datagrams on the protocol's ports whose checksum failed.
    pub damaged: u64,
    /// Datagrams of flows past the engine's flow table.
    pub untracked: u64,
    pub flows: u64,
    /// Flows with no counterpart at the other point, and their datagrams.
    pub unpaired_flows: u64,
    pub unpaired_datagrams: u64,
    /// Datagrams that left a full matching window early.
    pub evicted_early: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Clock {
    pub status: ClockStatus,
    /// The method (JSON: in words).
    pub method: ClockMethod,
    /// B's clock minus A's, in milliseconds, at A's time `origin_ns` (its first game
    /// datagram); null when not known.
    pub offset_ms: Option<f64>,
    pub origin_ns: Option<i64>,
    /// How much faster B's clock runs than A's, in parts per million.
    pub skew_ppm: Option<f64>,
    /// False when the matched traffic spans under a second: the skew is taken as 0.
    pub skew_estimated: bool,
    /// How far the delays' floor moves across the capture (the largest of the
    /// directions'), in milliseconds.
    pub floor_spread_ms: Option<f64>,
    /// Datagrams the fit rests on and the time they span.
    pub samples: u64,
    pub span_s: f64,
    /// Why it was not fitted.
    pub reason: Option<ClockReason>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bursts {
    /// Runs of datagrams lost between two that arrived.
    pub runs: u64,
    pub longest: u64,
    pub mean: f64,
    /// [length, runs] by length.
    pub lengths: Vec<[u64; 2]>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FragmentLoss {
    /// Fragments of the packet, and this one's id.
    pub count: u16,
    pub id: u16,
    pub sent: u64,
    pub lost: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Events {
    /// Lost between the points: the frame and time at the upstream point.
    pub lost: Vec<Event>,
    /// Frame and time at the downstream point.
    pub reordered: Vec<Event>,
    pub duplicated: Vec<Event>,
    pub late: Vec<Event>,
}

/// One direction of traffic: a flow at A and its counterpart at B.
#[derive(Debug, Clone, Serialize)]
pub struct Direction {
    pub a: FlowId,
    pub b: FlowId,
    pub paired_by: PairedBy,
    /// How the flows were paired (JSON: in words).
    pub pairing: Pairing,
    /// "A" or "B": the point the traffic passes first.
    pub upstream: &'static str,
    pub upstream_by: String,
    /// Datagrams that passed the upstream point (within the comparison).
    pub sent: u64,
    /// Of them, reached the downstream point.
    pub arrived: u64,
    pub lost: u64,
    pub loss: Option<f64>,
    pub loss_low: Option<f64>,
    pub loss_high: Option<f64>,
    /// Sequences never seen at the upstream point (its gaps): lost before it.
    pub lost_before: Option<u64>,
    /// Sequences never seen at the downstream point (its gaps).
    pub gaps_downstream: Option<u64>,
    /// Copies the downstream point saw beyond the upstream's (needs a sequence).
    pub duplicated: Option<u64>,
    /// Copies beyond the first at the upstream point.
    pub duplicated_before: Option<u64>,
    pub reordered: u64,
    /// Seen downstream between datagrams both saw, never upstream.
    pub downstream_only: u64,
    /// Seen upstream but not compared: before (after) the downstream capture ran, or
    /// before the flows were paired and out of the matching window.
    pub not_compared: u64,
    /// Checksum failures at the downstream point (damaged on the way, or at capture).
    pub damaged_downstream: u64,
    pub bursts: Bursts,
    pub fragments: Vec<FragmentLoss>,
    pub delay: Option<Delay>,
    /// Why there are no delays, or what they rest on.
    pub delay_note: Option<DelayNote>,
    pub events: Events,
    #[serde(skip)]
    pub timeline: Vec<Bin>,
    #[serde(skip)]
    pub up: usize,
}

/// A flow seen at one point only.
#[derive(Debug, Clone, Serialize)]
pub struct Unpaired {
    pub point: &'static str,
    pub flow: FlowId,
    pub datagrams: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    pub schema: u32,
    pub verdict: Verdict,
    /// Sentences a reader must see: what could not be measured, and why.
    pub notes: Vec<Note>,
    pub points: [Point; 2],
    /// How datagrams were matched (JSON: in words).
    pub matching: Matching,
    pub window_s: f64,
    pub clock: Clock,
    pub directions: Vec<Direction>,
    /// Flows of one point with no counterpart at the other (the first 1000).
    pub unpaired: Vec<Unpaired>,
    /// The timelines' bins: A's clock at bin 0 and their width.
    pub timeline_origin_ns: i64,
    pub timeline_width_ns: i64,
}

pub const POINT: [&str; 2] = ["A", "B"];

/// Delays as the clocks read them, per pair: `tb - ta`.
fn raw(m: &Matcher, p: usize) -> Vec<f64> {
    m.pairs[p].samples.iter().map(|s| (s.tb - s.ta) as f64).collect()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let k = v.len() / 2;
    Some(*v.select_nth_unstable_by(k, f64::total_cmp).1)
}

/// The reverse direction's pair, by A's addresses.
fn reverse(m: &Matcher, p: usize) -> Option<usize> {
    let id = m.pairs[p].ids[A];
    m.pairs
        .iter()
        .position(|q| q.ids[A].src == id.dst && q.ids[A].dst == id.src)
}

/// Which point each pair passes first, and why.
fn orient(m: &Matcher, mode: ClockMode, medians: &[Option<f64>]) -> Vec<(usize, String)> {
    let n = m.pairs.len();
    let mut out: Vec<Option<(usize, String)>> = vec![None; n];
    let mut mids = Vec::new();
    for p in 0..n {
        let Some(mp) = medians[p] else { continue };
        if mode == ClockMode::Same {
            let up = if mp >= 0.0 { A } else { B };
            out[p] = Some((
                up,
                "the clocks are one (--clock same): it reaches the other point later".into(),
            ));
            continue;
        }
        if let Some(q) = reverse(m, p)
            && let Some(mq) = medians[q]
        {
            let up = if mp > mq { A } else { B };
            out[p] = Some((
                up,
                "timing against the other direction: B's clock minus A's reads larger for traffic from A to B".into(),
            ));
            mids.push((mp + mq) / 2.0);
        }
    }
    let mid = median(mids);
    for p in 0..n {
        if out[p].is_some() {
            continue;
        }
        let v = &m.pairs[p].views;
        out[p] = Some(match (mid, medians[p]) {
            (Some(mid), Some(mp)) => (
                if mp > mid { A } else { B },
                "timing against the conversations that go both ways".into(),
            ),
            _ if v[A].only > 0 && v[B].only == 0 => (A, "A saw datagrams that B did not".into()),
            _ if v[B].only > 0 && v[A].only == 0 => (B, "B saw datagrams that A did not".into()),
            _ => (
                A,
                "assumed: the traffic goes one way and nothing tells which point it passes first".into(),
            ),
        });
    }
    out.into_iter().map(|o| o.unwrap_or((A, String::new()))).collect()
}

/// The fitted clocks: skew, B's clock minus A's (when known), and each pair's line
/// intercept (of `y = ±(tb - ta)` over `x`).
struct Fitted {
    clock: Clock,
    skew: f64,
    offset: Option<f64>,
    intercepts: Vec<Option<f64>>,
    usable: bool,
}

fn fit_clocks(m: &Matcher, mode: ClockMode, ups: &[(usize, String)]) -> Fitted {
    let n = m.pairs.len();
    let samples: u64 = m.pairs.iter().map(|p| p.lines[0].n).sum();
    let span = m.pairs.iter().map(|p| p.lines[0].span()).fold(0.0, f64::max);
    let mut clock = Clock {
        status: ClockStatus::Fitted,
        method: if mode == ClockMode::Same {
            ClockMethod::Same
        } else {
            ClockMethod::LowerEnvelope
        },
        offset_ms: None,
        origin_ns: m.origin,
        skew_ppm: None,
        skew_estimated: false,
        floor_spread_ms: None,
        samples,
        span_s: span / 1e9,
        reason: None,
    };
    if mode == ClockMode::Same {
        clock.status = ClockStatus::Same;
        clock.offset_ms = Some(0.0);
        clock.skew_ppm = Some(0.0);
        return Fitted {
            clock,
            skew: 0.0,
            offset: Some(0.0),
            intercepts: vec![Some(0.0); n],
            usable: true,
        };
    }
    let idx: Vec<usize> = (0..n).filter(|&p| m.pairs[p].lines[0].n > 0).collect();
    if samples < 8 {
        clock.status = ClockStatus::NotFitted;
        clock.reason = Some(ClockReason::TooFew { samples });
        return Fitted {
            clock,
            skew: 0.0,
            offset: None,
            intercepts: vec![None; n],
            usable: false,
        };
    }
    let signed: Vec<Signed> = idx
        .iter()
        .map(|&p| {
            let up = ups[p].0;
            Signed {
                line: &m.pairs[p].lines[up],
                sign: if up == A { 1.0 } else { -1.0 },
            }
        })
        .collect();
    let (skew, ints) = if span >= 1e9 {
        clock.skew_estimated = true;
        clock::fit(&signed, 2.0 * MAX_SKEW_PPM * 1e-6)
    } else {
        (0.0, signed.iter().map(|l| l.line.hull.intercept(0.0)).collect())
    };
    let mut intercepts = vec![None; n];
    for (k, &p) in idx.iter().enumerate() {
        intercepts[p] = Some(ints[k]);
    }
    clock.skew_ppm = Some(skew * 1e6);
    let mut usable = true;
    if skew.abs() * 1e6 > MAX_SKEW_PPM {
        clock.status = ClockStatus::NotFitted;
        let at_bound = skew.abs() * 1e6 >= 2.0 * MAX_SKEW_PPM * 0.999;
        clock.reason = Some(ClockReason::Drift {
            ppm: skew.abs() * 1e6,
            at_bound,
        });
        clock.skew_ppm = None;
        usable = false;
    }
    // The offset, from each conversation that goes both ways.
    let mut offsets = Vec::new();
    for &p in &idx {
        if ups[p].0 != A {
            continue;
        }
        if let Some(q) = reverse(m, p)
            && ups[q].0 == B
            && let (Some(a), Some(b)) = (intercepts[p], intercepts[q])
        {
            offsets.push((a - b) / 2.0);
        }
    }
    let offset = median(offsets).filter(|_| usable);
    clock.offset_ms = offset.map(|o| o / 1e6);
    Fitted {
        clock,
        skew,
        offset,
        intercepts,
        usable,
    }
}

/// One pair's delays, in the upstream point's order, and whether they are above the
/// floor only.
fn delays_of(m: &Matcher, p: usize, up: usize, f: &Fitted) -> (Vec<Delayed>, bool) {
    let origin = m.origin.unwrap_or(0);
    let sign = if up == A { 1.0 } else { -1.0 };
    let above_floor = f.offset.is_none();
    let line_c = f.intercepts[p].unwrap_or(0.0);
    let tl_off = f.offset.or(m.align).unwrap_or(0.0);
    let mut out: Vec<Delayed> = m.pairs[p]
        .samples
        .iter()
        .map(|s| {
            let x = (s.ta - origin) as f64;
            let y = sign * (s.tb - s.ta) as f64;
            let delay = match f.offset {
                Some(off) => y - sign * (off + f.skew * x),
                None => y - (line_c + sign * f.skew * x),
            };
            let (up_ns, down_ns, frame) = if up == A {
                (s.ta, s.tb, s.frame_b)
            } else {
                (s.tb, s.ta, s.frame_a)
            };
            let down_on_a = if up == A {
                (s.tb as f64 - tl_off) as i64
            } else {
                s.ta
            };
            Delayed {
                up_ns,
                down_ns,
                down_on_a,
                delay_ns: delay,
                event: Event {
                    frame,
                    ts_ns: down_ns,
                    seq: s.seq,
                    fragment: None,
                },
            }
        })
        .collect();
    // In A's order: already the upstream order when A is upstream.
    if !out.is_sorted_by_key(|d| d.up_ns) {
        out.sort_unstable_by_key(|d| (d.up_ns, d.event.frame));
    }
    (out, above_floor)
}

/// How far the floor of `d` moves across its time: the largest of its segments' least
/// delay above the direction's least.
fn floor_spread(d: &[Delayed]) -> Option<f64> {
    let (first, last) = (d.first()?.up_ns, d.last()?.up_ns);
    let width = ((last - first) / SEGMENTS as i64).max(1);
    let mut mins = [f64::INFINITY; SEGMENTS];
    let mut counts = [0u32; SEGMENTS];
    for x in d {
        let k = (((x.up_ns - first) / width) as usize).min(SEGMENTS - 1);
        mins[k] = mins[k].min(x.delay_ns);
        counts[k] += 1;
    }
    let floor = mins.iter().copied().fold(f64::INFINITY, f64::min);
    (0..SEGMENTS)
        .filter(|&k| counts[k] >= 8)
        .map(|k| mins[k] - floor)
        .reduce(f64::max)
}

/// Whether a run seen upstream only, from `first` to `last` on its clock, lay wholly
/// within the time the downstream capture ran: the delays seen this way say when it
/// would have arrived. Without a delay seen, nothing says so.
fn within_downstream(m: &Matcher, p: usize, up: usize, run: &Run, d: &[Delayed]) -> bool {
    let down = 1 - up;
    let Some((first_ns, last_ns, _)) = m.sides[down].span else {
        return false;
    };
    if d.is_empty() || run.count == 0 {
        return false;
    }
    // The delay as the clocks read it (downstream time minus upstream time).
    let read: Vec<f64> = d.iter().map(|x| (x.down_ns - x.up_ns) as f64).collect();
    let lo = read.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = read.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // The clocks drift apart over the capture: allow for the skew over its span.
    let drift = m.pairs[p].lines[0].span() * MAX_SKEW_PPM * 1e-6;
    let earliest = run.first_ns as f64 + lo - drift;
    let latest = run.last_ns as f64 + hi + drift;
    earliest >= first_ns as f64 && latest <= last_ns as f64
}

/// The direction of pair `p`, upstream `up`.
fn direction(
    m: &mut Matcher,
    p: usize,
    up: usize,
    by: String,
    f: &Fitted,
    (d, above_floor): (Vec<Delayed>, bool),
) -> Direction {
    let down = 1 - up;
    let mut not_compared = 0;
    for lead in [true, false] {
        let view = &mut m.pairs[p].views[up];
        let run = if lead {
            std::mem::take(&mut view.lead)
        } else {
            std::mem::take(&mut view.tail)
        };
        if within_downstream(m, p, up, &run, &d) {
            m.commit_run(p, up, run);
        } else {
            not_compared += run.count;
        }
    }
    let pair = &m.pairs[p];
    let (v, w) = (&pair.views[up], &pair.views[down]);
    let has_seq = v.has_seq || w.has_seq;
    let flow = |x: usize| {
        m.sides[x]
            .flows
            .get(pair.flows[x] as usize)
            .and_then(|f| f.as_ref())
    };
    let gaps = |x: usize| flow(x).and_then(|f| f.gaps).filter(|_| has_seq).map(|g| g.lost);
    let sent = v.matched + v.only;
    let (lo, hi) = wilson(v.only, sent);
    let mut fragments: std::collections::BTreeMap<(u16, u16), (u64, u64)> = Default::default();
    for (k, n) in &v.fragments_matched {
        fragments.entry(*k).or_default().0 += n;
    }
    for (k, n) in &v.fragments_lost {
        let e = fragments.entry(*k).or_default();
        e.0 += n;
        e.1 += n;
    }
    let bursts = bursts(&v.bursts);
    let mut events = Events {
        lost: v.lost_events.clone(),
        reordered: v.reordered_events.clone(),
        duplicated: if has_seq {
            v.beyond_events.clone()
        } else {
            Vec::new()
        },
        late: Vec::new(),
    };
    let (delay, delay_note) = if !f.usable {
        (None, f.clock.reason.clone().map(DelayNote::NotFitted))
    } else if d.is_empty() {
        (None, Some(DelayNote::NoneAtBoth))
    } else {
        let (delay, late) = delays::summarize(&d, pair.stride, above_floor);
        events.late = late.iter().map(|x| x.event).collect();
        let note = above_floor.then_some(DelayNote::AboveFloor);
        (Some((delay, late)), note)
    };
    let direction = Direction {
        a: pair.ids[A],
        b: pair.ids[B],
        paired_by: pair.by,
        pairing: Pairing {
            ids: pair.ids,
            by: pair.by,
            first: pair.first_seq,
            last: pair.last_seq,
        },
        upstream: POINT[up],
        upstream_by: by,
        sent,
        arrived: v.matched,
        lost: v.only,
        loss: (sent > 0).then(|| v.only as f64 / sent as f64),
        loss_low: (sent > 0).then_some(lo),
        loss_high: (sent > 0).then_some(hi),
        lost_before: gaps(up),
        gaps_downstream: gaps(down),
        duplicated: has_seq.then_some(v.beyond),
        duplicated_before: has_seq.then_some(v.extra),
        reordered: v.reordered,
        downstream_only: w.only,
        not_compared: not_compared + flow(up).map_or(0, |f| f.unpaired),
        damaged_downstream: flow(down).map_or(0, |f| f.damaged),
        bursts,
        fragments: fragments
            .into_iter()
            .map(|((count, id), (sent, lost))| FragmentLoss {
                count,
                id,
                sent,
                lost,
            })
            .collect(),
        delay: delay.as_ref().map(|x| x.0.clone()),
        delay_note,
        events,
        timeline: Vec::new(),
        up,
    };
    if let Some((_, late)) = delay {
        for x in late {
            m.timelines.add(p, x.down_on_a, timeline::LATE + down, 1);
        }
    }
    direction
}

fn bursts(lengths: &std::collections::BTreeMap<u64, u64>) -> Bursts {
    let runs: u64 = lengths.values().sum();
    let lost: u64 = lengths.iter().map(|(l, n)| l * n).sum();
    Bursts {
        runs,
        longest: lengths.keys().next_back().copied().unwrap_or(0),
        mean: if runs > 0 { lost as f64 / runs as f64 } else { 0.0 },
        lengths: lengths.iter().map(|(l, n)| [*l, *n]).collect(),
    }
}

/// The report, once both captures have been read to their end.
pub fn build(mut m: Matcher, names: [String; 2], mode: ClockMode) -> DiffReport {
    let points = [point(&m, A, &names[A]), point(&m, B, &names[B])];
    let medians: Vec<Option<f64>> = (0..m.pairs.len()).map(|p| median(raw(&m, p))).collect();
    let ups = orient(&m, mode, &medians);
    let mut fitted = fit_clocks(&m, mode, &ups);
    let mut notes = Vec::new();
    // A floor that moves is a clock that stepped (or a route that changed): one line
    // cannot take it out.
    let mut delays: Vec<Option<(Vec<Delayed>, bool)>> = (0..m.pairs.len())
        .map(|p| Some(delays_of(&m, p, ups[p].0, &fitted)))
        .collect();
    if fitted.clock.status == ClockStatus::Fitted {
        let spread = delays
            .iter()
            .filter_map(|d| d.as_ref().and_then(|d| floor_spread(&d.0)))
            .reduce(f64::max);
        fitted.clock.floor_spread_ms = spread.map(|s| s / 1e6);
        if let Some(s) = spread.filter(|&s| s > FLOOR_SPREAD_NS) {
            fitted.clock.status = ClockStatus::NotFitted;
            fitted.clock.reason = Some(ClockReason::FloorMoves { ms: s / 1e6 });
            fitted.clock.offset_ms = None;
            fitted.clock.skew_ppm = None;
            fitted.usable = false;
        }
    }
    if fitted.usable && fitted.offset.is_none() && mode == ClockMode::Fit && m.matches > 0 {
        notes.push(Note::OneWayOnly);
    }
    let mut directions = Vec::new();
    for (p, (up, by)) in ups.iter().enumerate() {
        if m.pairs[p].both == 0 {
            notes.push(Note::NoCommonDatagram {
                a: m.pairs[p].ids[A],
                b: m.pairs[p].ids[B],
            });
            continue;
        }
        let taken = delays[p].take().unwrap_or_default();
        let mut d = direction(&mut m, p, *up, by.clone(), &fitted, taken);
        if d.downstream_only > 0 {
            notes.push(Note::DownstreamOnly {
                flow: d.a,
                datagrams: d.downstream_only,
            });
        }
        d.timeline = m.timelines.pairs.get(p).cloned().unwrap_or_default();
        directions.push(d);
    }
    for x in [A, B] {
        if m.sides[x].evicted_early > 0 {
            notes.push(Note::EvictedEarly {
                point: POINT[x],
                datagrams: m.sides[x].evicted_early,
            });
        }
    }
    let verdict = if points.iter().any(|p| p.game_datagrams == 0) {
        Verdict::NoGameTraffic
    } else if m.pairs.is_empty() {
        Verdict::NoCommonFlow
    } else if directions.is_empty() {
        Verdict::NoCommonDatagram
    } else {
        Verdict::Compared
    };
    DiffReport {
        schema: SCHEMA_VERSION,
        verdict,
        notes,
        points,
        matching: Matching,
        window_s: m.opts.window_ns as f64 / 1e9,
        clock: fitted.clock,
        directions,
        unpaired: unpaired(&m),
        timeline_origin_ns: m.timelines.origin_ns,
        timeline_width_ns: m.timelines.width_ns,
    }
}

fn point(m: &Matcher, x: usize, name: &str) -> Point {
    let s = &m.sides[x];
    let flows = s.flows.iter().flatten();
    let unpaired: Vec<_> = flows.clone().filter(|f| f.pair.is_none()).collect();
    Point {
        name: name.to_string(),
        frames: s.span.map_or(0, |x| x.2),
        first_ns: s.span.map(|x| x.0),
        last_ns: s.span.map(|x| x.1),
        game_datagrams: s.datagrams,
        damaged: s.damaged + flows.clone().map(|f| f.damaged).sum::<u64>(),
        untracked: s.untracked,
        flows: flows.count() as u64,
        unpaired_flows: unpaired.len() as u64,
        unpaired_datagrams: unpaired.iter().map(|f| f.datagrams).sum(),
        evicted_early: s.evicted_early,
    }
}

fn unpaired(m: &Matcher) -> Vec<Unpaired> {
    let mut out = Vec::new();
    for x in [A, B] {
        for f in m.sides[x].flows.iter().flatten().filter(|f| f.pair.is_none()) {
            if out.len() < super::pair::LISTED {
                out.push(Unpaired {
                    point: POINT[x],
                    flow: f.id,
                    datagrams: f.datagrams,
                });
            }
        }
    }
    out
}
