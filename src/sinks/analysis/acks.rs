//! Ack analysis for definitions with `ack` and `ack-bits` roles: which of a direction's
//! sequences the other direction reported received, how many never were, and the round
//! trip from a packet to the first packet of the other direction that acks it.
//!
//! The acks are what the peer's packets say, so the analysis does not depend on where
//! the capture was taken; the capture's own sequence gaps do. A packet dropped before
//! the capture point is missing and never acked; one dropped after it is captured and
//! never acked; one the capture missed but the peer got is acked and absent.

use serde::Serialize;
use std::collections::BTreeMap;

/// Sequences remembered behind the newest: acks refer to recent sequences (ack-bits
/// spans at most 32), so older ones are settled.
const WINDOW: i128 = 1024;
/// The window while the other direction has acked nothing: a direction nobody acks (a
/// flood of one-way flows) holds 1 KB, not 8; a sequence this far behind before the
/// first ack (96 past ack-bits' span) is settled as never acked.
const UNACKED_WINDOW: i128 = 128;
/// Bytes a tracker may hold outside the statistics' flow state budget: itself and the
/// window before the first ack and a few runs (so that one-way flows cannot spend it).
pub const UNBUDGETED: usize =
    size_of::<AckTracker>() + UNACKED_WINDOW as usize * 68 / 8 + 4 * size_of::<(u64, u64)>();
/// Runs of never-acked sequences listed per flow (counts are exact beyond).
const MAX_RUNS: usize = 256;
/// Seconds of the RTT timeline kept per flow.
const MAX_SECONDS: usize = 86_400;
const NOT_CAPTURED: i64 = i64::MIN;

/// What the analysis settled for one captured sequence: its round trip, or that it was
/// never acked; that the peer NAKed it; each further copy of it. Kept only when asked
/// ([`AckTracker::keep_log`]: the filters' and `dissect`'s verdicts), so that `analyze`
/// keeps nothing per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// When the copy the round trip is timed from was captured (a [`Note::Fate`]), the
    /// first copy's (a [`Note::Naked`]), or this copy's (a [`Note::Copy`]).
    pub sent_ns: i64,
    /// When the sequence's first copy was captured: which use of the number it is.
    pub first_ns: i64,
    /// Microseconds, [`Settled::NEVER`] or [`Settled::UNTIMED`] (a [`Note::Fate`]).
    pub rtt_us: u32,
    /// Its wire value (the sequence's own width).
    pub seq: u64,
    pub note: Note,
}

/// What a [`Settled`] says of its sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// Acked (after `rtt_us`, or untimed) or never acked.
    Fate,
    /// The peer NAKed it.
    Naked,
    /// A further copy, captured at `sent_ns` (resent, or duplicated on the way);
    /// `spurious`: after the capture saw its ack.
    Copy { spurious: bool },
}

impl Settled {
    pub const NEVER: u32 = u32::MAX;
    /// Acked, but no round trip could be taken (Karn, an echo of no captured copy).
    pub const UNTIMED: u32 = u32::MAX - 1;

    /// Whether `us` is a round trip (not NEVER nor UNTIMED).
    pub fn is_rtt(us: u32) -> bool {
        us < Settled::UNTIMED
    }
}

/// A message stream of a direction: its number in the definition and its key values.
pub type StreamId = (u8, [i64; 2]);

/// What the ack analysis settled for every captured sequence of a run, by direction: the
/// display filter's `never_acked` and `rtt`, known only once later packets were seen, so
/// found by a pass of their own before the filter's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AckFacts {
    /// By direction and wire sequence, in capture order (a sequence number recurs only
    /// after it wrapped).
    by_seq: hashbrown::HashMap<(crate::engine::FlowId, u64), Vec<Fact>>,
    /// The same for message streams, by direction, stream, key and sequence.
    by_stream: hashbrown::HashMap<(crate::engine::FlowId, StreamId, u64), Vec<Fact>>,
}

/// One [`Settled`] without its sequence (the map's key holds it).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fact {
    sent_ns: i64,
    first_ns: i64,
    rtt_us: u32,
    note: Note,
}

/// What the ack analysis said of one copy of a sequence (a datagram's, or a message's in
/// its stream), for the filter's words and `dissect`'s verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyVerdict {
    /// Round trip in µs, [`Settled::NEVER`] or [`Settled::UNTIMED`]; None: not settled
    /// (not acked when the capture ended).
    pub fate: Option<u32>,
    /// The peer NAKed the sequence.
    pub naked: bool,
    /// This copy is a retransmission: Some(spurious).
    pub copy: Option<bool>,
}

impl AckFacts {
    pub fn add(&mut self, flow: crate::engine::FlowId, log: Vec<Settled>) {
        for s in log {
            self.by_seq.entry((flow, s.seq)).or_default().push(Fact::of(&s));
        }
    }

    pub fn add_stream(&mut self, flow: crate::engine::FlowId, stream: StreamId, log: Vec<Settled>) {
        for s in log {
            (self.by_stream.entry((flow, stream, s.seq)))
                .or_default()
                .push(Fact::of(&s));
        }
    }

    /// [`AckFacts::of`] for a message of `flow` with sequence `seq` in `stream`.
    pub fn of_stream(
        &self,
        flow: crate::engine::FlowId,
        stream: (u8, [i64; 2]),
        seq: u64,
        ts_ns: i64,
    ) -> Option<u32> {
        latest(self.by_stream.get(&(flow, stream, seq))?, ts_ns)
    }

    /// The round trip in µs of the packet of `flow` with sequence `seq` seen at `ts_ns`
    /// ([`Settled::NEVER`]: never acked, [`Settled::UNTIMED`]: acked, not timed); None
    /// when it was not settled (acks unknown, or not acked yet when the capture ended).
    pub fn of(&self, flow: crate::engine::FlowId, seq: u64, ts_ns: i64) -> Option<u32> {
        latest(self.by_seq.get(&(flow, seq))?, ts_ns)
    }

    /// Everything said of the copy of `seq` captured at `ts_ns` (a datagram's sequence).
    pub fn verdict(&self, flow: crate::engine::FlowId, seq: u64, ts_ns: i64) -> CopyVerdict {
        verdict(self.by_seq.get(&(flow, seq)).map_or(&[], Vec::as_slice), ts_ns)
    }

    /// [`AckFacts::verdict`] for a message's sequence in `stream`.
    pub fn verdict_in_stream(
        &self,
        flow: crate::engine::FlowId,
        stream: StreamId,
        seq: u64,
        ts_ns: i64,
    ) -> CopyVerdict {
        let v = self.by_stream.get(&(flow, stream, seq));
        verdict(v.map_or(&[], Vec::as_slice), ts_ns)
    }
}

impl Fact {
    fn of(s: &Settled) -> Fact {
        Fact {
            sent_ns: s.sent_ns,
            first_ns: s.first_ns,
            rtt_us: s.rtt_us,
            note: s.note,
        }
    }
}

/// The verdict of the latest use of a number at or before `ts_ns`.
fn latest(v: &[Fact], ts_ns: i64) -> Option<u32> {
    let mut at = None;
    for f in v.iter().filter(|f| f.note == Note::Fate) {
        if f.sent_ns <= ts_ns && at.is_none_or(|(t, _)| f.sent_ns >= t) {
            at = Some((f.sent_ns, f.rtt_us));
        }
    }
    at.map(|(_, rtt)| rtt)
}

