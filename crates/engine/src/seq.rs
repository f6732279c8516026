//! Sequence analysis per flow with wrap-around at the sequence field's width (16 bits
//! in the articles, up to 64): gaps (lost), duplicates and late (out-of-order)
//! arrivals, in bounded memory.

use serde::Serialize;

/// Sequences remembered behind the newest, for duplicate/late detection.
const WINDOW: i64 = 1024;

/// The farthest a sequence may move from the newest, either way, and still be read as
/// the same counter: a million datagrams lost in a row, or one arriving that late, is
/// beyond any game's traffic. A datagram past it (a corrupt or hostile 64-bit sequence
/// jumping by 2^63) is a jump: counted as one datagram, not as billions lost, and the
/// counter stays where it was. Fields narrower than 21 bits never jump (the nearer way
/// round is always within it).
pub const MAX_JUMP: u64 = 1 << 20;

/// Consecutive jumps this close together move the counter there: the sender restarted
/// its counter, and the next datagrams follow the new one.
const REBASE: u64 = 64;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
    /// Times the sequence wrapped past its largest value.
    pub wraps: u64,
    /// Datagrams whose sequence lay more than [`MAX_JUMP`] from the newest (either way):
    /// not counted as received, and no loss or lateness is inferred from them.
    pub jumps: u64,
    pub first: Option<u64>,
    pub last: Option<u64>,
    /// Lost runs: (sequence where the run starts, length), the first 64.
    #[serde(skip)]
    pub gap_starts: Vec<(u64, u32)>,
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
    /// Implausibly far from the newest sequence ([`MAX_JUMP`]): an anomaly of one datagram.
    Jump,
}

#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// Width of the sequence field in bits (1..=64).
    bits: u32,
    highest: Option<i128>,
    /// The last jump's sequence (on the wire), to follow a counter that restarted.
    jumped: Option<u64>,
    /// One bit per sequence of the last `WINDOW`, in place (no allocation to check).
    window: [u64; (WINDOW / 64) as usize],
    pub stats: SeqStats,
}

impl Default for SeqTracker {
    fn default() -> Self {
        SeqTracker::new(16)
    }
}

impl SeqTracker {
    pub fn new(bits: u32) -> Self {
        SeqTracker {
            bits: bits.clamp(1, 64),
            highest: None,
            jumped: None,
            window: [0; (WINDOW / 64) as usize],
            stats: SeqStats::default(),
        }
    }

    fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.bits)
    }

    /// `s - high` in the sequence's modular arithmetic: the nearer way round (power-of-two
    /// moduli only, so masks, no 128-bit division).
    fn diff(&self, s: u64, high: u64) -> i128 {
        let d = s.wrapping_sub(high) & self.mask();
        if d > 1u64 << (self.bits - 1) {
            d as i128 - (self.mask() as i128 + 1)
        } else {
            d as i128
        }
    }

    fn wire(&self, ext: i128) -> u64 {
        ext as u64 & self.mask()
    }

    fn index(ext: i128) -> usize {
        (ext as u64 & (WINDOW as u64 - 1)) as usize
    }

    fn bit(&self, ext: i128) -> bool {
        let i = Self::index(ext);
        self.window[i / 64] >> (i % 64) & 1 == 1
    }

    #[inline]
    fn set(&mut self, ext: i128, on: bool) {
        let i = Self::index(ext);
        if on {
            self.window[i / 64] |= 1 << (i % 64);
        } else {
            self.window[i / 64] &= !(1 << (i % 64));
        }
    }

    /// Clears the bits of the `n` sequences after `high`, a word at a time (a sequence
    /// that is not one jumps by hundreds on every datagram).
    fn clear_after(&mut self, high: i128, n: i128) {
        if n >= WINDOW as i128 {
            self.window = [0; (WINDOW / 64) as usize];
            return;
        }
        let (mut k, last) = (high + 1, high + n);
        while k <= last {
            let i = Self::index(k);
            let c = ((last - k + 1) as u32).min(64 - i as u32 % 64);
            self.window[i / 64] &= !(u64::MAX.checked_shr(64 - c).unwrap_or(0) << (i % 64));
            k += c as i128;
        }
    }

    /// Records one datagram's sequence. `fragment`: several datagrams share it.
    #[inline]
    pub fn observe(&mut self, s: u64, fragment: bool) -> SeqEvent {
        let s = self.wire(s as i128);
        // The next sequence, the usual case: what the general path below does for a
        // difference of one, without its wide arithmetic.
        if let Some(high) = self.highest
            && s.wrapping_sub(high as u64) & self.mask() == 1
        {
            self.advance(high, high + 1, s, fragment);
            return SeqEvent::New { gap: 0 };
        }
        self.observe_general(s, fragment)
    }

    /// The highest sequence moves from `high` to `ext` (`s` on the wire), received.
    #[inline]
    fn advance(&mut self, high: i128, ext: i128, s: u64, fragment: bool) {
        if ext >> self.bits != high >> self.bits {
            self.stats.wraps += 1;
        }
        self.highest = Some(ext);
        self.jumped = None;
        self.set(ext, true);
        self.stats.received += 1;
        self.stats.single += u64::from(!fragment);
        self.stats.last = Some(s);
    }

    /// Any difference, wraps and widths up to 64 bits included; `s` is on the wire.
    fn observe_general(&mut self, s: u64, fragment: bool) -> SeqEvent {
        let Some(high) = self.highest else {
            self.highest = Some(s as i128);
            self.set(s as i128, true);
            self.stats.received = 1;
            self.stats.single = u64::from(!fragment);
            self.stats.first = Some(s);
            self.stats.last = Some(s);
            return SeqEvent::New { gap: 0 };
        };
        let d = self.diff(s, self.wire(high));
        if d.unsigned_abs() > MAX_JUMP as u128 {
            return self.jump(s, fragment);
        }
        self.jumped = None;
        if d > 0 {
            self.clear_after(high, d);
            self.advance(high, high + d, s, fragment);
            let gap = (d - 1) as u32;
            if gap > 0 {
                self.stats.lost = self.stats.lost.saturating_add(gap as u64);
                if self.stats.gap_starts.len() < 64 {
                    self.stats.gap_starts.push((self.wire(high + 1), gap));
                }
            }
            return SeqEvent::New { gap };
        }
        let ext = high + d;
        if -d < WINDOW as i128 && self.bit(ext) {
            if fragment {
                return SeqEvent::SamePacket;
            }
            self.stats.duplicates += 1;
            return SeqEvent::Duplicate;
        }
        if -d < WINDOW as i128 {
            self.set(ext, true);
            self.stats.lost = self.stats.lost.saturating_sub(1);
        }
        self.stats.late += 1;
        self.stats.received += 1;
        self.stats.single += u64::from(!fragment);
        SeqEvent::Late
    }

    /// A sequence past [`MAX_JUMP`]: counted apart, unless it follows the previous jump
    /// closely, when the counter restarted there (the newest moves to it, no gap).
    fn jump(&mut self, s: u64, fragment: bool) -> SeqEvent {
        let follows = self
            .jumped
            .is_some_and(|j| (1..=REBASE).contains(&(s.wrapping_sub(j) & self.mask())));
        if !follows {
            self.jumped = Some(s);
            self.stats.jumps += 1;
            return SeqEvent::Jump;
        }
        self.jumped = None;
        self.window = [0; (WINDOW / 64) as usize];
        self.set(s as i128, true);
        self.highest = Some(s as i128);
        self.stats.received += 1;
        self.stats.single += u64::from(!fragment);
        self.stats.last = Some(s);
        SeqEvent::New { gap: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The in-order shortcut decides as the general path does: same events, same stats.
        #[test]
        fn next_sequence_shortcut_equals_the_general_path(
            bits in prop::sample::select(vec![1u32, 8, 16, 24, 64]),
            start in any::<u64>(),
            steps in prop::collection::vec((0u8..4, any::<u16>(), any::<bool>()), 1..400),
        ) {
            let (mut fast, mut general) = (SeqTracker::new(bits), SeqTracker::new(bits));
            let mut s = start;
            for (how, jump, fragment) in steps {
                s = match how {
                    0 | 1 => s.wrapping_add(1),
                    2 => s.wrapping_add(jump as u64),
                    _ => s.wrapping_sub(jump as u64 % 64),
                };
                let wire = s & fast.mask();
                prop_assert_eq!(fast.observe(s, fragment), general.observe_general(wire, fragment));
            }
            prop_assert_eq!(&fast.stats, &general.stats);
        }
    }

    proptest! {
        /// Clearing a word at a time clears what clearing each sequence did.
        #[test]
        fn clearing_after_the_newest_is_clearing_each(
            window in prop::array::uniform16(any::<u64>()),
            high in any::<i64>(),
            n in 0i128..2100,
        ) {
            let mut t = SeqTracker::new(64);
            t.window = window;
            let mut each = t.clone();
            t.clear_after(high as i128, n);
            for k in 1..=n.min(WINDOW as i128) {
                each.set(high as i128 + k, false);
            }
            prop_assert_eq!(t.window, each.window);
        }
    }

    fn run(seqs: &[u16]) -> SeqStats {
        let mut t = SeqTracker::default();
        for &s in seqs {
            t.observe(s as u64, false);
        }
        t.stats
    }

    #[test]
    fn wide_sequences_wrap_at_their_width() {
        // 24 bits: 0xffffff then 0 is the next sequence, not a gap of 16 million.
        let mut t = SeqTracker::new(24);
        for s in [0xfffffe, 0xffffff, 0, 2] {
            t.observe(s, false);
        }
        assert_eq!((t.stats.received, t.stats.lost, t.stats.wraps), (4, 1, 1));
        // 64 bits around 2^63 (netcode's global counter) and at the very top.
        let mut t = SeqTracker::new(64);
        for s in [1u64 << 63, (1 << 63) + 1, (1 << 63) + 3] {
            t.observe(s, false);
        }
        assert_eq!((t.stats.received, t.stats.lost), (3, 1));
        let mut t = SeqTracker::new(64);
        for s in [u64::MAX - 2, u64::MAX, 0, 1] {
            t.observe(s, false);
        }
        assert_eq!((t.stats.received, t.stats.lost), (4, 1));
        assert_eq!(t.stats.last, Some(1));
        assert_eq!(t.stats.wraps, 1);
    }

    /// Regression (issue rows 01 and 15): one 64-bit sequence ~2^63 ahead made the flow
    /// lose 4,294,967,295 (clamped) and every datagram after it "late"; two such jumps
    /// wrapped a u32 counter. A jump is one datagram, counted apart.
    #[test]
    fn a_jump_past_the_plausible_window_is_one_anomaly() {
        let mut t = SeqTracker::new(64);
        let seqs = (1..=100).chain([(1u64 << 63) + 50]).chain(101..=200);
        let events: Vec<SeqEvent> = seqs.map(|s| t.observe(s, false)).collect();
        assert_eq!(events[100], SeqEvent::Jump);
        assert_eq!(
            (
                t.stats.received,
                t.stats.lost,
                t.stats.late,
                t.stats.jumps,
                t.stats.last
            ),
            (200, 0, 0, 1, Some(200))
        );
        // Two jumps, one of them backwards by nearly 2^63.
        let mut t = SeqTracker::new(64);
        for s in [1, 2, 3, 1 << 62, (1 << 63) + 5] {
            t.observe(s, false);
        }
        assert_eq!(
            (t.stats.received, t.stats.lost, t.stats.late, t.stats.jumps),
            (3, 0, 0, 2)
        );
        // A counter that restarts far away is followed from its second datagram.
        let mut t = SeqTracker::new(32);
        for s in [10, 11, 12, 3_000_000_000, 3_000_000_001, 3_000_000_002] {
            t.observe(s, false);
        }
        assert_eq!((t.stats.received, t.stats.lost, t.stats.jumps), (5, 0, 1));
        assert_eq!(t.stats.last, Some(3_000_000_002));
        // A real gap within the window is still loss.
        let mut t = SeqTracker::new(64);
        for s in [1, MAX_JUMP + 1] {
            t.observe(s, false);
        }
        assert_eq!((t.stats.lost, t.stats.jumps), (MAX_JUMP - 1, 0));
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
