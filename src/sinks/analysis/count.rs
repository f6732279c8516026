//! What one frame, ICMP message, datagram or reassembled packet adds to the report.

use super::*;

/// One more packet of a type declared from `side`.
pub(super) fn count_side(s: &mut FlowStats, side: Option<Side>) {
    match side {
        Some(Side::Client) => s.from_client += 1,
        Some(Side::Server) => s.from_server += 1,
        None => {}
    }
}

/// Counts one more `key`, allocating its name only the first time.
pub(super) fn count(m: &mut std::collections::BTreeMap<String, u64>, key: &str) {
    match m.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            m.insert(key.to_string(), 1);
        }
    }
}

/// Keeps the earliest datagram the description failed on.
pub(super) fn first_failure(first: &mut Option<fit::FirstFailure>, e: &PacketEvent, cause: &str) {
    if first.is_none() {
        *first = Some(fit::FirstFailure {
            file: e.file,
            frame: e.frame,
            cause: cause.to_string(),
            field: None,
            bit: None,
        });
    }
}

pub(super) fn count_fault(m: &mut Malformed, kind: FaultKind, frame: u64, flow: FlowId) {
    m.total += 1;
    *m.by_cause.entry(kind.code().into()).or_default() += 1;
    if m.examples.len() < 20 {
        m.examples.push(MalformedExample {
            frame,
            flow,
            cause: kind.code().into(),
        });
    }
}

impl Statistics {
    pub(super) fn frame(&mut self, e: &PacketEvent) {
        // The timeline counts seconds of capture time, from the first frame.
        self.report.timeline.start_ns.get_or_insert(e.ts_ns);
        let c = &mut self.report.capture;
        c.frames += 1;
        c.bytes += e.frame_data.len() as u64;
        c.wire_bytes += e.wire_len as u64;
        c.first_ns = Some(c.first_ns.map_or(e.ts_ns, |t| t.min(e.ts_ns)));
        c.last_ns = Some(c.last_ns.map_or(e.ts_ns, |t| t.max(e.ts_ns)));
        if let Some(file) = c.files.last_mut() {
            file.frames += 1;
            file.first_ns = Some(file.first_ns.map_or(e.ts_ns, |t| t.min(e.ts_ns)));
            file.last_ns = Some(file.last_ns.map_or(e.ts_ns, |t| t.max(e.ts_ns)));
        }
        let snap_cut = e.snaplen_cut();
        if snap_cut {
            c.snaplen_truncated += 1;
        }
        match self.link_types.last_mut() {
            Some((t, n)) if *t == e.linktype => *n += 1,
            _ => self.count_link_type(e.linktype, 1),
        }
        let c = &mut self.report.capture;
        if matches!(
            e.layer,
            Layer::IpPiece { .. } | Layer::RebuiltBadUdp | Layer::RebuiltNotUdp
        ) {
            c.ip_fragments += 1;
        }
        if let Some(ip) = e.ip {
            if let Some(v) = ip.vlan {
                *c.vlans.entry(v).or_default() += 1;
            }
            // A fragment before a datagram's last is as large as the sender's MTU let it.
            if matches!(e.layer, Layer::IpPiece { .. }) && ip.more_fragments {
                let m = &mut self.report.mtu;
                m.fragment_mtu = m.fragment_mtu.max(Some(ip.total_len));
            }
        }
        let c = &mut self.report.capture;
        match e.layer {
            Layer::Udp => {}
            Layer::IpPiece { .. } => {}
            Layer::RebuiltBadUdp => count(&mut c.decode_errors, "udp"),
            Layer::RebuiltNotUdp => count(&mut c.not_udp, "ip-fragmented non-udp"),
            Layer::Icmp(icmp) => self.icmp(e.frame, icmp),
            Layer::Other(what) => count(&mut c.not_udp, what),
            Layer::Malformed { layer, .. } => {
                if snap_cut {
                    count(&mut c.truncated_by_layer, layer);
                } else {
                    count(&mut c.decode_errors, layer);
                }
            }
            Layer::UnsupportedLink(t) => {
                *c.decode_errors
                    .entry(format!("unsupported linktype {t}"))
                    .or_default() += 1
            }
        }
    }

