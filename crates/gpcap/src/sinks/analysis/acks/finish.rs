//! The end of a capture: what is still unsettled, and the figures of one direction or
//! of several merged.

use super::*;

impl AckTracker {
    /// Settles what is left at the end of the capture.
    /// No figures for a direction the other never acked (it sent no packet with acks):
    /// nothing says whether its sequences arrived.
    pub fn finish(self) -> Option<AckStats> {
        self.finish_logged().0
    }

    /// [`AckTracker::finish`], and what each captured sequence settled as (when kept; none
    /// without a peer that acks).
    pub fn finish_logged(mut self) -> (Option<AckStats>, Vec<Settled>) {
        if !self.settle_end() {
            return (None, Vec::new());
        }
        self.summarize();
        let log = self.log.take().unwrap_or_default();
        (Some(self.stats), log)
    }

    /// The trackers of several streams as one direction's figures: counts added, round
    /// trips of all of them (acks per message, ENet's per channel).
    pub fn finish_many(trackers: impl IntoIterator<Item = AckTracker>) -> Option<AckStats> {
        let mut all: Option<AckTracker> = None;
        for mut t in trackers {
            if !t.settle_end() {
                continue;
            }
            let Some(a) = all.as_mut() else {
                all = Some(t);
                continue;
            };
            let (s, o) = (&mut a.stats, &t.stats);
            s.sequences += o.sequences;
            s.acked += o.acked;
            s.acked_not_captured += o.acked_not_captured;
            s.never_acked += o.never_acked;
            s.unacked_at_end += o.unacked_at_end;
            s.rtt_before_sent += o.rtt_before_sent;
            s.acked_by.add(&o.acked_by);
            s.acks_lost += o.acks_lost;
            s.naked += o.naked;
            s.retransmissions += o.retransmissions;
            s.spurious_retransmissions += o.spurious_retransmissions;
            s.never_acked_resent_or_naked += o.never_acked_resent_or_naked;
            s.acks_of_unsent += o.acks_of_unsent;
            s.naks_of_unsent += o.naks_of_unsent;
            a.echoed_samples += t.echoed_samples;
            a.first_copy_samples += t.first_copy_samples;
            let room = MAX_RUNS.saturating_sub(s.never_acked_runs.len());
            s.never_acked_runs.extend(o.never_acked_runs.iter().take(room));
            for (b, n) in std::mem::take(&mut t.rtt.buckets) {
                *a.rtt.buckets.entry(b).or_default() += n;
            }
            if t.rtt.samples > 0 {
                a.rtt.min = if a.rtt.samples == 0 {
                    t.rtt.min
                } else {
                    a.rtt.min.min(t.rtt.min)
                };
                a.rtt.max = a.rtt.max.max(t.rtt.max);
                a.rtt.samples += t.rtt.samples;
            }
            a.seconds.extend(t.seconds);
        }
        let mut a = all?;
        a.seconds.sort_by_key(|x| x.0);
        a.seconds.dedup_by(|later, kept| {
            if later.0 != kept.0 {
                return false;
            }
            kept.1 += later.1;
            kept.2 += later.2;
            kept.3 = kept.3.max(later.3);
            true
        });
        a.summarize();
        Some(a.stats)
    }

    /// Settles the sequences left at the end; false when there are no figures.
    pub(super) fn settle_end(&mut self) -> bool {
        let Some(first) = self.first else {
            return false;
        };
        if !self.peer_acks {
            return false;
        }
        let peer = self.peer_ack.unwrap_or(first - 1);
        for ext in (self.highest - self.sent_ns.len() as i128 + 1).max(first)..=self.highest {
            self.note_naked(ext);
            if self.is_acked(ext) {
                let i = self.index(ext);
                self.count_acks_lost(i - i % 64, 1 << (i % 64));
                continue;
            }
            if ext > peer {
                self.stats.unacked_at_end += 1;
            } else {
                self.settle_run(ext, ext);
                let i = self.index(ext);
                if Self::bit(&self.naked, i) || Self::bit(&self.resent, i) {
                    self.stats.never_acked_resent_or_naked += 1;
                }
                self.log(ext, self.sent_ns[i], Settled::NEVER);
            }
        }
        true
    }

    /// The figures from what was settled.
    pub(super) fn summarize(&mut self) {
        let judged = self.stats.sequences - self.stats.unacked_at_end;
        self.stats.ack_implied_loss = if judged == 0 {
            0.0
        } else {
            self.stats.never_acked as f64 / judged as f64
        };
        self.stats.rtt_ms = self.rtt.summary();
        self.stats.rtt_source = match (self.echoed_samples > 0, self.first_copy_samples > 0) {
            (true, true) => Some("echoed send times and first copies".into()),
            (true, false) => Some("echoed send times".into()),
            (false, true) => Some("first copies".into()),
            (false, false) => None,
        };
        self.stats.rtt_timeline = self
            .seconds
            .iter()
            .map(|&(s, n, sum, max)| (s, n, sum as f64 / n as f64 / 1e3, max as f64 / 1e3))
            .collect();
    }
}
