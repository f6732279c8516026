//! Ack analysis for definitions with `ack` and `ack-bits` roles: which of a direction's
//! sequences the other direction reported received, how many never were, and the round
//! trip from a packet to the first packet of the other direction that acks it.
//!
//! The acks are what the peer's packets say, so the analysis does not depend on where
//! the capture was taken; the capture's own sequence gaps do. A packet dropped before
//! the capture point is missing and never acked; one dropped after it is captured and
//! never acked; one the capture missed but the peer got is acked and absent.

use crate::validate::sequence_diff;
use serde::Serialize;
use std::collections::BTreeMap;

/// Sequences remembered behind the newest: acks refer to recent sequences (ack-bits
/// spans at most 32), so older ones are settled.
const WINDOW: i64 = 1024;
/// Runs of never-acked sequences listed per flow (counts are exact beyond).
const MAX_RUNS: usize = 256;
/// Seconds of the RTT timeline kept per flow.
const MAX_SECONDS: usize = 86_400;
const NOT_CAPTURED: i64 = i64::MIN;

#[derive(Debug, Clone, Copy)]
struct Slot {
    ext: i64,
    /// When its first datagram was captured (NOT_CAPTURED: a gap in the capture).
    sent_ns: i64,
    acked: bool,
}

/// What the analysis settled for one captured sequence: its round trip, or that it was
/// never acked. Kept only when asked ([`AckTracker::keep_log`]: filters on `rtt` and
/// `never_acked`), so that `analyze` keeps nothing per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// When its first datagram was captured.
    pub sent_ns: i64,
    /// Microseconds, or [`Settled::NEVER`].
    pub rtt_us: u32,
    pub seq: u16,
}

impl Settled {
    pub const NEVER: u32 = u32::MAX;
}

/// What the ack analysis settled for every captured sequence of a run, by direction: the
/// display filter's `never_acked` and `rtt`, known only once later packets were seen, so
/// found by a pass of their own before the filter's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AckFacts {
    /// By direction and 16-bit sequence: (first datagram's time, round trip or NEVER),
    /// in capture order (a sequence number recurs only after it wrapped).
    by_seq: hashbrown::HashMap<(crate::engine::FlowId, u16), Vec<(i64, u32)>>,
}

impl AckFacts {
    pub fn add(&mut self, flow: crate::engine::FlowId, log: Vec<Settled>) {
        for s in log {
            self.by_seq
                .entry((flow, s.seq))
                .or_default()
                .push((s.sent_ns, s.rtt_us));
        }
    }

    /// The round trip in µs of the packet of `flow` with sequence `seq` seen at `ts_ns`
    /// ([`Settled::NEVER`]: never acked); None when it was not settled (acks unknown, or
    /// not acked yet when the capture ended).
    pub fn of(&self, flow: crate::engine::FlowId, seq: u16, ts_ns: i64) -> Option<u32> {
        let v = self.by_seq.get(&(flow, seq))?;
        // The latest use of the number at or before this packet.
        let mut at = None;
        for &(sent, rtt) in v {
            if sent <= ts_ns && at.is_none_or(|(t, _)| sent >= t) {
                at = Some((sent, rtt));
            }
        }
        at.map(|(_, rtt)| rtt)
    }
}

/// Settled sequences kept per direction (16 bytes each).
const MAX_LOG: usize = 1 << 24;

/// Per sending direction: its sequences, settled as the other direction acks them.
#[derive(Debug, Clone, Default)]
pub struct AckTracker {
    /// Settled captured sequences, when kept.
    log: Option<Vec<Settled>>,
    ring: Vec<Slot>,
    first: Option<i64>,
    highest: i64,
    /// The newest sequence the peer acked (extended).
    peer_ack: Option<i64>,
    rtt: RttHist,
    /// Per second since the timeline start: (second, samples, sum µs, max µs).
    seconds: Vec<(u32, u32, u64, u64)>,
    stats: AckStats,
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
    /// Runs of never-acked sequences as [first, last] wire values (the first 256 runs).
    pub never_acked_runs: Vec<(u64, u64)>,
    /// Round trip from a packet's first datagram to the first packet of the other
    /// direction that acks it, in milliseconds.
    pub rtt_ms: Option<RttSummary>,
    /// Per second of capture time: [second, acks, mean ms, max ms].
    pub rtt_timeline: Vec<(u32, u32, f64, f64)>,
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

    fn log(&mut self, slot: Slot, rtt_us: u32) {
        if let Some(log) = self.log.as_mut()
            && slot.sent_ns != NOT_CAPTURED
            && log.len() < MAX_LOG
        {
            log.push(Settled {
                sent_ns: slot.sent_ns,
                rtt_us,
                seq: slot.ext as u16,
            });
        }
    }

    fn extend(&self, s: u16) -> i64 {
        self.highest + sequence_diff(s, self.highest as u16) as i64
    }

    fn slot(&mut self, ext: i64) -> &mut Slot {
        let i = ext.rem_euclid(WINDOW) as usize;
        &mut self.ring[i]
    }

