//! The sequential run's peak reassembly memory, from shards. A frame goes to exactly one
//! shard, and while nothing is evicted for memory (otherwise the capture is analyzed
//! again on one core) a shard holds what the sequential run holds for its flows: at any
//! frame, the sequential total is the sum of the shards'. Adding the shards' marks in
//! frame order gives its peak exactly, not a sum of the shards' own peaks.

use gpcap_engine::MemoryMark;
use std::collections::VecDeque;

/// Marks from every shard, added in frame order as far as every shard has reported.
pub struct PeakMerger {
    queues: Vec<VecDeque<MemoryMark>>,
    /// Each shard has sent its marks of every frame up to here.
    through: Vec<(u32, u64)>,
    held: Vec<usize>,
    total: usize,
    peak: usize,
}

impl PeakMerger {
    pub fn new(shards: usize) -> Self {
        PeakMerger {
            queues: vec![VecDeque::new(); shards],
            through: vec![(0, 0); shards],
            held: vec![0; shards],
            total: 0,
            peak: 0,
        }
    }

    /// Shard `shard`'s marks, in its frame order, of every frame up to `through`.
    pub fn add(&mut self, shard: usize, marks: Vec<MemoryMark>, through: (u32, u64)) {
        let Some(q) = self.queues.get_mut(shard) else {
            return;
        };
        q.extend(marks);
        self.through[shard] = self.through[shard].max(through);
        self.advance();
    }

    /// Adds the marks of every frame all shards have reported, oldest first.
    fn advance(&mut self) {
        let Some(&safe) = self.through.iter().min() else {
            return;
        };
        loop {
            let next = self
                .queues
                .iter()
                .enumerate()
                .filter_map(|(s, q)| q.front().map(|m| (m.at, s)))
                .filter(|&(at, _)| at <= safe)
                .min();
            let Some((_, s)) = next else { break };
            let Some(m) = self.queues[s].pop_front() else {
                break;
            };
            let others = self.total - self.held[s];
            self.peak = self.peak.max(others + m.high);
            self.total = others + m.after;
            self.held[s] = m.after;
        }
    }

    /// Every shard is done: the peak.
    pub fn finish(mut self) -> usize {
        self.through.iter_mut().for_each(|t| *t = (u32::MAX, u64::MAX));
        self.advance();
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(frame: u64, high: usize, after: usize) -> MemoryMark {
        MemoryMark {
            at: (0, frame),
            high,
            after,
        }
    }

    /// Two shards that each peak at 100 alone, at different times, and overlap at 150:
    /// the peak is what was held at once, not the sum of the peaks (200).
    #[test]
    fn the_peak_is_of_what_was_held_at_once() {
        let mut m = PeakMerger::new(2);
        m.add(0, vec![mark(1, 100, 100), mark(5, 100, 0)], (0, 6));
        m.add(1, vec![mark(3, 50, 50), mark(7, 100, 0)], (0, 8));
        assert_eq!(m.finish(), 150);
    }

    /// Marks arrive out of frame order across shards; a frame's transient high counts
    /// with what the other shards held then.
    #[test]
    fn marks_are_added_in_frame_order_whatever_their_arrival() {
        let mut m = PeakMerger::new(2);
        m.add(1, vec![mark(2, 30, 30), mark(9, 30, 0)], (0, 10));
        m.add(
            0,
            vec![mark(1, 10, 10), mark(4, 70, 10), mark(11, 10, 0)],
            (0, 12),
        );
        assert_eq!(m.finish(), 100);
    }

    /// A shard that has not reported as far holds back the others' marks: memory stays
    /// what the slowest shard lags by.
    #[test]
    fn marks_wait_for_every_shard() {
        let mut m = PeakMerger::new(2);
        m.add(0, vec![mark(1, 10, 10), mark(9, 10, 10)], (0, 10));
        assert_eq!(m.queues[0].len(), 2);
        m.add(1, vec![], (0, 5));
        assert_eq!(m.queues[0].len(), 1);
        assert_eq!(m.finish(), 10);
    }
}
