//! Acks settled as they are read: a datagram's acks on the other direction's tracker,
//! and the acks of messages per stream.

use super::*;

impl Statistics {
    /// The acks a whole packet carries settle the other direction's sequences. A
    /// fragment's copy of the header is not read until its packet is complete (as
    /// reliable.io's receiver does), so the reassembled packet brings them.
    #[inline(always)]
    pub(super) fn ack(&mut self, e: &PacketEvent) {
        // Most protocols carry no acks: decided before the flow's key is copied out.
        if !self.ack_analysis || (e.ack.is_none() && e.acks().is_empty()) {
            return;
        }
        self.settle_acks(e);
    }

    /// [`Statistics::ack`] for a packet that carries acks.
    #[inline(never)]
    pub(super) fn settle_acks(&mut self, e: &PacketEvent) {
        let Some(key) = e.flow else {
            return;
        };
        let (back, second) = self.acked_side(key, e.ts_ns);
        let tracker = (self.by_key.get(&back)).and_then(|&i| self.flows.get_mut(i as usize));
        if tracker
            .as_ref()
            .is_some_and(|fl| fl.acks.is_none() && !fl.acks_not_tracked)
            || tracker.is_none()
        {
            // Nothing of the other direction's sequence to settle: said, not dropped.
            self.report.capture.acks_unmatched += 1;
        }
        if let Some(&i) = self.by_key.get(&back)
            && let Some(fl) = self.flows.get_mut(i as usize)
            && let Some(t) = fl.acks.as_mut()
        {
            let before = t.heap_bytes();
            // Without ack-bits, an ack acks its one sequence.
            if let Some(ack) = e.ack {
                t.acked(
                    ack as u64,
                    self.ack_width,
                    e.ack_bits.unwrap_or(1),
                    e.ts_ns,
                    second,
                );
            }
            for item in e.acks().iter().filter(|i| i.stream.is_none()) {
                acks::datagram_item(t, item, self.ack_width, e.ts_ns, second);
            }
            fl.charge_acks(before, &mut self.state);
        }
    }

    /// A datagram's messages: its stream sequences wait for the other direction's acks,
    /// and its acks settle the other direction's.
    pub(super) fn message_acks(&mut self, e: &PacketEvent) {
        let (Some(index), Some(key), Some(p)) = (e.flow_index, e.flow, self.cfg.program.clone()) else {
            return;
        };
        let defs = &p.params.streams;
        if let Some(fl) = self.flows.get_mut(index as usize)
            && !fl.acks_not_tracked
        {
            let before = fl.message_ack_bytes();
            let keep = self.keep_ack_log;
            (fl.message_acks)
                .get_or_insert_with(|| {
                    let mut a = Box::<msgacks::FlowMessageAcks>::default();
                    if keep {
                        a.keep_log();
                    }
                    a
                })
                .sent(defs, e.messages, e.ts_ns);
            fl.charge_message_acks(before, &mut self.state);
        }
        if !e.messages.iter().any(|m| m.ack.is_some()) && e.acks().is_empty() {
            return;
        }
        let (back, second) = self.acked_side(key, e.ts_ns);
        if let Some(&i) = self.by_key.get(&back)
            && let Some(fl) = self.flows.get_mut(i as usize)
            && !fl.acks_not_tracked
        {
            let before = fl.message_ack_bytes();
            let keep = self.keep_ack_log;
            let acks = fl.message_acks.get_or_insert_with(|| {
                let mut a = Box::<msgacks::FlowMessageAcks>::default();
                if keep {
                    a.keep_log();
                }
                a
            });
            // One by one first: a cumulative ack in the same datagram (KCP's una beside
            // its ACKs) covers only what they did not.
            let mut matched = true;
            for m in e.messages {
                matched &= acks.acked(defs, m, e.ts_ns, second);
            }
            for item in e.acks().iter().filter(|i| i.stream.is_some()) {
                matched &= acks.acked_item(defs, item, e.ts_ns, second);
            }
            fl.charge_message_acks(before, &mut self.state);
            if !matched {
                self.report.capture.acks_unmatched += 1;
            }
        }
    }

    /// The direction a packet of flow `key` acks (the other one), and the packet's second
    /// on the report's timeline (at `ts_ns`).
    fn acked_side(&self, key: FlowId, ts_ns: i64) -> (FlowId, Option<u32>) {
        let back = FlowId {
            src: key.dst,
            dst: key.src,
        };
        let second = self
            .report
            .timeline
            .start_ns
            .and_then(|start| u32::try_from(ts_ns.saturating_sub(start) / 1_000_000_000).ok());
        (back, second)
    }
}
