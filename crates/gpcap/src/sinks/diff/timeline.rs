//! Both points' timelines for the TUI: datagrams per time bin and lane (A, B), with the
//! lost, reordered and late ones marked, on A's clock (B's times moved by the running
//! offset estimate). Bins double in width as the capture goes on, so a capture of any
//! length has at most [`BINS`] of them.

use serde::Serialize;

pub const BINS: usize = 256;

/// What a bin counts, per lane (`+ side`).
pub const SEEN: usize = 0;
pub const ONLY: usize = 2;
pub const REORDERED: usize = 4;
pub const LATE: usize = 6;

/// Counts of one bin: seen at A, at B, only at A, only at B, reordered as seen at A, at
/// B, late arriving at A, at B.
pub type Bin = [u32; 8];

#[derive(Debug, Clone, Default, Serialize)]
pub struct Timelines {
    /// A's clock at the start of bin 0.
    pub origin_ns: i64,
    pub width_ns: i64,
    /// Per pair, its bins (trailing empty ones left out).
    pub pairs: Vec<Vec<Bin>>,
    #[serde(skip)]
    started: bool,
}

impl Timelines {
    pub fn add_pair(&mut self) {
        self.pairs.push(Vec::new());
    }

    /// Adds `n` to counter `what` of pair `pair` at time `t` (A's clock).
    pub fn add(&mut self, pair: usize, t: i64, what: usize, n: u32) {
        if !self.started {
            self.started = true;
            self.origin_ns = t;
            self.width_ns = 1_000_000;
        }
        let mut k = (t.saturating_sub(self.origin_ns)).max(0) / self.width_ns;
        while k >= BINS as i64 {
            self.widen();
            k = (t.saturating_sub(self.origin_ns)).max(0) / self.width_ns;
        }
        let Some(bins) = self.pairs.get_mut(pair) else {
            return;
        };
        let k = k as usize;
        if bins.len() <= k {
            bins.resize(k + 1, [0; 8]);
        }
        bins[k][what] = bins[k][what].saturating_add(n);
    }

    fn widen(&mut self) {
        self.width_ns = self.width_ns.saturating_mul(2);
        for bins in &mut self.pairs {
            let merged: Vec<Bin> = bins
                .chunks(2)
                .map(|c| {
                    let mut b = c[0];
                    if let Some(d) = c.get(1) {
                        for (x, y) in b.iter_mut().zip(d) {
                            *x = x.saturating_add(*y);
                        }
                    }
                    b
                })
                .collect();
            *bins = merged;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_widen_and_keep_every_count() {
        let mut t = Timelines::default();
        t.add_pair();
        for i in 0..10_000i64 {
            t.add(0, 1_000 + i * 1_000_000, SEEN, 1);
        }
        assert!(t.pairs[0].len() <= BINS);
        assert_eq!(t.pairs[0].iter().map(|b| b[SEEN] as u64).sum::<u64>(), 10_000);
        assert_eq!(t.width_ns, 64_000_000);
    }
}
