//! The other direction's acks, as each mechanism states them: single acks with bits,
//! echoed send times, cumulative acks, ranges and NAKs.

use super::*;

impl AckTracker {
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
    pub(super) fn acked_from(
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
    pub(super) fn newly_acked(
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
    pub(super) fn clamp_range(&mut self, a: u64, b: u64, width: u32, nak: bool) -> Option<(i128, i128)> {
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
    pub(super) fn mark_named(&mut self, lo: i128, hi: i128) {
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
    pub(super) fn walk_unacked(&mut self, lo: i128, hi: i128, mut f: impl FnMut(&mut Self, i128)) {
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
}
