//! What the values of one field row say about the bits they need: the observed range,
//! constants, a plug-in entropy, and deltas against the previous packet of the same type
//! and flow. Every figure rests on the values seen, never on what the protocol allows.

use hashbrown::HashMap;
use serde::Serialize;

/// Distinct values kept per row for the entropy estimate; past it the row says so and
/// gives no entropy.
pub const MAX_DISTINCT: usize = 1024;

/// Bits that hold `n` (0 for 0): the width an unsigned `n` needs.
pub fn width_of(n: u128) -> u32 {
    128 - n.leading_zeros()
}

/// Zigzag of a signed difference: small magnitudes either way stay small.
pub fn zigzag(d: i128) -> u128 {
    if d >= 0 {
        (d as u128) << 1
    } else {
        ((-(d + 1)) as u128) << 1 | 1
    }
}

/// Values below this (as the low 64 bits) are counted in a table, not hashed: most
/// fields are narrow, and hashing every value was a tenth of `--bits`.
pub const SMALL: u64 = 1 << 12;

/// Integer values (raw integers, booleans, or floats quantized at a resolution).
#[derive(Debug, Clone, Default)]
#[repr(C)]
#[non_exhaustive]
pub struct IntStats {
    pub n: u64,
    pub min: i128,
    pub max: i128,
    /// Value → how many times, up to [`MAX_DISTINCT`] values, keyed by the value's low
    /// 64 bits: a row's values are all of one leaf kind (64-bit at most, signed or
    /// not) or floats quantized within ±2^62, so no two of them share those bits.
    /// Values below [`SMALL`] are counted in `small` (grown to the largest seen), the
    /// others in `wide`.
    small: Vec<u32>,
    /// Distinct values in `small` and `wide` together.
    distinct: usize,
    pub capped: bool,
    /// Deltas against the previous packet of the same type and flow.
    pub delta: Delta,
    /// Values at or above [`SMALL`] (the rest are in `small`).
    wide: HashMap<u64, u32>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
#[non_exhaustive]
pub struct Delta {
    /// Values that had a previous one to differ from.
    pub samples: u64,
    /// Σ bits of each zigzag-coded difference (0 for an unchanged value).
    pub bits: u64,
    /// The widest zigzag-coded difference, in bits: a fixed width that holds every one.
    pub width: u32,
    /// Values that found no place to remember the previous one (the table was full).
    pub not_tracked: u64,
}

impl IntStats {
    #[inline(always)]
    pub fn add(&mut self, v: i128) {
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        if !self.capped {
            self.count(v as u64, 1);
        }
    }

    /// Value `v` counted among the distinct values only: its number and range come
    /// later, with others', through [`Self::absorb`] (the plan-counted profile keeps
    /// those beside each leaf, not in the row).
    #[inline(always)]
    pub fn tally(&mut self, v: i128) {
        if !self.capped {
            self.count(v as u64, 1);
        }
    }

    /// `n` more values, from `min` to `max` (each already [`Self::tally`]ed): as many
    /// [`Self::add`]s would leave the number and range.
    pub fn absorb(&mut self, n: u64, min: i128, max: i128) {
        if n == 0 {
            return;
        }
        if self.n == 0 {
            self.min = min;
            self.max = max;
        } else {
            self.min = self.min.min(min);
            self.max = self.max.max(max);
        }
        self.n += n;
    }

    /// `c` more of value `k`; past [`MAX_DISTINCT`] values the row is capped (merging,
    /// `cap_after`: the check comes after every value is in, as a whole run's would).
    #[inline(always)]
    fn count(&mut self, k: u64, c: u32) {
        // Mostly a narrow value seen before: one increment, in line.
        if let Some(s) = self.small.get_mut(k as usize)
            && *s != 0
        {
            *s += c;
            return;
        }
        self.count_new(k, c);
    }

