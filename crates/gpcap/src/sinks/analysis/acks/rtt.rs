//! Round trips: their summary, and the bounded histogram it is read from.

use super::*;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[non_exhaustive]
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
pub(super) struct RttHist {
    pub(super) buckets: BTreeMap<u16, u64>,
    pub(super) samples: u64,
    pub(super) min: u64,
    pub(super) max: u64,
}

pub(super) const SUB: u32 = 32;

pub(super) fn bucket_of(us: u64) -> u16 {
    if us < SUB as u64 {
        return us as u16;
    }
    let e = 63 - us.leading_zeros(); // ≥ 5
    let mantissa = (us >> (e - 5)) as u32 & (SUB - 1);
    ((e - 4) * SUB + mantissa) as u16
}

/// The middle of a bucket, in microseconds.
pub(super) fn bucket_value(b: u16) -> f64 {
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
    pub(super) fn add(&mut self, us: u64) {
        *self.buckets.entry(bucket_of(us)).or_default() += 1;
        self.min = if self.samples == 0 { us } else { self.min.min(us) };
        self.max = self.max.max(us);
        self.samples += 1;
    }

    pub(super) fn quantile(&self, q: f64) -> f64 {
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

    pub(super) fn summary(&self) -> Option<RttSummary> {
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
