//! One direction's one-way delays once the clocks are fitted (RFC 7679's metric, one
//! per datagram seen at both points): percentiles, RFC 3550's interarrival jitter, and
//! the late datagrams and the spikes they make.

use super::pair::{Event, LISTED};
use serde::Serialize;

/// A datagram's delay and where it was seen.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Delayed {
    /// Passed the upstream point (its clock).
    pub up_ns: i64,
    /// Reached the downstream point (its clock).
    pub down_ns: i64,
    /// On A's clock, for the timeline.
    pub down_on_a: i64,
    pub delay_ns: f64,
    pub event: Event,
}

/// A run of late datagrams, consecutive in the upstream point's order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Spike {
    /// When its first and last datagram passed the upstream point (its clock).
    pub start_ns: i64,
    pub end_ns: i64,
    pub datagrams: u64,
    pub peak_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delay {
    /// Datagrams whose delay was taken (seen at both points, first copies).
    pub samples: u64,
    /// One in this many datagrams seen at both was kept (1: every one).
    pub sampled_one_in: u64,
    /// Delays above the direction's floor: the clocks' offset is unknown (traffic one
    /// way only), so the fixed part of the delay is.
    pub above_floor: bool,
    /// The smallest delay (RFC 7679's minimum), null when `above_floor`.
    pub floor_ms: Option<f64>,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// RFC 3550's interarrival jitter J (J += (|D| − J)/16 over arrivals in order),
    /// averaged over the direction.
    pub jitter_ms: f64,
    /// A datagram is late when its delay exceeds this: the median plus the larger of
    /// 10 ms and three interquartile ranges.
    pub late_threshold_ms: f64,
    pub late: u64,
    pub spikes: u64,
    /// The spikes, in order (the first 1000).
    pub spike_list: Vec<Spike>,
}

/// The value at rank ⌈q·n⌉ (nearest rank) of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The figures of `d` (in upstream order), and its late datagrams.
pub fn summarize(d: &[Delayed], stride: u64, above_floor: bool) -> (Delay, Vec<Delayed>) {
    let mut sorted: Vec<f64> = d.iter().map(|x| x.delay_ns).collect();
    sorted.sort_unstable_by(f64::total_cmp);
    let p = |q| percentile(&sorted, q);
    let (p25, p50, p75) = (p(0.25), p(0.5), p(0.75));
    let threshold = p50 + (3.0 * (p75 - p25)).max(10e6);
    let mut spikes = Vec::new();
    let (mut count, mut late) = (0u64, Vec::new());
    let mut open: Option<Spike> = None;
    for x in d.iter() {
        if x.delay_ns > threshold {
            count += 1;
            if late.len() < LISTED {
                late.push(*x);
            }
            let s = open.get_or_insert(Spike {
                start_ns: x.up_ns,
                end_ns: x.up_ns,
                datagrams: 0,
                peak_ms: 0.0,
            });
            s.end_ns = x.up_ns;
            s.datagrams += 1;
            s.peak_ms = s.peak_ms.max(ms(x.delay_ns));
        } else if let Some(s) = open.take() {
            spikes.push(s);
        }
    }
    spikes.extend(open);
    let jitter = jitter(d);
    let delay = Delay {
        samples: d.len() as u64,
        sampled_one_in: stride,
        above_floor,
        floor_ms: (!above_floor).then(|| ms(p(0.0))),
        p50_ms: ms(p50),
        p90_ms: ms(p(0.9)),
        p99_ms: ms(p(0.99)),
        p999_ms: ms(p(0.999)),
        max_ms: ms(p(1.0)),
        jitter_ms: ms(jitter),
        late_threshold_ms: ms(threshold),
        late: count,
        spikes: spikes.len() as u64,
        spike_list: spikes.into_iter().take(LISTED).collect(),
    };
    (delay, late)
}

/// RFC 3550 §6.4.1 over arrivals in order at the downstream point, averaged.
fn jitter(d: &[Delayed]) -> f64 {
    let mut arrivals: Vec<(i64, i64)> = d.iter().map(|x| (x.down_ns, x.up_ns)).collect();
    if !arrivals.is_sorted() {
        arrivals.sort_unstable();
    }
    let (mut j, mut sum) = (0.0f64, 0.0f64);
    for w in arrivals.windows(2) {
        let dd = (w[1].0 - w[0].0) as f64 - (w[1].1 - w[0].1) as f64;
        j += (dd.abs() - j) / 16.0;
        sum += j;
    }
    if d.len() < 2 {
        0.0
    } else {
        sum / (d.len() - 1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 5.0);
        assert_eq!(percentile(&v, 0.9), 9.0);
        assert_eq!(percentile(&v, 0.99), 10.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 1.0), 10.0);
    }
}