    /// A datagram of this direction with sequence `s` was captured at `ts_ns`.
    pub fn sent(&mut self, s: u16, ts_ns: i64) {
        if self.ring.is_empty() {
            self.ring = vec![
                Slot {
                    ext: -1,
                    sent_ns: NOT_CAPTURED,
                    acked: true,
                };
                WINDOW as usize
            ];
        }
        let Some(first) = self.first else {
            self.first = Some(s as i64);
            self.highest = s as i64;
            self.stats.sequences = 1;
            *self.slot(s as i64) = Slot {
                ext: s as i64,
                sent_ns: ts_ns,
                acked: false,
            };
            return;
        };
        let ext = self.extend(s);
        if ext > self.highest {
            let from = (self.highest + 1).max(ext - WINDOW + 1);
            // Sequences skipped past the whole window are settled unseen and unacked.
            let skipped = (from - self.highest - 1) as u64;
            if skipped > 0 {
                self.settle_run(self.highest + 1, from - 1);
            }
            for k in from..=ext {
                let old = *self.slot(k);
                if old.ext >= first && !old.acked {
                    self.settle_run(old.ext, old.ext);
                    self.log(old, Settled::NEVER);
                }
                *self.slot(k) = Slot {
                    ext: k,
                    sent_ns: NOT_CAPTURED,
                    acked: false,
                };
            }
            self.stats.sequences += (ext - self.highest) as u64;
            self.highest = ext;
        }
        if ext > self.highest - WINDOW && ext >= first {
            let slot = self.slot(ext);
            if slot.ext == ext && slot.sent_ns == NOT_CAPTURED {
                slot.sent_ns = ts_ns;
            }
        }
    }

    /// Sequences `a..=b` (extended) settled as never acked.
    fn settle_run(&mut self, a: i64, b: i64) {
        self.stats.never_acked += (b - a + 1) as u64;
        let (a, b) = (a as u64 & 0xffff, b as u64 & 0xffff);
        let runs = &mut self.stats.never_acked_runs;
        let full = runs.len() >= MAX_RUNS;
        match runs.last_mut() {
            Some(last) if (last.1 + 1) & 0xffff == a => last.1 = b,
            _ if !full => runs.push((a, b)),
            _ => {}
        }
    }

    /// A packet of the other direction at `ts_ns` acks `ack` and, for each bit i set
    /// in `bits`, `ack - i`. `second`: its second on the report's timeline.
    pub fn acked(&mut self, ack: u16, bits: u32, ts_ns: i64, second: Option<u32>) {
        let Some(first) = self.first else {
            return;
        };
        let newest = self.extend(ack);
        if newest <= self.highest {
            self.peer_ack = Some(self.peer_ack.map_or(newest, |p| p.max(newest)));
        }
        let mut bits = bits;
        while bits != 0 {
            let i = bits.trailing_zeros();
            bits &= bits - 1;
            let ext = newest - i as i64;
            if ext > self.highest || ext <= self.highest - WINDOW || ext < first {
                continue;
            }
            let slot = *self.slot(ext);
            if slot.ext != ext || slot.acked {
                continue;
            }
            self.slot(ext).acked = true;
            self.stats.acked += 1;
            if slot.sent_ns == NOT_CAPTURED {
                self.stats.acked_not_captured += 1;
                continue;
            }
            let us = (ts_ns.saturating_sub(slot.sent_ns).max(0) / 1000) as u64;
            self.rtt.add(us);
            self.log(slot, us.min(Settled::NEVER as u64 - 1) as u32);
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
    }

    /// Settles what is left at the end of the capture.
    pub fn finish(self) -> Option<AckStats> {
        self.finish_logged().0
    }

    /// [`AckTracker::finish`], and what each captured sequence settled as (when kept).
    pub fn finish_logged(mut self) -> (Option<AckStats>, Vec<Settled>) {
        let Some(first) = self.first else {
            return (None, self.log.unwrap_or_default());
        };
        let peer = self.peer_ack.unwrap_or(first - 1);
        for ext in (self.highest - WINDOW + 1).max(first)..=self.highest {
            let slot = *self.slot(ext);
            if slot.ext != ext || slot.acked {
                continue;
            }
            if ext > peer {
                self.stats.unacked_at_end += 1;
            } else {
                self.settle_run(ext, ext);
                self.log(slot, Settled::NEVER);
            }
        }
        let judged = self.stats.sequences - self.stats.unacked_at_end;
        self.stats.ack_implied_loss = if judged == 0 {
            0.0
        } else {
            self.stats.never_acked as f64 / judged as f64
        };
        self.stats.rtt_ms = self.rtt.summary();
        self.stats.rtt_timeline = self
            .seconds
            .iter()
            .map(|&(s, n, sum, max)| (s, n, sum as f64 / n as f64 / 1e3, max as f64 / 1e3))
            .collect();
        let log = self.log.take().unwrap_or_default();
        (Some(self.stats), log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_settle_sequences_and_time_round_trips() {
        let mut t = AckTracker::default();
        for s in [10u16, 11, 13, 14] {
            t.sent(s, s as i64 * 1_000_000);
        }
        // The peer got 10, 11 and 14 (12 never sent, 13 lost after the capture).
        t.acked(14, 0b1_1001, 20_000_000, Some(0));
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
        for s in [65534u16, 65535, 0, 1] {
            t.sent(s, 0);
        }
        t.acked(65535, 0b11, 1_000, None);
        let a = t.finish().unwrap();
        assert_eq!(
            (a.sequences, a.acked, a.never_acked, a.unacked_at_end),
            (4, 2, 0, 2)
        );
    }

    #[test]
    fn kept_verdicts_are_found_by_sequence_and_time() {
        let mut t = AckTracker::default();
        t.keep_log();
        for s in [10u16, 11, 12] {
            t.sent(s, s as i64 * 1_000_000);
        }
        t.acked(12, 0b101, 20_000_000, None);
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

    #[test]
    fn buckets_hold_their_values() {
        for us in [0u64, 31, 32, 33, 1000, 123_456, 10_000_000] {
            let v = bucket_value(bucket_of(us));
            assert!((v - us as f64).abs() <= us as f64 * 0.02 + 0.5, "{us} -> {v}");
        }
    }
}
