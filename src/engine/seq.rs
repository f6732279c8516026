//! Sequence analysis per flow with 16-bit wrap-around: gaps (lost), duplicates and late
//! (out-of-order) arrivals, in bounded memory.

use crate::validate::sequence_diff;
use serde::Serialize;

/// Sequences remembered behind the newest, for duplicate/late detection.
const WINDOW: i64 = 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SeqStats {
    /// Distinct sequences received.
    pub received: u64,
    /// Distinct sequences received as one whole (unfragmented) datagram: the baseline's
    /// denominator with `lost`.
    pub single: u64,
    /// Sequences skipped and never seen later.
    pub lost: u64,
    pub duplicates: u64,
    /// Arrived after a newer sequence (filled a gap).
    pub late: u64,
    /// Times the 16-bit sequence wrapped past 65535.
    pub wraps: u64,
    pub first: Option<u16>,
    pub last: Option<u16>,
    /// Lost runs: (sequence where the run starts, length), the first 64.
    #[serde(skip)]
    pub gap_starts: Vec<(u16, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqEvent {
    New {
        gap: u32,
    },
    Duplicate,
    Late,
    /// Part of a packet already seen (another fragment of the same sequence).
    SamePacket,
}

#[derive(Debug, Clone, Default)]
pub struct SeqTracker {
    highest: Option<i64>,
    window: Vec<u64>,
    pub stats: SeqStats,
}

impl SeqTracker {
    fn bit(&self, ext: i64) -> bool {
        let i = ext.rem_euclid(WINDOW) as usize;
        self.window.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    fn set(&mut self, ext: i64, on: bool) {
        if self.window.is_empty() {
            self.window = vec![0; (WINDOW / 64) as usize];
        }
        let i = ext.rem_euclid(WINDOW) as usize;
        if on {
            self.window[i / 64] |= 1 << (i % 64);
        } else {
            self.window[i / 64] &= !(1 << (i % 64));
        }
    }

    /// Records one datagram's sequence. `fragment`: several datagrams share it.
    pub fn observe(&mut self, s: u16, fragment: bool) -> SeqEvent {
        let Some(high) = self.highest else {
            self.highest = Some(s as i64);
            self.set(s as i64, true);
            self.stats.received = 1;
            self.stats.single = u64::from(!fragment);
            self.stats.first = Some(s);
            self.stats.last = Some(s);
            return SeqEvent::New { gap: 0 };
        };
        let d = sequence_diff(s, high as u16) as i64;
        if d > 0 {
            for k in 1..=d.min(WINDOW) {
                self.set(high + k, false);
            }
            let ext = high + d;
            if (ext as u64 >> 16) != (high as u64 >> 16) {
                self.stats.wraps += 1;
            }
            self.highest = Some(ext);
            self.set(ext, true);
            self.stats.received += 1;
            self.stats.single += u64::from(!fragment);
            self.stats.last = Some(s);
            let gap = (d - 1) as u32;
            if gap > 0 {
                self.stats.lost += gap as u64;
                if self.stats.gap_starts.len() < 64 {
                    self.stats.gap_starts.push((high.wrapping_add(1) as u16, gap));
                }
            }
            return SeqEvent::New { gap };
        }
        let ext = high + d;
        if -d < WINDOW && self.bit(ext) {
            if fragment {
                return SeqEvent::SamePacket;
            }
            self.stats.duplicates += 1;
            return SeqEvent::Duplicate;
        }
        if -d < WINDOW {
            self.set(ext, true);
            self.stats.lost = self.stats.lost.saturating_sub(1);
        }
        self.stats.late += 1;
        self.stats.received += 1;
        self.stats.single += u64::from(!fragment);
        SeqEvent::Late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u16]) -> SeqStats {
        let mut t = SeqTracker::default();
        for &s in seqs {
            t.observe(s, false);
        }
        t.stats
    }

    #[test]
    fn wrap_without_false_gaps() {
        let seqs: Vec<u16> = (65530..=65535).chain(0..10).collect();
        let s = run(&seqs);
        assert_eq!(
            (s.received, s.lost, s.duplicates, s.late, s.wraps),
            (16, 0, 0, 0, 1)
        );
    }

    #[test]
    fn gaps_duplicates_and_late() {
        let s = run(&[1, 2, 5, 5, 3, 9, 2]);
        // 3 and 4 skipped, 3 arrives late; 6,7,8 skipped; 5 and 2 duplicated.
        assert_eq!((s.received, s.lost, s.duplicates, s.late), (5, 4, 2, 1));
    }

    #[test]
    fn fragments_of_one_packet_are_not_duplicates() {
        let mut t = SeqTracker::default();
        assert_eq!(t.observe(7, true), SeqEvent::New { gap: 0 });
        assert_eq!(t.observe(7, true), SeqEvent::SamePacket);
        assert_eq!(t.observe(8, false), SeqEvent::New { gap: 0 });
        assert_eq!(t.stats.duplicates, 0);
        assert_eq!((t.stats.received, t.stats.single), (2, 1));
    }
}
