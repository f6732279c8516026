//! The acks section as a tap of its own: what each direction sent waits on its flow's
//! tracker, and the other direction's acks settle it as they are read (a datagram's
//! acks, and the acks of messages per stream). The trackers stay with their flows, so
//! that shards merge them with the flows; the tap holds what finds them (the flows by
//! key), how acks are read, and the acks that had nothing to settle.

use super::*;

#[derive(Clone)]
pub(super) struct AckTap {
    /// The definition marks ack and ack-bits fields.
    on: bool,
    /// The definition's messages ack stream sequences (`role=ack stream=…`).
    messages: bool,
    /// Keep what each captured sequence settled as (see [`Statistics::ack_facts`]).
    keep_log: bool,
    /// Bits of the ack field ([`acks::ack_width`]).
    width: u32,
    /// Tracked flows by their key, to find the direction an ack answers.
    by_key: HashMap<FlowId, u32>,
    /// Acks with nothing of the other direction's to settle: said, not dropped.
    unmatched: u64,
}

impl AckTap {
    pub(super) fn new(cfg: &Config) -> Self {
        let p = cfg.program.as_deref();
        AckTap {
            on: p.is_some_and(|p| {
                use gpcap_dissect::program::Role;
                p.has_role(Role::Ack) || p.params.datagram_acks
            }),
            messages: p.is_some_and(|p| p.params.streams.iter().any(|s| s.acked)),
            keep_log: false,
            width: p.map_or(16, acks::ack_width),
            by_key: HashMap::new(),
            unmatched: 0,
        }
    }

    pub(super) fn keep_log(&mut self) {
        self.keep_log = true;
    }

    /// A flow tracked at `index`, found by its key when the other direction acks.
    pub(super) fn flow(&mut self, key: FlowId, index: u32) {
        self.by_key.insert(key, index);
    }

    /// Whether the definition's messages ack stream sequences.
    #[inline(always)]
    pub(super) fn of_messages(&self) -> bool {
        self.messages
    }

    /// The sending side: the flow's own counter, sent (packets of another sequence
    /// space, and a sequence past the plausible window, a jump, are not what its acks
    /// count).
    #[inline(always)]
    pub(super) fn sent(
        &self,
        flow: &mut FlowState,
        cfg: &Config,
        state: &mut StateBudget,
        e: &PacketEvent,
        ptype: u32,
    ) {
        if !self.on || e.flow_index.is_none() || flow.acks_not_tracked || e.seq_event == Some(SeqEvent::Jump)
        {
            return;
        }
        let Some(seq) = e.sequence else {
            return;
        };
        if e.fragment.is_none() && cfg.program.as_ref().is_some_and(|p| p.space_of(ptype) != 0) {
            return;
        }
        let bits = cfg.sequence_bits();
        let keep = self.keep_log;
        let before = flow.ack_bytes();
        flow.acks
            .get_or_insert_with(|| {
                let mut t = Box::new(acks::AckTracker::new(bits));
                if keep {
                    t.keep_log();
                }
                t
            })
            .sent_part(seq, e.ts_ns, e.fragment.is_some());
        flow.charge_acks(before, state);
    }

    /// The acks a whole packet carries settle the other direction's sequences. A
    /// fragment's copy of the header is not read until its packet is complete (as
    /// reliable.io's receiver does), so the reassembled packet brings them. `start`: the
    /// timeline's first second.
    #[inline(always)]
    pub(super) fn ack(
        &mut self,
        flows: &mut [FlowState],
        state: &mut StateBudget,
        start: Option<i64>,
        e: &PacketEvent,
    ) {
        // Most protocols carry no acks: decided before the flow's key is copied out.
        if !self.on || (e.ack.is_none() && e.acks().is_empty()) {
            return;
        }
        self.settle(flows, state, start, e);
    }