/// What the facts of one number say of its copy at `ts_ns`: its use is the one whose
/// first copy is the latest at or before it.
fn verdict(v: &[Fact], ts_ns: i64) -> CopyVerdict {
    let first = v.iter().map(|f| f.first_ns).filter(|&t| t <= ts_ns).max();
    let of_use = |f: &&Fact| Some(f.first_ns) == first;
    CopyVerdict {
        fate: latest(v, ts_ns),
        naked: v.iter().filter(of_use).any(|f| f.note == Note::Naked),
        copy: v.iter().find_map(|f| match f.note {
            Note::Copy { spurious } if f.sent_ns == ts_ns => Some(spurious),
            _ => None,
        }),
    }
}

/// A word's `n` lowest bits (`n` ≤ 64).
fn low(n: usize) -> u64 {
    u64::MAX.checked_shr(64 - n as u32).unwrap_or(0)
}

/// Settled sequences kept per direction (24 bytes each).
const MAX_LOG: usize = 1 << 24;

/// Per sending direction: its sequences, settled as the other direction acks them.
///
/// The window grows with the sequences actually sent, a power of two at a time up to
/// [`WINDOW`] (8 bytes and four bits a sequence) once the other direction acks, so a flow of
/// one datagram holds one slot and none more than 8.7 KB; the timeline and histogram
/// grow with the acks, within the statistics' flow state budget.
#[derive(Debug, Clone)]
pub struct AckTracker {
    /// Settled captured sequences, when kept.
    log: Option<Vec<Settled>>,
    /// Width of the sequences in bits (the flow's own counter).
    bits: u32,
    /// When each sequence's first datagram was captured (NOT_CAPTURED: a gap), by
    /// extended sequence modulo the window's length.
    sent_ns: Vec<i64>,
    /// Whether each slot's sequence was acked, one bit a slot.
    acked: Vec<u64>,
    /// Whether it was NAKed, whether a further copy of it was captured (resent), and
    /// whether an ack named it one by one (single, bits, a range).
    naked: Vec<u64>,
    resent: Vec<u64>,
    named: Vec<u64>,
    /// The newest sequence a cumulative ack covered (extended): it is not walked again.
    cumulative: Option<i128>,
    /// An ack naming sequences one by one (single, bits, a range) was seen: a sequence
    /// acked only by a later cumulative ack then lost its own ack.
    individual: bool,
    /// Round trips taken from echoed send times, and from first copies.
    echoed_samples: u64,
    first_copy_samples: u64,
    first: Option<i128>,
    highest: i128,
    /// The newest sequence the peer acked (extended).
    peer_ack: Option<i128>,
    /// The other direction sent a packet with acks: without one, nothing is judged.
    peer_acks: bool,
    rtt: RttHist,
    /// Per second since the timeline start: (second, samples, sum µs, max µs).
    seconds: Vec<(u32, u32, u64, u64)>,
    stats: AckStats,
}

impl Default for AckTracker {
    fn default() -> Self {
        AckTracker::new(16)
    }
}

/// What the ack analysis found for one direction (its own sequences).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AckStats {
    /// Sequences from the first to the newest seen, gaps included.
    pub sequences: u64,
    /// Acked by the other direction.
    pub acked: u64,
    /// Acked, but not in the capture (the capture missed what the peer received).
    pub acked_not_captured: u64,
    /// Never acked although the peer acked newer ones: lost on the way, or never
    /// delivered whole (a fragmented packet missing a fragment).
    pub never_acked: u64,
    /// Not acked when the capture ended (newer than the peer's last ack).
    pub unacked_at_end: u64,
    /// never_acked / (sequences - unacked_at_end).
    pub ack_implied_loss: f64,
    /// Acks timestamped before the packet they ack: not a round trip, left out of rtt_ms.
    pub rtt_before_sent: u64,
    /// Runs of never-acked sequences as [first, last] wire values (the first 256 runs).
    pub never_acked_runs: Vec<(u64, u64)>,
    /// Of those acked, by which mechanism first: one by one (`role=ack`), by ack-bits,
    /// by a cumulative ack, by a range.
    pub acked_by: AckedBy,
    /// Acked only by a later cumulative ack while the peer acks one by one: the
    /// sequence arrived, its own ack did not (lost, or not captured).
    pub acks_lost: u64,
    /// Distinct sequences the peer NAKed (of those sent: not newer than the newest).
    pub naked: u64,
    /// Copies of a captured sequence captured again (resent, or duplicated on the way),
    /// and of those, sent after the capture saw its ack.
    pub retransmissions: u64,
    pub spurious_retransmissions: u64,
    /// Never acked, but resent or NAKed: the data was lost on the way (not only its ack).
    pub never_acked_resent_or_naked: u64,
    /// Acks (items) naming sequences newer than any this direction sent, and NAKs of
    /// such: no sequence there was sent (a wrong field, or forged).
    pub acks_of_unsent: u64,
    pub naks_of_unsent: u64,
    /// Where round trips come from: "echoed send times" (an ack's echoed time matched
    /// to the copy sent then), "first copies" (a sequence's first captured copy to the
    /// first ack of it), or both.
    pub rtt_source: Option<String>,
    /// Round trip from a packet's first datagram to the first packet of the other
    /// direction that acks it, in milliseconds.
    pub rtt_ms: Option<RttSummary>,
    /// Per second of capture time: [second, acks, mean ms, max ms].
    pub rtt_timeline: Vec<(u32, u32, f64, f64)>,
}

/// Sequences acked, by the mechanism that acked each first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AckedBy {
    pub single: u64,
    pub bits: u64,
    pub cumulative: u64,
    pub ranges: u64,
}

impl AckedBy {
    fn add(&mut self, o: &AckedBy) {
        self.single += o.single;
        self.bits += o.bits;
        self.cumulative += o.cumulative;
        self.ranges += o.ranges;
    }
}

