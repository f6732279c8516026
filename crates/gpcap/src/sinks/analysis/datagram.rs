//! What a UDP datagram adds to the report, in stages as the report's sections read it:
//! the capture's counts and the datagram's flow, sizes and times, the MTU, the verdict,
//! the sequence, what acks will answer, and the packet's type, messages and faults.
//! The flow's state is found once; each stage borrows it beside only what it counts
//! into (finding it again per stage cost 1% of `analyze`).

use super::count::count_side;
use super::*;
use gpcap_wire::decode::IpInfo;

impl Statistics {
    /// A UDP datagram through the stages, each stopping when the datagram has nothing
    /// more for the next.
    pub(super) fn datagram(&mut self, e: &PacketEvent) {
        let (Some(ip), Some(key)) = (e.ip, e.flow) else {
            return;
        };
        if !self.udp(e, key) {
            return;
        }
        let Statistics {
            cfg,
            flows,
            untracked,
            report,
            state,
            mtu,
            validation,
            ..
        } = self;
        let flow = match e.flow_index {
            Some(i) => flows.get_mut(i as usize),
            None => untracked.as_mut(),
        };
        let Some(flow) = flow else {
            return;
        };
        sizes(flow, &mut report.capture, e, &ip);
        mtu.datagram(&mut flow.stats, e, &ip, &key);
        if !validation.verdict(flow, cfg, e) {
            return;
        }
        let Some(ptype) = e.packet_type else {
            return;
        };
        if let Some(event) = e.seq_event {
            let losses = Losses {
                mtu,
                bursts: &mut self.bursts,
                state,
                quarter_space: self.quarter_space,
            };
            sequence(flow, report, losses, cfg, e, event, &key);
        }
        self.acks.sent(flow, cfg, state, e, ptype);
        let kinds = self.kinds_with_messages.as_deref();
        let side = self.sides.get(ptype as usize).copied().flatten();
        if packet_kind(flow, (report, mtu, validation), cfg, kinds, side, e, ptype, &key) {
            self.ack(e);
        }
    }

    /// The capture's UDP counts, and the flow of a game datagram (made on its first).
    /// False: not a game datagram.
    #[inline(always)]
    fn udp(&mut self, e: &PacketEvent, key: FlowId) -> bool {
        let c = &mut self.report.capture;
        c.udp_datagrams += 1;
        if e.ip_fragments > 1 {
            c.ip_reassembled += 1;
        }
        if e.kind == Kind::OtherUdp {
            c.other_udp += 1;
            return false;
        }
        let num_types = self.cfg.format.num_types;
        let Some(index) = e.flow_index else {
            c.flows_not_tracked += 1;
            let none = SocketAddr::from(([0, 0, 0, 0], 0));
            let all = FlowId { src: none, dst: none };
            self.untracked
                .get_or_insert_with(|| FlowState::new(all, num_types, e.frame));
            return true;
        };
        let index = index as usize;
        if index >= self.flows.len() {
            self.flows.push(FlowState::new(key, num_types, e.frame));
            self.acks.flow(key, index as u32);
        }
        true
    }
}

/// The flow's datagrams, bytes, sizes and times.
#[inline(always)]
fn sizes(flow: &mut FlowState, c: &mut CaptureSummary, e: &PacketEvent, ip: &IpInfo) {
    let payload_len = e.payload.len() as u32;
    let s = &mut flow.stats;
    s.datagrams += 1;
    s.file_mask |= 1 << e.file.min(63);
    s.bytes += payload_len as u64;
    // By the earliest and latest: a clock that stepped back gives no negative span.
    if s.last_ns.is_some_and(|l| e.ts_ns < l) {
        c.time_went_back += 1;
    }
    s.first_ns = Some(s.first_ns.map_or(e.ts_ns, |t| t.min(e.ts_ns)));
    s.last_ns = Some(s.last_ns.map_or(e.ts_ns, |t| t.max(e.ts_ns)));
    s.largest_payload = s.largest_payload.max(payload_len);
    s.largest_ip = s.largest_ip.max(ip.total_len);
    s.size_hist.add(payload_len);
}

/// What the sequence stage counts loss into besides the flow and the report.
struct Losses<'a> {
    /// The MTU section: a gap may be a datagram an ICMP said was dropped.
    mtu: &'a mut super::mtu::MtuTap,
    bursts: &'a mut BurstSizes,
    state: &'a mut StateBudget,
    /// A gap this large is a jump: a sign of a wrong field.
    quarter_space: u128,
}

/// The sequence `event`: jumps, the gaps the MTU section blames, the timeline, the sizes
/// that came before a burst of loss.
#[inline(always)]
fn sequence(
    flow: &mut FlowState,
    report: &mut Report,
    l: Losses<'_>,
    cfg: &Config,
    e: &PacketEvent,
    event: SeqEvent,
    key: &FlowId,
) {
    if let SeqEvent::New { gap } = event {
        if gap as u128 + 1 >= l.quarter_space {
            flow.stats.seq_jumps += 1;
        }
        l.mtu.new_sequence(key, gap);
    }
    if let Some(t) = report.timeline.slot(e.ts_ns) {
        t.datagrams += 1;
        if let SeqEvent::New { gap } = event {
            t.lost = t.lost.saturating_add(gap as u64);
        }
    }
    flow.sizes_before_bursts(
        e.ts_ns,
        event,
        e.payload.len() as u32,
        l.bursts,
        cfg.format.mtu_budget,
        l.state,
    );
}

/// The packet's type and `side`, its messages (`kinds`: the types that carry them), its
/// faults, and whether it was a packet or a fragment. True: a packet, whose acks are
/// read next.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn packet_kind(
    flow: &mut FlowState,
    (report, mtu, validation): (
        &mut Report,
        &mut super::mtu::MtuTap,
        &mut super::validation::ValidationTap,
    ),
    cfg: &Config,
    kinds: Option<&[bool]>,
    side: Option<Side>,
    e: &PacketEvent,
    ptype: u32,
    key: &FlowId,
) -> bool {
    let s = &mut flow.stats;
    FlowStats::count_type(&mut s.types, ptype, s.num_types);
    if let Some(m) = &mut report.messages
        && kinds.is_none_or(|k| k.get(ptype as usize) == Some(&true))
    {
        m.add(e.messages);
    }
    if let Some(kind @ (FaultKind::Mac | FaultKind::Replayed)) = e.fault {
        // A key that does not open a body, or a replay, says nothing of the description's
        // fit: counted by cause here, per flow in `decryption`.
        validation.fault(e, kind, *key, false);
    } else if let Some(kind) = e.fault {
        s.malformed += 1;
        if kind == FaultKind::TrailingBytes {
            s.trailing += 1;
        }
        validation.fault(e, kind, *key, true);
    }
    let Some(frag) = e.fragment else {
        validation.packet();
        count_side(s, side);
        return true;
    };
    validation.fragment();
    s.fragments += 1;
    if frag.data_len.saturating_sub(frag.lead) as u32 > cfg.format.fragment_size {
        mtu.oversize_fragment();
    }
    false
}
