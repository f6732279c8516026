//! One flow's state while the capture is read: its counters, the recent sizes that
//! bursts are judged on, and the memory it may hold.

use super::*;

#[derive(Clone)]
pub(super) struct FlowState {
    pub(super) stats: FlowStats,
    /// Recent (time, payload size) for "sizes in the second before a loss burst".
    pub(super) recent: VecDeque<(i64, u32)>,
    /// Datagrams up to this time were already counted as before a burst.
    pub(super) counted_until: i64,
    /// The frame that opened the flow: shards merge flows back in this order.
    pub(super) first_frame: u64,
    /// This direction's sequences, settled by the other direction's acks.
    pub(super) acks: Option<Box<acks::AckTracker>>,
    /// This direction's message streams, settled by the other direction's message acks.
    pub(super) message_acks: Option<Box<msgacks::FlowMessageAcks>>,
    /// Its ack analysis went past the flow state budget and was given up.
    pub(super) acks_not_tracked: bool,
    /// Its burst window could not grow within the flow state budget: it samples fewer
    /// of the second's datagrams.
    pub(super) burst_window_capped: bool,
    /// The protocol ids its first CRC mismatches validate with (at most [`CRC_SAMPLES`]).
    pub(super) crc_ids: Vec<u32>,
}

/// CRC mismatches of a flow whose protocol id is solved: enough to see one id repeat,
/// few enough to cost nothing on a capture of mismatches.
pub(super) const CRC_SAMPLES: usize = 16;

/// The id most of a flow's solved mismatches share, when at least two and at least half
/// do: one datagram solves to some id whatever it is, damage to a different one each time.
pub(super) fn other_id(ids: &[u32]) -> Option<report::OtherId> {
    let mut best: Option<(u32, u32)> = None;
    for &id in ids {
        let n = ids.iter().filter(|&&x| x == id).count() as u32;
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((id, n));
        }
    }
    let (id, n) = best?;
    (n >= 2 && 2 * n >= ids.len() as u32).then(|| report::OtherId {
        id: format!("0x{id:08X}"),
        sampled: ids.len() as u32,
        matching: n,
    })
}

impl FlowState {
    pub(super) fn new(key: FlowId, num_types: u32, first_frame: u64) -> Self {
        FlowState {
            stats: FlowStats::new(key.src, key.dst, num_types),
            recent: VecDeque::new(),
            counted_until: i64::MIN,
            first_frame,
            acks: None,
            message_acks: None,
            acks_not_tracked: false,
            burst_window_capped: false,
            crc_ids: Vec::new(),
        }
    }

    /// Bytes this flow's analysis holds (its own size included).
    pub(super) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.recent.capacity() * std::mem::size_of::<(i64, u32)>()
            + self.stats.heap_bytes()
            + self.ack_bytes()
            + self.message_ack_bytes()
    }

    /// Bytes of its message ack analysis, all charged to the flow state budget.
    pub(super) fn message_ack_bytes(&self) -> usize {
        self.message_acks.as_ref().map_or(0, |a| {
            std::mem::size_of::<msgacks::FlowMessageAcks>() + a.heap_bytes()
        })
    }

    /// [`FlowState::charge_acks`] for the message ack analysis.
    pub(super) fn charge_message_acks(&mut self, before: usize, budget: &mut StateBudget) {
        let now = self.message_ack_bytes();
        budget.used = (budget.used + now).saturating_sub(before);
        if budget.used > budget.limit {
            budget.used -= now;
            budget.acks_not_tracked += 1;
            self.message_acks = None;
            self.acks_not_tracked = true;
        }
    }

    /// Bytes of its ack analysis, charged to the flow state budget.
    pub(super) fn ack_bytes(&self) -> usize {
        self.acks.as_ref().map_or(0, |a| a.heap_bytes())
    }

    /// Charges the ack analysis' growth since it held `before` bytes (beyond what every
    /// flow may hold, [`acks::UNBUDGETED`]); past the budget it is given up: the flow's
    /// ack figures are then "not tracked", never partial.
    pub(super) fn charge_acks(&mut self, before: usize, budget: &mut StateBudget) {
        let charged = |b: usize| b.saturating_sub(acks::UNBUDGETED);
        let now = charged(self.ack_bytes());
        budget.used = (budget.used + now).saturating_sub(charged(before));
        if budget.used > budget.limit {
            budget.used -= now;
            budget.acks_not_tracked += 1;
            self.acks = None;
            self.acks_not_tracked = true;
        }
    }

    /// Room in the burst window for one more datagram: grown within the budget (beyond
    /// [`RECENT_UNBUDGETED`]), or else the oldest dropped (the window then samples).
    pub(super) fn make_room(&mut self, budget: &mut StateBudget) {
        let cap = self.recent.capacity();
        if self.recent.len() < cap || cap >= RECENT || self.burst_window_capped {
            return;
        }
        let want = (cap * 2).clamp(4, RECENT);
        let unit = std::mem::size_of::<(i64, u32)>();
        let charged = |c: usize| c.saturating_sub(RECENT_UNBUDGETED) * unit;
        if budget.used + charged(want) - charged(cap) <= budget.limit {
            self.recent.reserve_exact(want - self.recent.len());
            budget.used += charged(self.recent.capacity()) - charged(cap);
        } else {
            self.burst_window_capped = true;
            budget.burst_window_capped += 1;
        }
    }

    /// Sizes of the second before each loss burst, against all sizes.
    pub(super) fn sizes_before_bursts(
        &mut self,
        ts_ns: i64,
        event: SeqEvent,
        size: u32,
        bursts: &mut BurstSizes,
        budget: u32,
        state: &mut StateBudget,
    ) {
        while self
            .recent
            .front()
            .is_some_and(|&(t, _)| t < ts_ns.saturating_sub(BURST_WINDOW_NS) || self.recent.len() >= RECENT)
        {
            self.recent.pop_front();
        }
        // The entries a cache line on from the oldest: read when they leave the window,
        // a second after they were written, and out of cache by then (the front's load
        // was most of this function's time with 128 clients).
        if let Some(x) = self.recent.get(4) {
            prefetch(x);
        }
        self.make_room(state);
        if self.burst_window_capped && self.recent.len() >= self.recent.capacity() {
            self.recent.pop_front();
        }
        if self.recent.capacity() > self.recent.len() {
            self.recent.push_back((ts_ns, size));
        }
        bursts.all.add(size, budget);
        if let SeqEvent::New { gap } = event
            && gap >= 2
        {
            // A burst: the datagrams of the second before it (not counted yet).
            bursts.bursts += 1;
            let from = ts_ns.saturating_sub(BURST_WINDOW_NS).max(self.counted_until);
            for &(_, s) in self.recent.iter().filter(|(t, _)| *t > from && *t < ts_ns) {
                bursts.before.add(s, budget);
            }
            self.counted_until = ts_ns;
        }
    }
}

