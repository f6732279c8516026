//! Datagram sizes: a bounded histogram, exact to 16 bytes below 4 KiB, and its
//! percentiles.

use super::*;

/// Payload sizes: 16-byte buckets up to 4 KiB, 256-byte buckets above — percentiles
/// within a bucket in at most 2 KiB per flow. Buckets exist up to the largest size seen:
/// a flow of small datagrams holds a few bytes (a flood of 16,384 one-datagram flows held
/// 32 MB of empty buckets).
#[derive(Debug, Clone, Default)]
pub struct SizeHist {
    pub(super) buckets: Vec<u32>,
    pub count: u64,
    pub max: u32,
}

pub(super) const FINE: u32 = 4096;
pub(super) const FINE_STEP: u32 = 16;
pub(super) const COARSE_STEP: u32 = 256;
pub(super) const BUCKETS: usize = (FINE / FINE_STEP + (65536 - FINE) / COARSE_STEP) as usize;

pub(super) fn bucket_of(size: u32) -> usize {
    if size < FINE {
        (size / FINE_STEP) as usize
    } else {
        ((FINE / FINE_STEP + (size.min(65535) - FINE) / COARSE_STEP) as usize).min(BUCKETS - 1)
    }
}

/// The largest size that falls in bucket `b`.
pub(super) fn bucket_top(b: usize) -> u32 {
    let fine = (FINE / FINE_STEP) as usize;
    if b < fine {
        (b as u32 + 1) * FINE_STEP - 1
    } else {
        FINE + (b - fine + 1) as u32 * COARSE_STEP - 1
    }
}

impl SizeHist {
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * 4
    }

    pub fn add(&mut self, size: u32) {
        let b = bucket_of(size);
        if b >= self.buckets.len() {
            let len = (b + 1).max(self.buckets.len() * 2).min(BUCKETS);
            self.buckets.reserve_exact(len - self.buckets.len());
            self.buckets.resize(len, 0);
        }
        self.buckets[b] = self.buckets[b].saturating_add(1);
        self.count += 1;
        self.max = self.max.max(size);
    }

    /// Datagrams in the bucket that holds `size`.
    pub fn bucket(&self, size: u32) -> u32 {
        self.buckets.get(bucket_of(size)).copied().unwrap_or(0)
    }

    /// Upper edge of the bucket holding quantile `q` (capped at the max seen).
    pub fn quantile(&self, q: f64) -> u32 {
        if self.count == 0 {
            return 0;
        }
        let target = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut acc = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            acc += n as u64;
            if acc >= target {
                return bucket_top(i).min(self.max);
            }
        }
        self.max
    }
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Percentiles {
    pub p50: u32,
    pub p95: u32,
    pub p99: u32,
    pub max: u32,
}