    /// [`Self::count`] of a value not in the table yet, or wide.
    #[inline(never)]
    fn count_new(&mut self, k: u64, c: u32) {
        let full = self.distinct >= MAX_DISTINCT;
        let slot = if k < SMALL {
            self.fit(k);
            match self.small.get_mut(k as usize) {
                Some(s) => s,
                None => return,
            }
        } else {
            match self.wide.get_mut(&k) {
                Some(s) => s,
                None if full => return self.cap(),
                None => {
                    self.distinct += 1;
                    self.wide.insert(k, c);
                    return;
                }
            }
        };
        if *slot == 0 {
            if full {
                return self.cap();
            }
            self.distinct += 1;
        }
        *slot += c;
    }

    /// Grows the table to hold `k` (a power of two: a boolean's holds 16 counts).
    #[inline]
    fn fit(&mut self, k: u64) {
        if k as usize >= self.small.len() {
            let len = (k as usize + 1).next_power_of_two().clamp(16, SMALL as usize);
            self.small.resize(len, 0);
        }
    }

    /// Too many distinct values: the counts go.
    fn cap(&mut self) {
        self.capped = true;
        self.small = Vec::new();
        self.wide = HashMap::new();
        self.distinct = 0;
    }

    /// Distinct values seen (meaningless when capped).
    pub fn distinct(&self) -> usize {
        self.distinct
    }

    /// (value's low 64 bits, count) in value order.
    fn counts(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let small = self.small.iter().enumerate().filter(|(_, c)| **c > 0);
        let mut wide: Vec<(u64, u32)> = self.wide.iter().map(|(k, c)| (*k, *c)).collect();
        wide.sort_unstable();
        small.map(|(k, c)| (k as u64, *c)).chain(wide)
    }

    /// `c` more of `k`, uncapped (the cap is decided once the shard is in).
    fn merge_count(&mut self, k: u64, c: u32) {
        if k < SMALL {
            self.fit(k);
            if let Some(s) = self.small.get_mut(k as usize) {
                self.distinct += usize::from(*s == 0);
                *s += c;
            }
        } else {
            let e = self.wide.entry(k).or_default();
            self.distinct += usize::from(*e == 0);
            *e += c;
        }
    }

    /// Bits the observed range needs (`max - min` as an offset from `min`).
    pub fn range_bits(&self) -> u32 {
        width_of(self.max.abs_diff(self.min))
    }

    /// The plug-in entropy of the values seen, bits per value (None when capped).
    pub fn entropy(&self) -> Option<f64> {
        if self.capped || self.n == 0 {
            return None;
        }
        let n = self.n as f64;
        // Summed in value order, so that merged shards give the same float.
        Some(
            self.counts()
                .map(|(_, c)| {
                    let p = f64::from(c) / n;
                    -p * p.log2()
                })
                .sum::<f64>()
                .max(0.0),
        )
    }

    /// Folds in the values of another shard (disjoint flows).
    pub fn merge(&mut self, o: &IntStats) {
        if o.n == 0 {
            return;
        }
        self.absorb(o.n, o.min, o.max);
        self.capped |= o.capped;
        if !self.capped {
            for (v, c) in o.counts() {
                self.merge_count(v, c);
            }
            if self.distinct > MAX_DISTINCT {
                self.capped = true;
            }
        }
        if self.capped {
            self.cap();
        }
        self.delta.merge(&o.delta);
    }
}

/// What a value's same occurrence in the flow's previous packet of the type said.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Seen {
    /// It was there: the value less it.
    Delta(i128),
    /// It was not, and the value is now kept for the next packet.
    Kept,
    /// It was not, and there was no room to keep the value.
    NotTracked,
}

impl Delta {
    /// One more difference from the previous value.
    #[inline(always)]
    pub fn add(&mut self, d: i128) {
        let w = width_of(zigzag(d));
        self.samples += 1;
        self.bits += u64::from(w);
        self.width = self.width.max(w);
    }

    /// What the previous packet said of one value.
    #[inline(always)]
    pub fn see(&mut self, seen: Seen) {
        match seen {
            Seen::Delta(d) => self.add(d),
            Seen::Kept => {}
            Seen::NotTracked => self.not_tracked += 1,
        }
    }

