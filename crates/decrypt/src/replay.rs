//! netcode.io 1.02's replay protection, as a receiver applies it to one direction of one
//! connection (`netcode_replay_protection_*`, netcode.c): a packet is a replay when its
//! sequence is 256 or more older than the newest received, or was received already.
//! netcode.c keeps the last sequence per slot (`sequence % 256`); the same answers come
//! from a 256-bit map of the sequences at or under the newest, 40 bytes a direction.

/// Sequences a receiver remembers (`NETCODE_REPLAY_PROTECTION_BUFFER_SIZE`).
pub const WINDOW: u64 = 256;

/// One direction's window. The default is a fresh connection (nothing received, the
/// newest 0, as after `netcode_replay_protection_reset`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayWindow {
    newest: u64,
    /// Bit `i` set: sequence `newest - i` was received.
    seen: [u64; 4],
}

impl ReplayWindow {
    /// `netcode_replay_protection_already_received`: too old, or received before. Written
    /// so it cannot overflow (netcode.c's `sequence + 256 <= newest` wraps near 2^64).
    pub fn already_received(&self, sequence: u64) -> bool {
        if self.newest >= WINDOW && sequence <= self.newest - WINDOW {
            return true;
        }
        match self.newest.checked_sub(sequence) {
            Some(back) => self.bit(back),
            None => false,
        }
    }

    /// `netcode_replay_protection_advance_sequence`: after a packet opened.
    pub fn advance(&mut self, sequence: u64) {
        if sequence > self.newest {
            self.shift(sequence - self.newest);
            self.newest = sequence;
        }
        let back = self.newest - sequence;
        if back < WINDOW {
            self.seen[(back / 64) as usize] |= 1 << (back % 64);
        }
    }

    /// Judges a packet that opened under its key, and remembers it unless it is a replay
    /// (netcode.c drops a replay before it advances). True for a replay.
    pub fn replayed(&mut self, sequence: u64) -> bool {
        if self.already_received(sequence) {
            return true;
        }
        self.advance(sequence);
        false
    }

    fn bit(&self, back: u64) -> bool {
        back < WINDOW && self.seen[(back / 64) as usize] >> (back % 64) & 1 == 1
    }

    /// Moves the map `by` sequences newer: bit `i` becomes bit `i + by`.
    fn shift(&mut self, by: u64) {
        if by >= WINDOW {
            self.seen = [0; 4];
            return;
        }
        let (words, bits) = ((by / 64) as usize, (by % 64) as u32);
        let old = self.seen;
        for i in (0..4usize).rev() {
            let lo = i.checked_sub(words).map_or(0, |j| old[j]);
            let below = i.checked_sub(words + 1).map_or(0, |j| old[j]);
            self.seen[i] = match bits {
                0 => lo,
                b => lo << b | below >> (64 - b),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// netcode.c's own algorithm, slot by slot, to hold the map to.
    struct Reference {
        newest: u64,
        slots: [u64; 256],
    }

    impl Reference {
        fn already_received(&self, s: u64) -> bool {
            if self.newest >= WINDOW && s <= self.newest - WINDOW {
                return true;
            }
            let slot = self.slots[(s % WINDOW) as usize];
            slot != u64::MAX && slot >= s
        }
        fn advance(&mut self, s: u64) {
            self.newest = self.newest.max(s);
            self.slots[(s % WINDOW) as usize] = s;
        }
    }

    #[test]
    fn netcode_s_own_test() {
        // test_replay_protection in netcode.c, step by step.
        let mut w = ReplayWindow::default();
        let max = WINDOW * 4;
        for s in 0..max {
            assert!(!w.already_received(s), "{s}");
            w.advance(s);
        }
        assert!(w.already_received(0));
        for s in max - 10..max {
            assert!(w.already_received(s));
        }
        assert!(!w.already_received(max + WINDOW));
        for s in 0..max {
            assert!(w.already_received(s));
        }
    }

    #[test]
    fn the_map_answers_as_netcode_s_slots_do() {
        // Sequences that step, repeat, come late and jump, from a fixed generator.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..50 {
            let mut w = ReplayWindow::default();
            let mut r = Reference {
                newest: 0,
                slots: [u64::MAX; 256],
            };
            let mut seq: u64 = next() % 4;
            for _ in 0..4000 {
                let s = match next() % 8 {
                    0 => seq.saturating_sub(next() % 300),
                    1 => seq + next() % 400,
                    2 => seq.saturating_sub(255),
                    3 => seq.saturating_sub(256),
                    _ => {
                        seq += 1 + next() % 3;
                        seq
                    }
                };
                assert_eq!(w.already_received(s), r.already_received(s), "sequence {s}");
                if !r.already_received(s) {
                    r.advance(s);
                }
                w.replayed(s);
            }
        }
    }

    #[test]
    fn no_overflow_near_the_top() {
        let mut w = ReplayWindow::default();
        assert!(!w.replayed(u64::MAX - 3));
        assert!(!w.replayed(u64::MAX));
        assert!(w.replayed(u64::MAX - 3));
        assert!(!w.replayed(u64::MAX - 1));
        assert!(w.replayed(u64::MAX - 256));
    }
}