/// How an ack names what it acks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Single,
    Bits,
    Cumulative,
    Range,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RttSummary {
    pub samples: u64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// A log-linear histogram of microseconds: 32 buckets per power of two (3 % wide),
/// sparse, so bounded and exact to merge whatever the traffic.
#[derive(Debug, Clone, Default)]
struct RttHist {
    buckets: BTreeMap<u16, u64>,
    samples: u64,
    min: u64,
    max: u64,
}

const SUB: u32 = 32;

fn bucket_of(us: u64) -> u16 {
    if us < SUB as u64 {
        return us as u16;
    }
    let e = 63 - us.leading_zeros(); // ≥ 5
    let mantissa = (us >> (e - 5)) as u32 & (SUB - 1);
    ((e - 4) * SUB + mantissa) as u16
}

/// The middle of a bucket, in microseconds.
fn bucket_value(b: u16) -> f64 {
    let b = b as u32;
    if b < SUB {
        return b as f64;
    }
    let e = b / SUB + 4;
    let m = b % SUB;
    let low = ((SUB + m) as u64) << (e - 5);
    low as f64 + ((1u64 << (e - 5)) as f64 - 1.0) / 2.0
}

impl RttHist {
    fn add(&mut self, us: u64) {
        *self.buckets.entry(bucket_of(us)).or_default() += 1;
        self.min = if self.samples == 0 { us } else { self.min.min(us) };
        self.max = self.max.max(us);
        self.samples += 1;
    }

    fn quantile(&self, q: f64) -> f64 {
        let rank = ((q * self.samples as f64).ceil() as u64).clamp(1, self.samples);
        let mut seen = 0;
        for (&b, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return bucket_value(b).clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }

    fn summary(&self) -> Option<RttSummary> {
        (self.samples > 0).then(|| RttSummary {
            samples: self.samples,
            min: self.min as f64 / 1e3,
            p50: self.quantile(0.50) / 1e3,
            p90: self.quantile(0.90) / 1e3,
            p99: self.quantile(0.99) / 1e3,
            max: self.max as f64 / 1e3,
        })
    }
}

impl AckTracker {
    /// Keeps what each captured sequence settled as (see [`Settled`]).
    pub fn keep_log(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    /// Logs sequence `ext`, timed from `sent_ns`, as settled with `rtt_us`.
    fn log(&mut self, ext: i128, sent_ns: i64, rtt_us: u32) {
        self.note(ext, sent_ns, rtt_us, Note::Fate)
    }

    /// Logs what `note` says of sequence `ext` (in the window) at `sent_ns`.
    fn note(&mut self, ext: i128, sent_ns: i64, rtt_us: u32, note: Note) {
        if self.log.is_none() || self.sent_ns.is_empty() {
            return;
        }
        let seq = ext as u64 & self.mask();
        let first_ns = self.sent_ns[self.index(ext)];
        if let Some(log) = self.log.as_mut()
            && sent_ns != NOT_CAPTURED
            && first_ns != NOT_CAPTURED
            && log.len() < MAX_LOG
        {
            log.push(Settled {
                sent_ns,
                first_ns,
                rtt_us,
                seq,
                note,
            });
        }
    }

    /// Logs that the peer NAKed sequence `ext` (leaving the window), when it did.
    fn note_naked(&mut self, ext: i128) {
        let i = self.index(ext);
        if self.log.is_some() && Self::bit(&self.naked, i) {
            self.note(ext, self.sent_ns[i], 0, Note::Naked);
        }
    }

    /// A tracker for sequences `bits` wide (1..=64).
    pub fn new(bits: u32) -> Self {
        AckTracker {
            bits: bits.clamp(1, 64),
            log: None,
            sent_ns: Vec::new(),
            acked: Vec::new(),
            naked: Vec::new(),
            resent: Vec::new(),
            named: Vec::new(),
            cumulative: None,
            individual: false,
            echoed_samples: 0,
            first_copy_samples: 0,
            first: None,
            highest: 0,
            peer_ack: None,
            peer_acks: false,
            rtt: RttHist::default(),
            seconds: Vec::new(),
            stats: AckStats::default(),
        }
    }

    fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.bits)
    }

    /// `s` (its low `width` bits on the wire) extended next to the newest sequence: the
    /// nearer way round, as the sequence analysis wraps.
    fn extend(&self, s: u64, width: u32) -> i128 {
        let mask = u64::MAX >> (64 - width.clamp(1, 64));
        let d = s.wrapping_sub(self.highest as u64) & mask;
        let d = if d > mask / 2 + 1 {
            d as i128 - (mask as i128 + 1)
        } else {
            d as i128
        };
        self.highest + d
    }

    /// Bytes this tracker holds, itself included (the analysis' memory accounting).
    pub fn heap_bytes(&self) -> usize {
        size_of::<Self>()
            + self.sent_ns.capacity() * 8
            + self.acked.capacity() * 8
            + self.naked.capacity() * 8
            + self.resent.capacity() * 8
            + self.named.capacity() * 8
            + self.seconds.capacity() * 24
            + self.rtt.buckets.len() * 48
            + self.stats.never_acked_runs.capacity() * 16
            + self
                .log
                .as_ref()
                .map_or(0, |l| l.capacity() * size_of::<Settled>())
    }

    fn index(&self, ext: i128) -> usize {
        (ext as u64 as usize) & (self.sent_ns.len() - 1)
    }

    fn is_acked(&self, ext: i128) -> bool {
        let i = self.index(ext);
        self.acked[i / 64] >> (i % 64) & 1 == 1
    }

    fn set_acked(&mut self, ext: i128, on: bool) {
        let i = self.index(ext);
        if on {
            self.acked[i / 64] |= 1 << (i % 64);
        } else {
            self.acked[i / 64] &= !(1 << (i % 64));
        }
    }

    /// A slot's bit in one of the per-slot bitmaps.
    fn bit(map: &[u64], i: usize) -> bool {
        map.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Makes the window hold `span` sequences (up to [`WINDOW`]), keeping the newest.
    fn grow(&mut self, span: i128) {
        let want = (span.clamp(1, WINDOW) as usize).next_power_of_two();
        let have = self.sent_ns.len();
        if want <= have {
            return;
        }
        let old = std::mem::replace(&mut self.sent_ns, vec![NOT_CAPTURED; want]);
        let words = want.div_ceil(64);
        let maps = [
            std::mem::replace(&mut self.acked, vec![0; words]),
            std::mem::replace(&mut self.naked, vec![0; words]),
            std::mem::replace(&mut self.resent, vec![0; words]),
            std::mem::replace(&mut self.named, vec![0; words]),
        ];
        for k in 0..have as i128 {
            let ext = self.highest - k;
            let i = (ext as u64 as usize) & (have - 1);
            let j = self.index(ext);
            self.sent_ns[j] = old[i];
            let maps_now = [
                &mut self.acked,
                &mut self.naked,
                &mut self.resent,
                &mut self.named,
            ];
            for (new, old) in maps_now.into_iter().zip(&maps) {
                if Self::bit(old, i) {
                    new[j / 64] |= 1 << (j % 64);
                }
            }
        }
    }

    /// A datagram of this direction with sequence `s` was captured at `ts_ns`.
    pub fn sent(&mut self, s: u64, ts_ns: i64) {
        self.sent_part(s, ts_ns, false)
    }

    /// [`AckTracker::sent`]; `part`: one of several datagrams of one sequence (a
    /// fragment), whose siblings are no copies.
    pub fn sent_part(&mut self, s: u64, ts_ns: i64, part: bool) {
        let s = s & self.mask();
        let Some(first) = self.first else {
            self.first = Some(s as i128);
            self.highest = s as i128;
            self.stats.sequences = 1;
            self.grow(1);
            let i = self.index(s as i128);
            self.sent_ns[i] = ts_ns;
            return;
        };
        let ext = self.extend(s, self.bits);
        if ext > self.highest {
            let most = if self.peer_acks { WINDOW } else { UNACKED_WINDOW };
            self.grow((ext - first + 1).min(most));
            let len = self.sent_ns.len() as i128;
            let from = (self.highest + 1).max(ext - len + 1);
            // Sequences skipped past the whole window are settled unseen and unacked.
            if from > self.highest + 1 {
                self.settle_run(self.highest + 1, from - 1);
            }
            self.evict(from, ext, first);
            self.stats.sequences = self.stats.sequences.saturating_add((ext - self.highest) as u64);
            self.highest = ext;
        }
        if ext > self.highest - self.sent_ns.len() as i128 && ext >= first {
            let i = self.index(ext);
            if self.sent_ns[i] == NOT_CAPTURED {
                self.sent_ns[i] = ts_ns;
            } else if !part {
                self.copy_of(i, ext, ts_ns);
            }
        }
    }

    /// Slot `i`'s sequence `ext` was captured again at `ts_ns`: resent (or duplicated on the way), and
    /// spuriously when its ack was seen before.
    fn copy_of(&mut self, i: usize, ext: i128, ts_ns: i64) {
        self.stats.retransmissions += 1;
        let spurious = Self::bit(&self.acked, i);
        if spurious {
            self.stats.spurious_retransmissions += 1;
        }
        self.note(ext, ts_ns, 0, Note::Copy { spurious });
        self.resent[i / 64] |= 1 << (i % 64);
    }

    /// The window moves up to `ext`: the slots of `from..=ext` are taken from the
    /// sequences a window's length older, which are settled as never acked when not
    /// acked (and sent: not older than `first`), in order. A word of slots at a time, a
    /// run of unacked sequences at once: random sequences (a payload that is not the
    /// protocol) jump past the whole window on every packet.
    fn evict(&mut self, from: i128, ext: i128, first: i128) {
        let len = self.sent_ns.len() as i128;
        let mut k = from;
        while k <= ext {
            let i = self.index(k);
            let c = ((ext - k + 1) as usize).min(64 - i % 64).min(len as usize - i);
            let slots = low(c);
            let sent = low((first + len - k).clamp(0, c as i128) as usize);
            let mut unacked = !(self.acked[i / 64] >> (i % 64)) & slots & !sent;
            while unacked != 0 {
                let at = unacked.trailing_zeros();
                let run = (!(unacked >> at)).trailing_zeros();
                let a = k + at as i128;
                let b = a + run as i128 - 1;
                self.settle_each(a - len, b - len);
                if self.log.is_some() {
                    for x in a..=b {
                        self.log(x - len, self.sent_ns[self.index(x)], Settled::NEVER);
                    }
                }
                unacked &= !(low(run as usize) << at);
            }
            let lost = ((self.naked[i / 64] | self.resent[i / 64]) >> (i % 64))
                & !(self.acked[i / 64] >> (i % 64))
                & slots
                & !sent;
            self.stats.never_acked_resent_or_naked += lost.count_ones() as u64;
            if self.log.is_some() {
                let mut m = (self.naked[i / 64] >> (i % 64)) & slots & !sent;
                while m != 0 {
                    let at = m.trailing_zeros();
                    m &= m - 1;
                    self.note_naked(k + at as i128 - len);
                }
            }
            self.count_acks_lost(i, slots & !sent);
            self.sent_ns[i..i + c].fill(NOT_CAPTURED);
            self.acked[i / 64] &= !(slots << (i % 64));
            self.naked[i / 64] &= !(slots << (i % 64));
            self.resent[i / 64] &= !(slots << (i % 64));
            self.named[i / 64] &= !(slots << (i % 64));
            k += c as i128;
        }
    }

    /// Of the slots `mask` (from slot `i`, within its word) leaving the window: those
    /// captured and acked, but named by no ack while the peer acks one by one — their
    /// own acks were lost (or not captured), a cumulative ack covered them.
    fn count_acks_lost(&mut self, i: usize, mask: u64) {
        if !self.individual {
            return;
        }
        let mut m = mask & (self.acked[i / 64] >> (i % 64)) & !(self.named[i / 64] >> (i % 64));
        while m != 0 {
            let at = m.trailing_zeros() as usize;
            m &= m - 1;
            if self.sent_ns[i + at] != NOT_CAPTURED {
                self.stats.acks_lost += 1;
            }
        }
    }

    /// Sequences `a..=b` (extended) settled as never acked, as many calls of
    /// [`Self::settle_run`] for each in turn would: with the list of runs full, the
    /// last run still grows from the first of them that follows it.
    fn settle_each(&mut self, a: i128, b: i128) {
        let mask = self.mask();
        let runs = &self.stats.never_acked_runs;
        if runs.len() < MAX_RUNS {
            return self.settle_run(a, b);
        }
        self.stats.never_acked = self.stats.never_acked.saturating_add((b - a + 1) as u64);
        let (span, a, b) = ((b - a) as u64, a as u64 & mask, b as u64 & mask);
        if let Some(last) = self.stats.never_acked_runs.last_mut()
            && last.1.wrapping_add(1).wrapping_sub(a) & mask <= span
        {
            last.1 = b;
        }
    }

    /// Sequences `a..=b` (extended) settled as never acked.
    fn settle_run(&mut self, a: i128, b: i128) {
        self.stats.never_acked = self.stats.never_acked.saturating_add((b - a + 1) as u64);
        let mask = self.mask();
        let (a, b) = (a as u64 & mask, b as u64 & mask);
        let runs = &mut self.stats.never_acked_runs;
        let full = runs.len() >= MAX_RUNS;
        match runs.last_mut() {
            Some(last) if last.1.wrapping_add(1) & mask == a => last.1 = b,
            _ if !full => runs.push((a, b)),
            _ => {}
        }
    }

    /// A packet of the other direction at `ts_ns` acks `ack` (its low `width` bits of
    /// this direction's sequence) and, for each bit i set in `bits`, `ack - i`.
    /// `second`: its second on the report's timeline.
    pub fn acked(&mut self, ack: u64, width: u32, bits: u32, ts_ns: i64, second: Option<u32>) {
        self.acked_from(ack, width, bits, ts_ns, second, None, Mechanism::Bits)
    }

    /// An ack of one sequence alone (no ack-bits beside it).
    pub fn acked_one(&mut self, ack: u64, width: u32, ts_ns: i64, second: Option<u32>) {
        self.acked_from(ack, width, 1, ts_ns, second, None, Mechanism::Single)
    }

    /// [`AckTracker::acked_one`], the round trip timed from `echoed`: the
    /// capture time of the datagram whose send time the ack echoes (None: the echo
    /// matched no captured datagram, and no round trip is taken).
    pub fn acked_echo(&mut self, ack: u64, width: u32, ts_ns: i64, second: Option<u32>, echoed: Option<i64>) {
        self.acked_from(
            ack,
            width,
            1,
            ts_ns,
            second,
            Some(echoed.unwrap_or(NOT_CAPTURED)),
            Mechanism::Single,
        )
    }

    /// `echoed`: the round trip starts there, not at the sequence's first datagram.
    #[allow(clippy::too_many_arguments)]
    fn acked_from(
        &mut self,
        ack: u64,
        width: u32,
        bits: u32,
        ts_ns: i64,
        second: Option<u32>,
        echoed: Option<i64>,
        how: Mechanism,
    ) {
        self.peer_acks = true;
        self.individual = true;
        let Some(first) = self.first else {
            return;
        };
        let newest = self.extend(ack, width.min(self.bits));
        if newest <= self.highest {
            self.peer_ack = Some(self.peer_ack.map_or(newest, |p| p.max(newest)));
        } else {
            self.stats.acks_of_unsent += 1;
        }
        let len = self.sent_ns.len() as i128;
        let mut bits = bits;
        while bits != 0 {
            let i = bits.trailing_zeros();
            bits &= bits - 1;
            let ext = newest - i as i128;
            if ext > self.highest || ext <= self.highest - len || ext < first {
                continue;
            }
            let j = self.index(ext);
            self.named[j / 64] |= 1 << (j % 64);
            if self.is_acked(ext) {
                continue;
            }
            self.newly_acked(ext, how, ts_ns, second, echoed);
        }
    }

    /// Sequence `ext` (in the window, not acked before) is acked now by `how`: counted,
    /// and its round trip taken from `echoed` (an echo that matched no copy: none) or
    /// from its first captured copy.
    fn newly_acked(
        &mut self,
        ext: i128,
        how: Mechanism,
        ts_ns: i64,
        second: Option<u32>,
        echoed: Option<i64>,
    ) {
        self.set_acked(ext, true);
        self.stats.acked += 1;
        let by = &mut self.stats.acked_by;
        match how {
            Mechanism::Single => by.single += 1,
            Mechanism::Bits => by.bits += 1,
            Mechanism::Cumulative => by.cumulative += 1,
            Mechanism::Range => by.ranges += 1,
        }
        let sent_ns = self.sent_ns[self.index(ext)];
        if sent_ns == NOT_CAPTURED {
            self.stats.acked_not_captured += 1;
            return;
        }
        let sent_ns = match echoed {
            Some(NOT_CAPTURED) => return self.log(ext, sent_ns, Settled::UNTIMED),
            Some(t) => t,
            None => sent_ns,
        };
        // An ack timestamped before its packet (clocks or a crafted capture): no
        // round trip can be taken from it.
        if ts_ns < sent_ns {
            self.stats.rtt_before_sent += 1;
            return self.log(ext, sent_ns, Settled::UNTIMED);
        }
        if echoed.is_some() {
            self.echoed_samples += 1;
        } else {
            self.first_copy_samples += 1;
        }
        let us = ((ts_ns - sent_ns) / 1000) as u64;
        self.rtt.add(us);
        self.log(ext, sent_ns, us.min(Settled::UNTIMED as u64 - 1) as u32);
        if let Some(sec) = second {
            let full = self.seconds.len() >= MAX_SECONDS;
            match self.seconds.last_mut() {
                Some(last) if last.0 == sec => {
                    last.1 += 1;
                    last.2 += us;
                    last.3 = last.3.max(us);
                }
                _ if !full => self.seconds.push((sec, 1, us, us)),
                _ => {}
            }
        }
    }

    /// A cumulative ack at `ts_ns`: every sequence below `n` (`inclusive`: up to it),
    /// `n` being its low `width` bits. Only what is in the window and not covered by an
    /// earlier cumulative ack is walked, so an ack jumping far costs the window at most;
    /// one naming sequences never sent counts them (`acks_of_unsent`). With an
    /// `echoed` time the newest covered is timed from it; without, and when the peer
    /// acks only cumulatively, from its first copy unless it was resent (Karn).
    #[allow(clippy::too_many_arguments)]
    pub fn acked_cumulative(
        &mut self,
        n: u64,
        width: u32,
        inclusive: bool,
        ts_ns: i64,
        second: Option<u32>,
        echoed: Option<Option<i64>>,
    ) {
        self.peer_acks = true;
        let Some(first) = self.first else {
            return;
        };
        let mut top = self.extend(n, width.min(self.bits)) - i128::from(!inclusive);
        if top > self.highest {
            self.stats.acks_of_unsent += 1;
            top = self.highest;
        }
        if top < first {
            return;
        }
        self.peer_ack = Some(self.peer_ack.map_or(top, |p| p.max(top)));
        let len = self.sent_ns.len() as i128;
        let low = (self.highest - len + 1)
            .max(first)
            .max(self.cumulative.map_or(i128::MIN, |c| c + 1));
        self.cumulative = Some(self.cumulative.map_or(top, |c| c.max(top)));
        if low > top {
            return;
        }
        // Timed: the newest newly covered, from its echo or (Karn) its one copy.
        let timed = match echoed {
            Some(e) => Some(e.unwrap_or(NOT_CAPTURED)),
            None if !self.individual && !Self::bit(&self.resent, self.index(top)) => None,
            None => Some(NOT_CAPTURED),
        };
        self.walk_unacked(low, top, |t, ext| {
            let echo = if ext == top { timed } else { Some(NOT_CAPTURED) };
            t.newly_acked(ext, Mechanism::Cumulative, ts_ns, second, echo);
        });
    }

    /// A range `a..=b` (low `width` bits of each) acked at `ts_ns`, the end's round trip
    /// timed from `echoed` when given. A range reaching past the newest sequence sent
    /// counts once in `acks_of_unsent`; one whose end comes before its start is ignored.
    #[allow(clippy::too_many_arguments)]
    pub fn acked_range(
        &mut self,
        a: u64,
        b: u64,
        width: u32,
        ts_ns: i64,
        second: Option<u32>,
        echoed: Option<Option<i64>>,
    ) {
        self.peer_acks = true;
        self.individual = true;
        let Some((lo, hi)) = self.clamp_range(a, b, width, false) else {
            return;
        };
        self.peer_ack = Some(self.peer_ack.map_or(hi, |p| p.max(hi)));
        self.mark_named(lo, hi);
        self.walk_unacked(lo, hi, |t, ext| {
            let echo = if ext == hi {
                echoed.map(|e| e.unwrap_or(NOT_CAPTURED))
            } else {
                None
            };
            t.newly_acked(ext, Mechanism::Range, ts_ns, second, echo);
        });
    }

    /// The peer says `a..=b` did not arrive: each counted NAKed once (captured or not).
    pub fn naked_range(&mut self, a: u64, b: u64, width: u32) {
        // The peer reports what it got: its NAKs judge the sequences as its acks do.
        self.peer_acks = true;
        let Some((lo, hi)) = self.clamp_range(a, b, width, true) else {
            return;
        };
        let mut k = lo;
        while k <= hi {
            let i = self.index(k);
            let c = ((hi - k + 1) as usize)
                .min(64 - i % 64)
                .min(self.sent_ns.len() - i);
            let new = low(c) & !(self.naked[i / 64] >> (i % 64));
            self.stats.naked += new.count_ones() as u64;
            self.naked[i / 64] |= new << (i % 64);
            k += c as i128;
        }
    }

    /// `a..=b` extended and cut to the window; None when nothing of it is there. A range
    /// past the newest sequence counts once as naming unsent ones (a NAK's in
    /// `naks_of_unsent`).
    fn clamp_range(&mut self, a: u64, b: u64, width: u32, nak: bool) -> Option<(i128, i128)> {
        let first = self.first?;
        let w = width.min(self.bits);
        let (lo, mut hi) = (self.extend(a, w), self.extend(b, w));
        if hi < lo {
            return None;
        }
        if hi > self.highest {
            if nak {
                self.stats.naks_of_unsent += 1;
            } else {
                self.stats.acks_of_unsent += 1;
            }
            hi = self.highest;
        }
        let lo = lo.max(first).max(self.highest - self.sent_ns.len() as i128 + 1);
        (lo <= hi).then_some((lo, hi))
    }

    /// `lo..=hi` (in the window) named by an ack one by one.
    fn mark_named(&mut self, lo: i128, hi: i128) {
        let mut k = lo;
        while k <= hi {
            let i = self.index(k);
            let c = ((hi - k + 1) as usize)
                .min(64 - i % 64)
                .min(self.sent_ns.len() - i);
            self.named[i / 64] |= low(c) << (i % 64);
            k += c as i128;
        }
    }

    /// Calls `f` for each sequence of `lo..=hi` (in the window) not acked yet, a word of
    /// slots at a time: a range over the whole window costs 16 words when all is acked.
    fn walk_unacked(&mut self, lo: i128, hi: i128, mut f: impl FnMut(&mut Self, i128)) {
        let mut k = lo;
        while k <= hi {
            let i = self.index(k);
            let c = ((hi - k + 1) as usize)
                .min(64 - i % 64)
                .min(self.sent_ns.len() - i);
            let mut open = low(c) & !(self.acked[i / 64] >> (i % 64));
            while open != 0 {
                let at = open.trailing_zeros();
                open &= open - 1;
                f(self, k + at as i128);
            }
            k += c as i128;
        }
    }

    /// Settles what is left at the end of the capture.
    /// No figures for a direction the other never acked (it sent no packet with acks):
    /// nothing says whether its sequences arrived.
    pub fn finish(self) -> Option<AckStats> {
        self.finish_logged().0
    }

    /// [`AckTracker::finish`], and what each captured sequence settled as (when kept; none
    /// without a peer that acks).
    pub fn finish_logged(mut self) -> (Option<AckStats>, Vec<Settled>) {
        if !self.settle_end() {
            return (None, Vec::new());
        }
        self.summarize();
        let log = self.log.take().unwrap_or_default();
        (Some(self.stats), log)
    }

    /// The trackers of several streams as one direction's figures: counts added, round
    /// trips of all of them (acks per message, ENet's per channel).
    pub fn finish_many(trackers: impl IntoIterator<Item = AckTracker>) -> Option<AckStats> {
        let mut all: Option<AckTracker> = None;
        for mut t in trackers {
            if !t.settle_end() {
                continue;
            }
            let Some(a) = all.as_mut() else {
                all = Some(t);
                continue;
            };
            let (s, o) = (&mut a.stats, &t.stats);
            s.sequences += o.sequences;
            s.acked += o.acked;
            s.acked_not_captured += o.acked_not_captured;
            s.never_acked += o.never_acked;
            s.unacked_at_end += o.unacked_at_end;
            s.rtt_before_sent += o.rtt_before_sent;
            s.acked_by.add(&o.acked_by);
            s.acks_lost += o.acks_lost;
            s.naked += o.naked;
            s.retransmissions += o.retransmissions;
            s.spurious_retransmissions += o.spurious_retransmissions;
            s.never_acked_resent_or_naked += o.never_acked_resent_or_naked;
            s.acks_of_unsent += o.acks_of_unsent;
            s.naks_of_unsent += o.naks_of_unsent;
            a.echoed_samples += t.echoed_samples;
            a.first_copy_samples += t.first_copy_samples;
            let room = MAX_RUNS.saturating_sub(s.never_acked_runs.len());
            s.never_acked_runs.extend(o.never_acked_runs.iter().take(room));
            for (b, n) in std::mem::take(&mut t.rtt.buckets) {
                *a.rtt.buckets.entry(b).or_default() += n;
            }
            if t.rtt.samples > 0 {
                a.rtt.min = if a.rtt.samples == 0 {
                    t.rtt.min
                } else {
                    a.rtt.min.min(t.rtt.min)
                };
                a.rtt.max = a.rtt.max.max(t.rtt.max);
                a.rtt.samples += t.rtt.samples;
            }
            a.seconds.extend(t.seconds);
        }
        let mut a = all?;
        a.seconds.sort_by_key(|x| x.0);
        a.seconds.dedup_by(|later, kept| {
            if later.0 != kept.0 {
                return false;
            }
            kept.1 += later.1;
            kept.2 += later.2;
            kept.3 = kept.3.max(later.3);
            true
        });
        a.summarize();
        Some(a.stats)
    }

    /// Settles the sequences left at the end; false when there are no figures.
    fn settle_end(&mut self) -> bool {
        let Some(first) = self.first else {
            return false;
        };
        if !self.peer_acks {
            return false;
        }
        let peer = self.peer_ack.unwrap_or(first - 1);
        for ext in (self.highest - self.sent_ns.len() as i128 + 1).max(first)..=self.highest {
            self.note_naked(ext);
            if self.is_acked(ext) {
                let i = self.index(ext);
                self.count_acks_lost(i - i % 64, 1 << (i % 64));
                continue;
            }
            if ext > peer {
                self.stats.unacked_at_end += 1;
            } else {
                self.settle_run(ext, ext);
                let i = self.index(ext);
                if Self::bit(&self.naked, i) || Self::bit(&self.resent, i) {
                    self.stats.never_acked_resent_or_naked += 1;
                }
                self.log(ext, self.sent_ns[i], Settled::NEVER);
            }
        }
        true
    }

    /// The figures from what was settled.
    fn summarize(&mut self) {
        let judged = self.stats.sequences - self.stats.unacked_at_end;
        self.stats.ack_implied_loss = if judged == 0 {
            0.0
        } else {
            self.stats.never_acked as f64 / judged as f64
        };
        self.stats.rtt_ms = self.rtt.summary();
        self.stats.rtt_source = match (self.echoed_samples > 0, self.first_copy_samples > 0) {
            (true, true) => Some("echoed send times and first copies".into()),
            (true, false) => Some("echoed send times".into()),
            (false, true) => Some("first copies".into()),
            (false, false) => None,
        };
        self.stats.rtt_timeline = self
            .seconds
            .iter()
            .map(|&(s, n, sum, max)| (s, n, sum as f64 / n as f64 / 1e3, max as f64 / 1e3))
            .collect();
    }
}

/// A datagram's cumulative ack, range or NAK of the other direction's datagram
/// sequence (`width`: the ack fields' bits), settled on its tracker.
pub fn datagram_item(
    t: &mut AckTracker,
    item: &crate::dissect::AckItem,
    width: u32,
    ts_ns: i64,
    second: Option<u32>,
) {
    use crate::dissect::AckKind;
    match item.kind {
        AckKind::Below => t.acked_cumulative(item.first, width, false, ts_ns, second, None),
        AckKind::UpTo => t.acked_cumulative(item.first, width, true, ts_ns, second, None),
        AckKind::Range => t.acked_range(item.first, item.last, width, ts_ns, second, None),
        AckKind::Nak => t.naked_range(item.first, item.last, width),
    }
}

/// Bits of the acks on the wire: an `ack` field's width (a derived one's, the field it
/// copies or the mask it ends with), so an 8-bit ack is extended at 8 bits next to a
/// wider sequence. At most 32: the ack's value is 32 bits.
pub fn ack_width(p: &crate::dissect::Program) -> u32 {
    p.params.ack_width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_settle_sequences_and_time_round_trips() {
        let mut t = AckTracker::default();
        for s in [10u64, 11, 13, 14] {
            t.sent(s, s as i64 * 1_000_000);
        }
        // The peer got 10, 11 and 14 (12 never sent, 13 lost after the capture).
        t.acked(14, 16, 0b1_1001, 20_000_000, Some(0));
        let a = t.finish().unwrap();
        assert_eq!(
            (a.sequences, a.acked, a.never_acked, a.unacked_at_end),
            (5, 3, 2, 0)
        );
        assert_eq!(a.never_acked_runs, vec![(12, 13)]);
        let rtt = a.rtt_ms.unwrap();
        assert_eq!((rtt.samples, rtt.min, rtt.max), (3, 6.0, 10.0));
    }

    #[test]
    fn unacked_tail_is_not_loss_and_wrap_is_followed() {
        let mut t = AckTracker::default();
        for s in [65534u64, 65535, 0, 1] {
            t.sent(s, 0);
        }
        t.acked(65535, 16, 0b11, 1_000, None);
        let a = t.finish().unwrap();
        assert_eq!(
            (a.sequences, a.acked, a.never_acked, a.unacked_at_end),
            (4, 2, 0, 2)
        );
    }

    /// Regression (row 16): 8-bit sequences and acks, 600 a side, each acked: the ack
    /// analysis stopped at the first wrap (256 sequences, 256 acked).
    #[test]
    fn acks_wrap_at_the_sequence_width() {
        let mut t = AckTracker::new(8);
        for s in 0..600u64 {
            t.sent(s & 0xff, s as i64 * 10_000_000);
            t.acked(s & 0xff, 8, u32::MAX, s as i64 * 10_000_000 + 5_000_000, None);
        }
        let a = t.finish().unwrap();
        assert_eq!((a.sequences, a.acked, a.never_acked), (600, 600, 0));
        assert_eq!(a.rtt_ms.unwrap().samples, 600);
    }

    /// Regression (row 03): a direction whose peer sent nothing was "never acked 976,
    /// ack-implied loss 100%". Nothing acked it, so nothing is judged.
    #[test]
    fn no_figures_without_a_peer_that_acks() {
        let mut t = AckTracker::default();
        for s in 0..2000u64 {
            t.sent(s, s as i64);
        }
        assert_eq!(t.finish(), None);
    }

    /// Regression (row 18): an ack timestamped 500 s before its packet was a 0.0 ms round
    /// trip; it is left out and counted.
    #[test]
    fn an_ack_before_its_packet_is_no_round_trip() {
        let mut t = AckTracker::default();
        t.sent(1, 1_000_000_000_000);
        t.acked(1, 16, 1, 500_000_000_000, None);
        let a = t.finish().unwrap();
        assert_eq!((a.acked, a.rtt_before_sent, a.rtt_ms), (1, 1, None));
    }

    /// Regression (row 11): every tracked flow held a 1024-slot ring (24 KB) from its
    /// first datagram. The window grows with the sequences sent, to 8.3 KB at most.
    #[test]
    fn the_window_grows_with_the_flow_and_stays_bounded() {
        let mut t = AckTracker::default();
        t.sent(7, 0);
        assert!(
            t.heap_bytes() <= size_of::<AckTracker>() + 40,
            "{}",
            t.heap_bytes()
        );
        for s in 0..100_000u64 {
            t.sent(s & 0xffff, s as i64);
            if s % 3 == 0 {
                t.acked(s & 0xffff, 16, 0b111, s as i64 + 1, Some((s / 1000) as u32));
            }
        }
        assert!(
            t.heap_bytes() <= size_of::<AckTracker>() + 8 * 1024 + 4 * 128 + 100 * 48 + 256 * 16 + 24 * 101,
            "{}",
            t.heap_bytes()
        );
        let a = t.finish().unwrap();
        // 0..=6 came after 7, older: the counted span starts at 7.
        assert_eq!(a.sequences, 100_000 - 7);
        assert_eq!(a.acked + a.never_acked + a.unacked_at_end, a.sequences);
    }

    #[test]
    fn kept_verdicts_are_found_by_sequence_and_time() {
        let mut t = AckTracker::default();
        t.keep_log();
        for s in [10u64, 11, 12] {
            t.sent(s, s as i64 * 1_000_000);
        }
        t.acked(12, 16, 0b101, 20_000_000, None);
        let (stats, log) = t.finish_logged();
        assert_eq!(stats.unwrap().never_acked, 1);
        let flow = crate::engine::FlowId {
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:2".parse().unwrap(),
        };
        let mut facts = AckFacts::default();
        facts.add(flow, log);
        assert_eq!(facts.of(flow, 10, 10_000_000), Some(10_000));
        assert_eq!(facts.of(flow, 11, 11_000_000), Some(Settled::NEVER));
        assert_eq!(facts.of(flow, 12, 12_000_000), Some(8_000));
        // Before its first datagram, or a number never used: nothing settled.
        assert_eq!(facts.of(flow, 12, 1), None);
        assert_eq!(facts.of(flow, 13, 13_000_000), None);
    }

    /// Each copy's verdict: a resend of what was acked is a spurious retransmission, one
    /// of what was NAKed a plain one; a NAK holds for every copy of that use of the number,
    /// and not for its next use after the sequence wrapped.
    #[test]
    fn copies_and_naks_are_found_by_their_copy() {
        let ms = 1_000_000;
        let mut t = AckTracker::new(8);
        t.keep_log();
        for s in 0..3u64 {
            t.sent(s, (s as i64 + 1) * ms);
        }
        t.naked_range(1, 1, 8);
        t.acked_one(0, 8, 4 * ms, None);
        t.sent(0, 5 * ms);
        t.sent(1, 6 * ms);
        t.acked_range(1, 2, 8, 9 * ms, None, None);
        // The numbers wrap: 1 is used again, not NAKed this time.
        for s in 3..=257u64 {
            t.sent(s & 0xff, (s as i64 + 10) * ms);
            t.acked_one(s & 0xff, 8, (s as i64 + 10) * ms + 500, None);
        }
        let (stats, log) = t.finish_logged();
        let a = stats.unwrap();
        assert_eq!(
            (a.retransmissions, a.spurious_retransmissions, a.naked),
            (2, 1, 1)
        );
        let flow = crate::engine::FlowId {
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:2".parse().unwrap(),
        };
        let mut facts = AckFacts::default();
        facts.add(flow, log);
        let v = |seq, at| facts.verdict(flow, seq, at);
        assert_eq!(
            v(0, ms),
            CopyVerdict {
                fate: Some(3_000),
                naked: false,
                copy: None
            }
        );
        assert_eq!(v(0, 5 * ms).copy, Some(true));
        assert_eq!((v(1, 2 * ms).naked, v(1, 2 * ms).copy), (true, None));
        assert_eq!((v(1, 6 * ms).naked, v(1, 6 * ms).copy), (true, Some(false)));
        // The wrapped use of 1: acked 500 ns after (0 µs), neither NAKed nor a copy.
        let later = (257 + 10) * ms;
        assert_eq!(
            v(1, later),
            CopyVerdict {
                fate: Some(0),
                naked: false,
                copy: None
            }
        );
    }

    /// KCP's `una` beside its ACKs: the ACK of 2 was lost, a later cumulative ack
    /// covers it; a resent copy after its ack is spurious.
    #[test]
    fn cumulative_acks_cover_what_single_acks_missed() {
        let mut t = AckTracker::new(32);
        for s in 0..5u64 {
            t.sent(s, s as i64 * 1_000_000);
        }
        for s in [0u64, 1, 3] {
            t.acked_one(s, 32, 10_000_000 + s as i64, None);
        }
        t.acked_cumulative(4, 32, false, 12_000_000, None, None);
        t.sent(1, 13_000_000);
        let a = t.finish().unwrap();
        assert_eq!((a.acked, a.never_acked, a.unacked_at_end), (4, 0, 1));
        assert_eq!(
            a.acked_by,
            AckedBy {
                single: 3,
                bits: 0,
                cumulative: 1,
                ranges: 0
            }
        );
        assert_eq!(
            (a.acks_lost, a.retransmissions, a.spurious_retransmissions),
            (1, 1, 1)
        );
        // Only one-by-one acks are timed beside a cumulative one.
        assert_eq!(a.rtt_ms.unwrap().samples, 3);
        assert_eq!(a.rtt_source.as_deref(), Some("first copies"));
    }

    /// A TCP-like peer acking only cumulatively: the newest covered is timed, unless
    /// it was resent (Karn).
    #[test]
    fn cumulative_only_times_the_newest_covered_once_sent() {
        let mut t = AckTracker::new(16);
        for s in 0..4u64 {
            t.sent(s, 0);
        }
        t.sent(3, 1_000_000);
        t.acked_cumulative(2, 16, true, 5_000_000, None, None);
        t.acked_cumulative(3, 16, true, 6_000_000, None, None);
        let a = t.finish().unwrap();
        assert_eq!((a.acked, a.acked_by.cumulative, a.acks_lost), (4, 4, 0));
        assert_eq!(a.rtt_ms.unwrap().samples, 1);
    }

    /// Ranges acked and NAKed (RakNet's ACK and NAK records): a NAKed sequence never
    /// acked is data lost, and said so; a NAK of what was never sent is counted.
    #[test]
    fn ranges_and_naks_settle_sequences() {
        let mut t = AckTracker::new(24);
        for s in 10..20u64 {
            t.sent(s, 0);
        }
        t.acked_range(10, 13, 24, 1_000, None, None);
        t.naked_range(14, 15, 24);
        t.sent(14, 2_000);
        t.acked_range(14, 14, 24, 3_000, None, None);
        t.acked_range(16, 19, 24, 4_000, None, None);
        t.naked_range(25, 30, 24);
        t.acked_range(18, 40, 24, 5_000, None, None);
        let a = t.finish().unwrap();
        assert_eq!((a.acked, a.never_acked, a.naked), (9, 1, 2));
        assert_eq!(a.acked_by.ranges, 9);
        assert_eq!(
            (a.never_acked_resent_or_naked, a.naks_of_unsent, a.acks_of_unsent),
            (1, 1, 1)
        );
        assert_eq!(a.never_acked_runs, vec![(15, 15)]);
    }

    /// Hostile acks: a cumulative ack 2^31 ahead, a range over the whole space, a
    /// range backwards, a million ranges — bounded work, counted, never a panic.
    #[test]
    fn hostile_acks_cost_the_window_and_are_counted() {
        let mut t = AckTracker::new(32);
        for s in 0..100u64 {
            t.sent(s, s as i64);
        }
        t.acked_cumulative(1 << 31, 32, false, 1_000, None, None);
        t.acked_range(5, 3, 32, 1_000, None, None);
        t.acked_range(0, u32::MAX as u64, 32, 1_000, None, None);
        for i in 0..1_000_000u64 {
            t.acked_range(i, i + 5, 32, 2_000, None, None);
            t.naked_range(i, i + 1_000_000, 32);
        }
        assert!(t.heap_bytes() < 64 << 10, "{}", t.heap_bytes());
        let a = t.finish().unwrap();
        assert_eq!(a.acked + a.never_acked + a.unacked_at_end, a.sequences);
        assert!(a.acks_of_unsent >= 1 && a.naks_of_unsent >= 1_000_000 - 100);
    }

    #[test]
    fn buckets_hold_their_values() {
        for us in [0u64, 31, 32, 33, 1000, 123_456, 10_000_000] {
            let v = bucket_value(bucket_of(us));
            assert!((v - us as f64).abs() <= us as f64 * 0.02 + 0.5, "{us} -> {v}");
        }
    }
}

/// The eviction word by word against the sequence-at-a-time loop it replaced: the same
/// tracker after any mix of steps, jumps past the window, acks and wraps, with and
/// without the log, before and after the list of runs fills.
#[cfg(test)]
mod eviction {
    use super::*;
    use proptest::prelude::*;

    /// `AckTracker::sent` as it was: each skipped slot settled and cleared in turn.
    fn sent_one_by_one(t: &mut AckTracker, s: u64, ts_ns: i64) {
        let s = s & t.mask();
        let Some(first) = t.first else {
            return t.sent(s, ts_ns);
        };
        let ext = t.extend(s, t.bits);
        if ext > t.highest {
            let most = if t.peer_acks { WINDOW } else { UNACKED_WINDOW };
            t.grow((ext - first + 1).min(most));
            let len = t.sent_ns.len() as i128;
            let from = (t.highest + 1).max(ext - len + 1);
            if from > t.highest + 1 {
                t.settle_run(t.highest + 1, from - 1);
            }
            for k in from..=ext {
                let old = k - len;
                let i = t.index(k);
                if old >= first && !t.is_acked(old) {
                    t.settle_run(old, old);
                    t.log(old, t.sent_ns[t.index(old)], Settled::NEVER);
                    if AckTracker::bit(&t.naked, i) || AckTracker::bit(&t.resent, i) {
                        t.stats.never_acked_resent_or_naked += 1;
                    }
                }
                if old >= first
                    && t.individual
                    && t.is_acked(old)
                    && !AckTracker::bit(&t.named, i)
                    && t.sent_ns[i] != NOT_CAPTURED
                {
                    t.stats.acks_lost += 1;
                }
                t.sent_ns[i] = NOT_CAPTURED;
                t.set_acked(k, false);
                t.naked[i / 64] &= !(1 << (i % 64));
                t.resent[i / 64] &= !(1 << (i % 64));
                t.named[i / 64] &= !(1 << (i % 64));
            }
            t.stats.sequences = t.stats.sequences.saturating_add((ext - t.highest) as u64);
            t.highest = ext;
        }
        if ext > t.highest - t.sent_ns.len() as i128 && ext >= first {
            let i = t.index(ext);
            if t.sent_ns[i] == NOT_CAPTURED {
                t.sent_ns[i] = ts_ns;
            } else {
                t.copy_of(i, ext, ts_ns);
            }
        }
    }

    /// Steps: (kind, value): a sequence a little ahead or behind, one anywhere, an ack
    /// near the newest with random bits.
    fn run(bits: u32, log: bool, steps: &[(u8, u64, u32)]) {
        let (mut new, mut old) = (AckTracker::new(bits), AckTracker::new(bits));
        if log {
            new.keep_log();
            old.keep_log();
        }
        let mut seq = 0u64;
        for (n, &(kind, v, b)) in steps.iter().enumerate() {
            let ts = n as i64 * 1_000_000;
            match kind % 4 {
                0 => seq = seq.wrapping_add(v % 40),
                1 => seq = v,
                2 => seq = seq.wrapping_sub(v % 8),
                _ => {
                    let ack = seq.wrapping_sub(v % 4);
                    new.acked(ack, bits, b, ts, Some(n as u32));
                    old.acked(ack, bits, b, ts, Some(n as u32));
                    continue;
                }
            }
            new.sent(seq, ts);
            sent_one_by_one(&mut old, seq, ts);
            assert_eq!(format!("{new:?}"), format!("{old:?}"), "step {n}");
        }
        assert_eq!(new.finish_logged(), old.finish_logged());
    }

    proptest! {
        #[test]
        fn word_by_word_is_one_by_one(
            bits in prop::sample::select(vec![1u32, 3, 8, 12, 16, 32, 64]),
            log: bool,
            steps in prop::collection::vec((0u8..4, any::<u64>(), any::<u32>()), 0..300),
        ) {
            run(bits, log, &steps);
        }
    }

    /// Past the 256 runs listed: jumps whose never-acked runs meet the last one listed.
    #[test]
    fn full_runs_grow_as_one_by_one() {
        for bits in [8u32, 10, 16] {
            let mut steps = Vec::new();
            for n in 0..2_000u64 {
                steps.push((1, n * 1_500 + n % 7, 0));
                steps.push((3, n % 3, 0x5555_5555 ^ n as u32));
                steps.push((0, n % 40, 0));
            }
            run(bits, bits != 10, &steps);
        }
    }
}