    /// [`AckTap::ack`] for a packet that carries acks.
    #[inline(never)]
    fn settle(
        &mut self,
        flows: &mut [FlowState],
        state: &mut StateBudget,
        start: Option<i64>,
        e: &PacketEvent,
    ) {
        let Some(key) = e.flow else {
            return;
        };
        let (back, second) = acked_side(key, start, e.ts_ns);
        let tracker = (self.by_key.get(&back)).and_then(|&i| flows.get_mut(i as usize));
        if tracker
            .as_ref()
            .is_none_or(|fl| fl.acks.is_none() && !fl.acks_not_tracked)
        {
            // Nothing of the other direction's sequence to settle: said, not dropped.
            self.unmatched += 1;
        }
        if let Some(fl) = tracker
            && let Some(t) = fl.acks.as_mut()
        {
            let before = t.heap_bytes();
            // Without ack-bits, an ack acks its one sequence.
            if let Some(ack) = e.ack {
                t.acked(ack as u64, self.width, e.ack_bits.unwrap_or(1), e.ts_ns, second);
            }
            for item in e.acks().iter().filter(|i| i.stream.is_none()) {
                acks::datagram_item(t, item, self.width, e.ts_ns, second);
            }
            fl.charge_acks(before, state);
        }
    }

    /// A datagram's messages: its stream sequences wait for the other direction's acks,
    /// and its acks settle the other direction's.
    pub(super) fn messages(
        &mut self,
        flows: &mut [FlowState],
        state: &mut StateBudget,
        (start, cfg): (Option<i64>, &Config),
        e: &PacketEvent,
    ) {
        let (Some(index), Some(key), Some(p)) = (e.flow_index, e.flow, cfg.program.as_deref()) else {
            return;
        };
        let defs = &p.params.streams;
        let keep = self.keep_log;
        if let Some(fl) = flows.get_mut(index as usize)
            && !fl.acks_not_tracked
        {
            let before = fl.message_ack_bytes();
            message_acks(&mut fl.message_acks, keep).sent(defs, e.messages, e.ts_ns);
            fl.charge_message_acks(before, state);
        }
        if !e.messages.iter().any(|m| m.ack.is_some()) && e.acks().is_empty() {
            return;
        }
        let (back, second) = acked_side(key, start, e.ts_ns);
        if let Some(&i) = self.by_key.get(&back)
            && let Some(fl) = flows.get_mut(i as usize)
            && !fl.acks_not_tracked
        {
            let before = fl.message_ack_bytes();
            let acks = message_acks(&mut fl.message_acks, keep);
            // One by one first: a cumulative ack in the same datagram (KCP's una beside
            // its ACKs) covers only what they did not.
            let mut matched = true;
            for m in e.messages {
                matched &= acks.acked(defs, m, e.ts_ns, second);
            }
            for item in e.acks().iter().filter(|i| i.stream.is_some()) {
                matched &= acks.acked_item(defs, item, e.ts_ns, second);
            }
            fl.charge_message_acks(before, state);
            if !matched {
                self.unmatched += 1;
            }
        }
    }

    /// Adds a shard's acks that had nothing to settle (the flows by key are only for
    /// counting: merged statistics count nothing more).
    pub(super) fn merge(&mut self, o: AckTap) {
        self.unmatched += o.unmatched;
    }

    /// Acks that had nothing of the other direction's to settle.
    pub(super) fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// Bytes held to find flows by key.
    pub(super) fn heap_bytes(&self) -> usize {
        self.by_key.capacity() * (std::mem::size_of::<(FlowId, u32)>() + 1)
    }
}

/// A flow's message ack analysis, made on its first use (keeping its log with `keep`).
fn message_acks(a: &mut Option<Box<msgacks::FlowMessageAcks>>, keep: bool) -> &mut msgacks::FlowMessageAcks {
    a.get_or_insert_with(|| {
        let mut a = Box::<msgacks::FlowMessageAcks>::default();
        if keep {
            a.keep_log();
        }
        a
    })
}

/// The direction a packet of flow `key` acks (the other one), and the packet's second
/// on the report's timeline (at `ts_ns`, the timeline starting at `start`).
fn acked_side(key: FlowId, start: Option<i64>, ts_ns: i64) -> (FlowId, Option<u32>) {
    let back = FlowId {
        src: key.dst,
        dst: key.src,
    };
    let second = start.and_then(|start| u32::try_from(ts_ns.saturating_sub(start) / 1_000_000_000).ok());
    (back, second)
}