    pub(super) fn icmp(&mut self, frame: u64, icmp: IcmpTooBig) {
        self.report.capture.icmp_too_big += 1;
        if let Some(q) = icmp.quoted {
            // Later datagrams are counted as they arrive; the first ICMP of a flow stands
            // for the datagram before it.
            let first = !self.path_mtu.contains_key(&(q.src, q.dst));
            let mtu = self.path_mtu.entry((q.src, q.dst)).or_insert(icmp.mtu);
            *mtu = (*mtu).min(icmp.mtu);
            if first && q.ip_len > icmp.mtu {
                self.report.mtu.df_over_path_mtu += 1;
            }
            if q.ip_len > icmp.mtu {
                self.dropped_over_mtu.insert((q.src, q.dst));
            }
        }
        let m = &mut self.report.mtu;
        m.icmp_total += 1;
        if m.icmp.len() < MAX_LISTED {
            m.icmp.push(IcmpFinding {
                frame,
                from: icmp.from,
                v6: icmp.v6,
                mtu: icmp.mtu,
                flow: icmp.quoted.map(|q| FlowId {
                    src: q.src,
                    dst: q.dst,
                }),
                quoted_ip_len: icmp.quoted.map(|q| q.ip_len),
            });
        }
    }

    pub(super) fn datagram(&mut self, e: &PacketEvent) {
        let (Some(ip), Some(key)) = (e.ip, e.flow) else {
            return;
        };
        let c = &mut self.report.capture;
        c.udp_datagrams += 1;
        if e.ip_fragments > 1 {
            c.ip_reassembled += 1;
        }
        if e.kind == Kind::OtherUdp {
            c.other_udp += 1;
            return;
        }
        let num_types = self.cfg.format.num_types;
        let flow = match e.flow_index {
            Some(index) => {
                let index = index as usize;
                if index >= self.flows.len() {
                    self.flows.push(FlowState::new(key, num_types, e.frame));
                    self.by_key.insert(key, index as u32);
                }
                let Some(flow) = self.flows.get_mut(index) else {
                    return;
                };
                flow
            }
            None => {
                c.flows_not_tracked += 1;
                let none = SocketAddr::from(([0, 0, 0, 0], 0));
                let all = FlowId { src: none, dst: none };
                self.untracked
                    .get_or_insert_with(|| FlowState::new(all, num_types, e.frame))
            }
        };
        let payload_len = e.payload.len() as u32;
        let s = &mut flow.stats;
        let v = &mut self.report.validation;
        v.examined += 1;
        s.datagrams += 1;
        s.file_mask |= 1 << e.file.min(63);
        s.bytes += payload_len as u64;
        // By the earliest and latest: a clock that stepped back gives no negative span.
        if s.last_ns.is_some_and(|l| e.ts_ns < l) {
            self.report.capture.time_went_back += 1;
        }
        s.first_ns = Some(s.first_ns.map_or(e.ts_ns, |t| t.min(e.ts_ns)));
        s.last_ns = Some(s.last_ns.map_or(e.ts_ns, |t| t.max(e.ts_ns)));
        s.largest_payload = s.largest_payload.max(payload_len);
        s.largest_ip = s.largest_ip.max(ip.total_len);
        s.size_hist.add(payload_len);
        let m = &mut self.report.mtu;
        if e.over_budget {
            s.over_budget += 1;
            m.over_budget += 1;
        }
        let whole = e.ip_fragments <= 1;
        if ip.total_len > self.cfg.link_mtu {
            m.over_link_mtu += 1;
            if ip.dont_fragment && whole {
                m.df_over_link_mtu += 1;
            }
        }
        // A datagram sent whole with don't-fragment over the MTU a router announced
        // (the first one is counted from the ICMP that quotes it).
        if ip.dont_fragment
            && whole
            && !self.path_mtu.is_empty()
            && let Some(&pmtu) = self.path_mtu.get(&(key.src, key.dst))
            && ip.total_len > pmtu
        {
            m.df_over_path_mtu += 1;
        }
        if !whole {
            s.ip_fragmented += 1;
            m.ip_fragmented += 1;
            if ip.total_len <= self.cfg.link_mtu {
                m.ip_fragmented_within_link_mtu += 1;
            }
            if m.ip_fragmented_list.len() < MAX_LISTED {
                m.ip_fragmented_list.push(IpFragFinding {
                    frame: e.frame,
                    flow: key,
                    ip_len: ip.total_len,
                    fragments: e.ip_fragments,
                });
            }
        }
        match e.status {
            Status::Truncated => {
                s.truncated += 1;
                v.truncated += 1;
                return;
            }
            Status::CrcMismatch => {
                s.crc_fail += 1;
                v.crc_mismatch += 1;
                if self.cfg.checksum.is_crc32() && flow.crc_ids.len() < CRC_SAMPLES {
                    flow.crc_ids.extend(crate::identify::solve32(e.payload));
                }
                return;
            }
            Status::TooShort => {
                s.too_short += 1;
                v.too_short += 1;
                return;
            }
            Status::Unverified => {
                v.crc_unverified += 1;
                return;
            }
            _ => {}
        }
        // A checksum declared by field is checked after the header is read: a header
        // that cannot be read leaves it unchecked, not ok.
        if e.crc.is_some() || self.cfg.checksum != gpcap_dissect::program::Checksum::Field {
            v.crc_ok += 1;
            s.crc_ok += 1;
        }
        if e.status == Status::BadHeader {
            let code = e.fault.map_or("header", |f| f.code());
            *v.header_errors.entry(code.into()).or_default() += 1;
            s.malformed += 1;
            s.header_errors += 1;
            first_failure(&mut self.report.first_failure, e, code);
            return;
        }
        let Some(ptype) = e.packet_type else {
            return;
        };
        if let Some(event) = e.seq_event {
            if let SeqEvent::New { gap } = event
                && gap as u128 + 1 >= self.quarter_space
            {
                flow.stats.seq_jumps += 1;
            }
            if let SeqEvent::New { gap } = event {
                let dropped =
                    !self.dropped_over_mtu.is_empty() && self.dropped_over_mtu.remove(&(key.src, key.dst));
                if gap > 0 {
                    self.report.mtu.gaps += 1;
                    self.report.mtu.gaps_after_path_mtu += dropped as u64;
                }
            }
            if let Some(t) = self.report.timeline.slot(e.ts_ns) {
                t.datagrams += 1;
                if let SeqEvent::New { gap } = event {
                    t.lost = t.lost.saturating_add(gap as u64);
                }
            }
            flow.sizes_before_bursts(
                e.ts_ns,
                event,
                payload_len,
                &mut self.bursts,
                self.cfg.format.mtu_budget,
                &mut self.state,
            );
        }
        // Acks answer the flow's own counter: packets of another sequence space, and a
        // sequence past the plausible window (a jump), are not what they count.
        if self.ack_analysis
            && e.flow_index.is_some()
            && !flow.acks_not_tracked
            && let Some(seq) = e.sequence
            && e.seq_event != Some(SeqEvent::Jump)
            && (e.fragment.is_some() || self.cfg.program.as_ref().is_none_or(|p| p.space_of(ptype) == 0))
        {
            let bits = self.cfg.sequence_bits();
            let keep = self.keep_ack_log;
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
            flow.charge_acks(before, &mut self.state);
        }
        let s = &mut flow.stats;
        FlowStats::count_type(&mut s.types, ptype, s.num_types);
        if let Some(m) = &mut self.report.messages
            && self
                .kinds_with_messages
                .as_ref()
                .is_none_or(|k| k.get(ptype as usize) == Some(&true))
        {
            m.add(e.messages);
        }
        if let Some(kind @ (FaultKind::Mac | FaultKind::Replayed)) = e.fault {
            // A key that does not open a body, or a replay, says nothing of the
            // description's fit: counted by cause here, per flow in `decryption`.
            count_fault(&mut self.report.malformed, kind, e.frame, key);
        } else if let Some(kind) = e.fault {
            s.malformed += 1;
            if kind == FaultKind::TrailingBytes {
                s.trailing += 1;
            }
            count_fault(&mut self.report.malformed, kind, e.frame, key);
            first_failure(&mut self.report.first_failure, e, kind.code());
        }
        let Some(frag) = e.fragment else {
            v.packets += 1;
            count_side(s, self.sides.get(ptype as usize).copied().flatten());
            self.ack(e);
            return;
        };
        v.fragments += 1;
        s.fragments += 1;
        if frag.data_len.saturating_sub(frag.lead) as u32 > self.cfg.format.fragment_size {
            self.report.mtu.fragments_over_size += 1;
        }
    }

    pub(super) fn reassembled(&mut self, e: &PacketEvent) {
        if e.status == Status::Ok {
            self.ack(e);
        }
        if let (Some(t), Some(fl)) = (
            e.packet_type,
            e.flow_index.and_then(|i| self.flows.get_mut(i as usize)),
        ) {
            FlowStats::count_type(&mut fl.stats.reassembled_types, t, fl.stats.num_types);
            count_side(&mut fl.stats, self.sides.get(t as usize).copied().flatten());
        }
        let r = &mut self.report.reassembly;
        r.completed += 1;
        match e.status {
            Status::CrcMismatch | Status::TooShort => r.crc_fail += 1,
            Status::Ok => r.dissected_ok += 1,
            _ => {
                r.malformed += 1;
                if let (Some(kind), Some(key)) = (e.fault, e.flow) {
                    count_fault(&mut self.report.malformed, kind, e.frame, key);
                }
            }
        }
    }
}
