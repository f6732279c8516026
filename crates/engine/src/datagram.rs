//! A game datagram through the engine's stages: the port gate, the verdict, decryption,
//! messages, sequences, reassembly, and the events handed to the sink.

use super::*;

/// Hands `e` to the sink, with the field tree when fields are recorded (the tree lives
/// in the validator, not as long as the event: a copy carries it), and the datagram's
/// messages, acks and stream verdicts when the validator read this very datagram.
#[inline]
pub(super) fn emit<S: Sink + ?Sized>(
    sink: &mut Watch<'_, S>,
    e: &PacketEvent<'_>,
    d: &Dissection,
    record: bool,
    fresh: Option<&[streams::StreamEvent]>,
) {
    let (messages, more) = match fresh {
        Some(events) => (
            &d.messages[..],
            Reliability {
                acks: &d.ack_items,
                stream_events: events,
            },
        ),
        None => (&[][..], Reliability::default()),
    };
    let with = !more.acks.is_empty() || !more.stream_events.is_empty();
    if !record && messages.is_empty() && !with {
        return sink.pass(e);
    }
    sink.pass(&PacketEvent {
        dissection: record.then_some(d),
        messages,
        reliability: with.then_some(&more),
        ..*e
    })
}

/// As [`emit`], with a decrypted datagram's plaintext and tree when there is one (the
/// tree's byte values read the plaintext).
#[inline]
pub(super) fn emit_shown<S: Sink + ?Sized>(
    sink: &mut Watch<'_, S>,
    e: &PacketEvent<'_>,
    d: &Dissection,
    record: bool,
    fresh: Option<&[streams::StreamEvent]>,
    stack: Option<&layers::StackState>,
) {
    let Some(stack) = stack else {
        return emit(sink, e, d, record, fresh);
    };
    let carried = stack.carried();
    match stack.shown() {
        Some((plain, tree)) if record => sink.pass(&PacketEvent {
            dissection: Some(tree),
            payload: plain,
            carried,
            ..*e
        }),
        _ if !carried.is_empty() => emit(sink, &PacketEvent { carried, ..*e }, d, record, fresh),
        _ => emit(sink, e, d, record, fresh),
    }
}

