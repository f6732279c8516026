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
            if matches!(e.layer, Layer::IpPiece { .. }) {
                self.mtu.ip_piece(&ip);
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
        self.mtu.icmp(frame, icmp);
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
        if self.reassembly.reassembled(e.status)
            && let (Some(kind), Some(key)) = (e.fault, e.flow)
        {
            self.validation.count_fault(kind, e.frame, key);
        }
    }
}