/// The flow state budget ([`Config::flow_state_budget`]): bytes held by what grows per
/// flow with the traffic, shared by every flow as reassembly's budget is, and the flows
/// it turned away.
#[derive(Clone, Default)]
pub(super) struct StateBudget {
    pub(super) limit: usize,
    pub(super) used: usize,
    pub(super) acks_not_tracked: u64,
    pub(super) burst_window_capped: u64,
}

/// Payload sizes in the second before each loss burst (a gap of two or more sequences)
/// against all sizes: do oversize packets come before the losses?
#[derive(Default, Clone)]
pub(super) struct BurstSizes {
    pub(super) bursts: u64,
    pub(super) before: SizeTally,
    pub(super) all: SizeTally,
}

#[derive(Default, Clone, Copy)]
pub(super) struct SizeTally {
    pub(super) count: u64,
    pub(super) bytes: u64,
    pub(super) over_budget: u64,
}

impl SizeTally {
    pub(super) fn merge(&mut self, o: &SizeTally) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.over_budget += o.over_budget;
    }

    pub(super) fn add(&mut self, size: u32, budget: u32) {
        self.count += 1;
        self.bytes += size as u64;
        self.over_budget += (size > budget) as u64;
    }
}

impl BurstSizes {
    pub(super) fn report(&self) -> BurstReport {
        let rest = SizeTally {
            count: self.all.count - self.before.count,
            bytes: self.all.bytes - self.before.bytes,
            over_budget: self.all.over_budget - self.before.over_budget,
        };
        let share = |t: &SizeTally| {
            if t.count > 0 {
                t.over_budget as f64 / t.count as f64
            } else {
                0.0
            }
        };
        let mean = |t: &SizeTally| {
            if t.count > 0 {
                t.bytes as f64 / t.count as f64
            } else {
                0.0
            }
        };
        let (b, r) = (share(&self.before), share(&rest));
        // The same rule as every finding: a minimum sample on both sides, and the 95%
        // intervals apart.
        let (low, _) = report::wilson(self.before.over_budget, self.before.count);
        let (_, rest_high) = report::wilson(rest.over_budget, rest.count);
        let finding = (self.bursts > 0
            && self.before.count >= report::MIN_SAMPLE
            && rest.count >= report::MIN_SAMPLE
            && b > 2.0 * r
            && low > rest_high)
            .then_some(report::BurstFinding {
                before_share: b,
                before_count: self.before.count,
                rest_share: r,
                rest_count: rest.count,
            });
        BurstReport {
            bursts: self.bursts,
            before_count: self.before.count,
            before_mean_size: mean(&self.before),
            before_over_budget: b,
            rest_count: rest.count,
            rest_mean_size: mean(&rest),
            rest_over_budget: r,
            finding,
        }
    }
}