impl Engine {
    /// A UDP datagram through the stages, each stopping the walk when the datagram has
    /// nothing more for the next: the port gate and the flow; the verdict (a worker's,
    /// or validated here, with the conversation's remembered values); the layers
    /// ([`carry_layers`](Self::carry_layers)); streams and message fragments; the
    /// sequence ([`sequence_event`](Self::sequence_event)); reassembly
    /// ([`reassemble`](Self::reassemble)); the event to the sink, then the packet a
    /// fragment completed ([`emit_reassembled`](Self::emit_reassembled)).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn datagram<'a, S: Sink + ?Sized>(
        &mut self,
        e: &mut PacketEvent<'a>,
        f: &Frame<'_>,
        ip: IpInfo,
        (sport, dport): (u16, u16),
        payload: &'a [u8],
        truncated: bool,
        ip_fragments: u32,
        preset: Preset<'_>,
        sink: &mut Watch<'_, S>,
    ) {
        // Filled in place: the event is large, and copying it per frame showed; the flow
        // is built in the event, not staged and copied (store forwarding stalls).
        e.ip = Some(ip);
        let key = || FlowId {
            src: SocketAddr::new(ip.src, sport),
            dst: SocketAddr::new(ip.dst, dport),
        };
        e.flow = Some(key());
        e.ip_fragments = ip_fragments;
        e.truncated = truncated;
        e.payload = payload;
        e.size = payload.len() as u32;
        if !self.ports.on_port(sport, dport) {
            e.kind = Kind::OtherUdp;
            sink.pass(e);
            return;
        }
        e.kind = Kind::Game;
        if !self.stream_events.is_empty() {
            self.stream_events.clear();
        }
        e.over_budget = payload.len() as u32 > self.cfg.format.mtu_budget;
        e.flow_index = self.track(PackedFlow::new(ip.src, ip.dst, sport, dport), key, f.number);
        if truncated {
            e.status = Status::Truncated;
            sink.pass(e);
            return;
        }
        let mut computed;
        let fresh = preset.verdict.is_none() || ip_fragments > 1;
        let v = match preset.verdict {
            Some(v) if ip_fragments <= 1 => v,
            _ => {
                computed = self.validator.datagram(payload);
                if self.cfg.program.as_ref().is_some_and(|p| p.params.tracks()) {
                    let key = conversation::ConversationKey::new(ip.src, sport, ip.dst, dport);
                    self.converse(&mut computed, key, payload);
                }
                &computed
            }
        };
        e.status = v.status;
        e.crc = v.crc;
        e.fault = v.fault;
        // Known without a sequence too (a protocol with messages may have none, and an
        // ack datagram carries acks without one).
        e.packet_type = v.packet_type;
        e.ack = v.ack;
        e.ack_bits = v.ack_bits;
        let record = self.validator.records();
        if self.stack.is_some() {
            let opened = preset.opened.filter(|_| ip_fragments <= 1);
            self.carry_layers(e, f, (ip, sport, dport), payload, v, record, opened);
        }
        if fresh
            && matches!(v.status, Status::Ok | Status::Malformed)
            && let Some(index) = e.flow_index
        {
            self.observe_streams(index);
            if self
                .cfg
                .program
                .as_ref()
                .is_some_and(|p| !p.params.message_fragments.is_empty())
            {
                self.message_fragments(e, index, payload);
            }
        }
        let (Some(sequence), Some(ptype), Status::Ok | Status::Malformed) =
            (v.sequence, v.packet_type, v.status)
        else {
            self.show(sink, e, record, fresh);
            self.emit_completed(sink, e, record);
            return;
        };
        e.sequence = Some(sequence);
        e.packet_type = Some(ptype);
        // Copied only when there is one: the whole option read back right after the
        // validator's narrow stores stalled (store forwarding) on every datagram.
        if let Some(fragment) = v.fragment {
            e.fragment = Some(fragment);
        }
        // A flow past the table's cap is validated and counted, without sequence
        // analysis or reassembly.
        let Some(index) = e.flow_index else {
            self.show(sink, e, record, fresh);
            return;
        };
        e.seq_event = self.sequence_event(index, ptype, sequence, v.fragment.is_some(), (ip.src, sport));
        let Some(frag) = v.fragment else {
            self.show(sink, e, record, fresh);
            self.emit_completed(sink, e, record);
            return;
        };
        let (outcome, opens) = self.reassemble(index, sequence, &frag, payload, f.number);
        e.opens = opens;
        let Outcome::Complete { count } = outcome else {
            self.show(sink, e, record, fresh);
            return;
        };
        e.completes = Some(count);
        self.show(sink, e, record, fresh);
        self.emit_reassembled(
            sink,
            e,
            f,
            (ip, sport, dport),
            (index, sequence),
            record,
            preset,
            ip_fragments,
        );
    }

    /// The layers stage: a datagram of the protocol decrypted (with keys) and what its
    /// inner layers read carried to their engines; a MAC that fails makes the datagram
    /// malformed at the MAC.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn carry_layers(
        &mut self,
        e: &mut PacketEvent<'_>,
        f: &Frame<'_>,
        (ip, sport, dport): (IpInfo, u16, u16),
        payload: &[u8],
        v: &Verdict,
        record: bool,
        opened: Option<(&gpcap_decrypt::ahead::Opened, &[u8])>,
    ) {
        let Some(st) = self.stack.as_deref_mut() else {
            return;
        };
        st.begin();
        if v.status != Status::Ok {
            return;
        }
        let o = st.carry(
            f,
            self.file,
            ip,
            (sport, dport),
            payload,
            (v.sequence, v.packet_type),
            e.flow_index,
            opened,
        );
        if let (s, Some(kind)) = layers::status_after(o, e.status) {
            e.status = s;
            e.fault = Some(kind);
            if record && kind == gpcap_dissect::FaultKind::Mac {
                self.validator.dissection.fault = Some(layers::mac_fault(payload.len()));
            }
        }
    }

    /// The sequence stage: `sequence` observed in the space its packet type names — the
    /// flow's own, a per-sender space, or another of the flow's spaces.
    #[inline(always)]
    fn sequence_event(
        &mut self,
        index: u32,
        ptype: u32,
        sequence: u64,
        fragment: bool,
        (ip, port): (std::net::IpAddr, u16),
    ) -> Option<super::seq::SeqEvent> {
        let flow = &mut self.flows[index as usize];
        let program = self.cfg.program.as_deref();
        let space = match program {
            Some(p) if !fragment => p.space_of(ptype),
            _ => 0,
        };
        let bits = self.cfg.sequence_bits();
        match (space, program.and_then(|p| p.spaces.get(space as usize))) {
            (0, _) | (_, None) => Some(flow.seq.observe(sequence, fragment)),
            (s, Some(def)) if def.per_sender => {
                let src = SocketAddr::new(ip, port);
                // Senders are bounded as flows are: past the table, a sender's
                // space is not analyzed (a flood of spoofed sources grew it
                // without end).
                let i = match self.sender_index.get(&(src, s)) {
                    Some(&i) => Some(i),
                    None if self.senders.len() < self.cfg.max_flows => {
                        self.senders.push(((src, s), SeqTracker::new(bits)));
                        self.sender_index.insert((src, s), self.senders.len() - 1);
                        Some(self.senders.len() - 1)
                    }
                    None => None,
                };
                i.map(|i| self.senders[i].1.observe(sequence, fragment))
            }
            (s, Some(_)) => {
                let s = s as usize;
                if flow.spaces.len() <= s {
                    flow.spaces.resize(s + 1, None);
                }
                Some(
                    flow.spaces[s]
                        .get_or_insert_with(|| SeqTracker::new(bits))
                        .observe(sequence, fragment),
                )
            }
        }
    }

    /// The reassembly stage: a fragment into its flow's table (and whether it opened a
    /// packet), then the memory budget kept (the flow's oldest packets first, then other
    /// flows').
    #[inline(always)]
    fn reassemble(
        &mut self,
        index: u32,
        sequence: u64,
        frag: &gpcap_dissect::FragmentInfo,
        payload: &[u8],
        frame: u64,
    ) -> (Outcome, bool) {
        let flow = &mut self.flows[index as usize];
        let data = payload
            .get(frag.data_offset..frag.data_offset + frag.data_len)
            .unwrap_or(&[]);
        let input = FragmentIn {
            // Reassembly buffers are indexed by the low 16 bits, as the articles'.
            sequence: sequence as u16,
            id: frag.id,
            count: frag.count,
            frame,
            data,
            lead: frag.lead,
        };
        let outcome = flow.frags.push(
            input,
            &self.cfg.format,
            &mut self.budget,
            &mut self.reassembled,
            &mut self.fragment_frames,
        );
        let opened = flow.frags.opened;
        while self.budget.used > self.budget.limit {
            if !flow.frags.evict_oldest(&mut self.budget) {
                break;
            }
        }
        if self.budget.used > self.budget.limit {
            self.evict_elsewhere();
        }
        (outcome, opened)
    }

    /// The packet a fragment completed, validated and dissected like any other — by a
    /// worker, when one joined these very bytes and no field tree is wanted — then
    /// carried to inner layers and handed to the sink.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn emit_reassembled<'a, S: Sink + ?Sized>(
        &mut self,
        sink: &mut Watch<'_, S>,
        e: &PacketEvent<'a>,
        f: &Frame<'_>,
        (ip, sport, dport): (IpInfo, u16, u16),
        (index, sequence): (u32, u64),
        record: bool,
        preset: Preset<'_>,
        ip_fragments: u32,
    ) {
        let joined = match preset.joined {
            Some((joined, i)) if !record && ip_fragments <= 1 => joined.verdict(i, &self.reassembled),
            _ => None,
        };
        let v = match joined {
            Some(v) => v,
            None => self.validator.reassembled(&self.reassembled),
        };
        if let Some(st) = self.stack.as_deref_mut() {
            st.begin();
        }
        if let Some(st) = self.stack.as_deref_mut()
            && v.status == Status::Ok
        {
            st.carry(
                f,
                self.file,
                ip,
                (sport, dport),
                &self.reassembled,
                (v.sequence, v.packet_type),
                Some(index),
                None,
            );
            st.decrypted = false;
        }
        let whole = PacketEvent {
            kind: Kind::Reassembled,
            ip: Some(ip),
            flow_index: Some(index),
            payload: &self.reassembled,
            size: self.reassembled.len() as u32,
            status: v.status,
            crc: v.crc,
            sequence: v.sequence.or(Some(sequence)),
            packet_type: v.packet_type,
            ack: v.ack,
            ack_bits: v.ack_bits,
            fragment: None,
            fault: v.fault,
            seq_event: None,
            completes: None,
            opens: false,
            fragment_frames: &self.fragment_frames,
            dissection: record.then_some(&self.validator.dissection),
            carried: self.stack.as_deref().map_or(&[], |s| s.carried()),
            // What the frame's event says of its own datagram, not of the packet.
            ip_fragments: 0,
            truncated: false,
            over_budget: false,
            ..*e
        };
        sink.pass(&whole);
    }

    /// The message streams a definition declares (none without one).
    pub(super) fn stream_defs(&self) -> &[gpcap_dissect::program::StreamDef] {
        self.cfg.program.as_ref().map_or(&[], |p| &p.params.streams)
    }

    /// Counts the sequences of the datagram's messages in their streams.
    pub(super) fn observe_streams(&mut self, index: u32) {
        let Some(p) = self.cfg.program.as_ref().filter(|p| !p.params.streams.is_empty()) else {
            return;
        };
        let Some(fl) = self.flows.get_mut(index as usize) else {
            return;
        };
        fl.streams.get_or_insert_default().observe(
            &p.params.streams,
            &self.validator.dissection.messages,
            (&mut self.streams_open, self.cfg.max_streams),
            &mut self.streams_not_tracked,
            &mut self.stream_events,
        );
    }

    /// Settles a checksum that waits for a remembered value, then remembers what a valid
    /// datagram's fields say.
    pub(super) fn converse(&mut self, v: &mut Verdict, key: conversation::ConversationKey, payload: &[u8]) {
        if v.crc_pending {
            let wanted = self
                .cfg
                .program
                .as_ref()
                .and_then(|p| p.params.rule.as_ref()?.stand_in);
            match wanted.and_then(|i| self.conversations.get(&key, i)) {
                Some(learnt) => {
                    // Copied to the stack: the table and the validator are both borrowed.
                    let mut bytes = [0u8; 8];
                    bytes[..learnt.len()].copy_from_slice(learnt);
                    let n = learnt.len();
                    self.validator.settle(v, payload, Some(&bytes[..n]));
                }
                None => self.validator.unlearnt(v),
            }
        }
        if !matches!(v.status, Status::Ok | Status::Malformed) {
            return;
        }
        for &(i, at, len) in &self.validator.dissection.learnt {
            let (a, b) = ((at / 8) as usize, ((at + len) / 8) as usize);
            if let Some(bytes) = payload.get(a..b) {
                self.conversations.learn(key, i, bytes);
            }
        }
    }
}
