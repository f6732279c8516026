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

#[cfg(test)]
mod eviction;

mod finish;
mod received;
mod rtt;
#[cfg(test)]
mod tests;
pub use gpcap_engine::ack_facts::*;
pub use rtt::*;

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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
pub enum Mechanism {
    Single,
    Bits,
    Cumulative,
    Range,
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
}

/// A datagram's cumulative ack, range or NAK of the other direction's datagram
/// sequence (`width`: the ack fields' bits), settled on its tracker.
pub fn datagram_item(
    t: &mut AckTracker,
    item: &gpcap_dissect::AckItem,
    width: u32,
    ts_ns: i64,
    second: Option<u32>,
) {
    use gpcap_dissect::AckKind;
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
pub fn ack_width(p: &gpcap_dissect::Program) -> u32 {
    p.params.ack_width
}