    pub fn merge(&mut self, o: &Delta) {
        self.samples += o.samples;
        self.bits += o.bits;
        self.width = self.width.max(o.width);
        self.not_tracked += o.not_tracked;
    }
}

/// Float values as read.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct FloatStats {
    pub n: u64,
    pub min: f64,
    pub max: f64,
    /// NaN or infinite values (left out of the range).
    pub not_finite: u64,
}

impl FloatStats {
    pub fn add(&mut self, v: f64) {
        if !v.is_finite() {
            self.not_finite += 1;
            return;
        }
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
    }

    /// `n` more finite values between `a` and `b` (either way round), both among them:
    /// as many [`Self::add`]s would leave the number and range.
    pub fn absorb(&mut self, n: u64, a: f64, b: f64) {
        self.merge(&FloatStats {
            n,
            min: a.min(b),
            max: a.max(b),
            not_finite: 0,
        });
    }

    pub fn merge(&mut self, o: &FloatStats) {
        self.not_finite += o.not_finite;
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = FloatStats {
                not_finite: self.not_finite,
                ..*o
            };
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.n += o.n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_and_widths() {
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(-2), 3);
        assert_eq!(width_of(0), 0);
        assert_eq!(width_of(1), 1);
        assert_eq!(width_of(255), 8);
        assert_eq!(width_of(256), 9);
    }

    #[test]
    fn a_quarter_of_the_range_needs_two_bits_less() {
        let mut s = IntStats::default();
        for v in 0..64 {
            s.add(v);
        }
        assert_eq!(s.range_bits(), 6);
        assert_eq!(s.entropy(), Some(6.0));
    }

    #[test]
    fn distinct_values_are_capped_and_say_so() {
        let mut s = IntStats::default();
        for v in 0..(MAX_DISTINCT as i128 + 1) {
            s.add(v);
        }
        assert!(s.capped);
        assert_eq!(s.entropy(), None);
        assert_eq!(s.n, MAX_DISTINCT as u64 + 1);
    }

    /// Values counted in the table and hashed, either side of [`SMALL`], negative ones
    /// (hashed by their low bits) too: the cap comes at the same value, and halves
    /// merged give the whole's counts and entropy.
    #[test]
    fn table_and_hash_count_alike() {
        let values: Vec<i128> = (0..MAX_DISTINCT as i128 + 1)
            .map(|v| match v % 3 {
                0 => v,
                1 => SMALL as i128 + v * 1000,
                _ => -v,
            })
            .collect();
        let mut s = IntStats::default();
        for &v in &values[..MAX_DISTINCT] {
            s.add(v);
            s.add(v);
        }
        assert!(!s.capped);
        assert_eq!(s.distinct(), MAX_DISTINCT);
        assert_eq!(s.entropy(), Some(10.0));
        let (mut a, mut b) = (IntStats::default(), IntStats::default());
        for (i, &v) in values[..MAX_DISTINCT].iter().enumerate() {
            let h = if i % 2 == 0 { &mut a } else { &mut b };
            h.add(v);
            h.add(v);
        }
        a.merge(&b);
        assert_eq!((a.distinct(), a.entropy()), (s.distinct(), s.entropy()));
        s.add(values[MAX_DISTINCT]);
        assert!(s.capped);
        assert_eq!(s.entropy(), None);
    }

    #[test]
    fn merged_halves_equal_the_whole() {
        let (mut a, mut b, mut whole) = (IntStats::default(), IntStats::default(), IntStats::default());
        for v in 0..100i128 {
            whole.add(v % 7);
            if v % 2 == 0 { a.add(v % 7) } else { b.add(v % 7) }
        }
        a.merge(&b);
        assert_eq!(
            (a.n, a.min, a.max, a.entropy()),
            (whole.n, whole.min, whole.max, whole.entropy())
        );
    }
}
