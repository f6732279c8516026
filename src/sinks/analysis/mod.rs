//! The statistics sink: counts what the engine's events say and builds the [`Report`]
//! (capture summary, validation, flows, malformed packets, reassembly and amplification,
//! MTU). It never prints. [`Analyzer`] is the engine with this sink, the usual way in.

pub(crate) mod acks;
pub mod fit;
pub mod gates;
pub(crate) mod msgacks;
pub(crate) mod report;

use crate::capture::{CaptureError, Frame};
use crate::decode::IcmpTooBig;
use crate::dissect::FaultKind;
use crate::dissect::program::Side;
pub use crate::engine::Config;
use crate::engine::seq::SeqEvent;
use crate::engine::{Engine, FileEnd, Flow, FlowEnd, Kind, Layer, Needs, PacketEvent, Sink, Status, Summary};
use hashbrown::HashMap;
pub use report::*;
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Findings kept as lists (counts are exact beyond).
const MAX_LISTED: usize = 1000;

/// Datagrams remembered per flow for the burst window (a flow sending faster than this
/// per second is sampled by its latest datagrams).
const RECENT: usize = 512;
/// Of those, what every flow may hold outside the flow state budget.
const RECENT_UNBUDGETED: usize = 32;
const BURST_WINDOW_NS: i64 = 1_000_000_000;

#[derive(Clone)]
struct FlowState {
    stats: FlowStats,
    /// Recent (time, payload size) for "sizes in the second before a loss burst".
    recent: VecDeque<(i64, u32)>,
    /// Datagrams up to this time were already counted as before a burst.
    counted_until: i64,
    /// The frame that opened the flow: shards merge flows back in this order.
    first_frame: u64,
    /// This direction's sequences, settled by the other direction's acks.
    acks: Option<Box<acks::AckTracker>>,
    /// This direction's message streams, settled by the other direction's message acks.
    message_acks: Option<Box<msgacks::FlowMessageAcks>>,
    /// Its ack analysis went past the flow state budget and was given up.
    acks_not_tracked: bool,
    /// Its burst window could not grow within the flow state budget: it samples fewer
    /// of the second's datagrams.
    burst_window_capped: bool,
    /// The protocol ids its first CRC mismatches validate with (at most [`CRC_SAMPLES`]).
    crc_ids: Vec<u32>,
}

/// CRC mismatches of a flow whose protocol id is solved: enough to see one id repeat,
/// few enough to cost nothing on a capture of mismatches.
const CRC_SAMPLES: usize = 16;

/// The id most of a flow's solved mismatches share, when at least two and at least half
/// do: one datagram solves to some id whatever it is, damage to a different one each time.
fn other_id(ids: &[u32]) -> Option<report::OtherId> {
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
    fn new(key: FlowId, num_types: u32, first_frame: u64) -> Self {
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
    fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.recent.capacity() * std::mem::size_of::<(i64, u32)>()
            + self.stats.heap_bytes()
            + self.ack_bytes()
            + self.message_ack_bytes()
    }

    /// Bytes of its message ack analysis, all charged to the flow state budget.
    fn message_ack_bytes(&self) -> usize {
        self.message_acks.as_ref().map_or(0, |a| {
            std::mem::size_of::<msgacks::FlowMessageAcks>() + a.heap_bytes()
        })
    }

    /// [`FlowState::charge_acks`] for the message ack analysis.
    fn charge_message_acks(&mut self, before: usize, budget: &mut StateBudget) {
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
    fn ack_bytes(&self) -> usize {
        self.acks.as_ref().map_or(0, |a| a.heap_bytes())
    }

    /// Charges the ack analysis' growth since it held `before` bytes (beyond what every
    /// flow may hold, [`acks::UNBUDGETED`]); past the budget it is given up: the flow's
    /// ack figures are then "not tracked", never partial.
    fn charge_acks(&mut self, before: usize, budget: &mut StateBudget) {
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
    fn make_room(&mut self, budget: &mut StateBudget) {
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
    fn sizes_before_bursts(
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
struct StateBudget {
    limit: usize,
    used: usize,
    acks_not_tracked: u64,
    burst_window_capped: u64,
}

/// Counts events into a report.
#[derive(Clone)]
pub struct Statistics {
    cfg: Config,
    /// Tracked flows, by the engine's flow index.
    flows: Vec<FlowState>,
    /// Every flow past the engine's flow table, counted together.
    untracked: Option<FlowState>,
    /// The smallest MTU ICMP announced for each flow.
    path_mtu: HashMap<(SocketAddr, SocketAddr), u32>,
    /// Flows an ICMP said a datagram was dropped from (over the path MTU), until their
    /// next datagram: a gap it shows is the dropped datagram's.
    dropped_over_mtu: hashbrown::HashSet<(SocketAddr, SocketAddr)>,
    bursts: BurstSizes,
    /// Frames by link type (named when the report is built).
    link_types: Vec<(i32, u64)>,
    /// The side each packet type is declared `from`, by type id.
    sides: Vec<Option<Side>>,
    /// Tracked flows by their key, to find the direction an ack answers.
    by_key: HashMap<FlowId, u32>,
    /// With datagram kinds, which kinds carry messages (by type): the others are not
    /// counted as datagrams of no messages.
    kinds_with_messages: Option<Vec<bool>>,
    /// The definition marks ack and ack-bits fields.
    ack_analysis: bool,
    /// The definition's messages ack stream sequences (`role=ack stream=…`).
    message_acks: bool,
    /// Keep what each captured sequence settled as (see [`Statistics::ack_facts`]).
    keep_ack_log: bool,
    /// Bits of the ack field ([`acks::ack_width`]).
    ack_width: u32,
    /// A quarter of the sequence space: a jump this far is a sign of a wrong field.
    quarter_space: u128,
    state: StateBudget,
    /// Inner layers' statistics (a stack of definitions), reported in `layers`.
    layers: Vec<(String, Statistics)>,
    report: Report,
}

impl Statistics {
    pub fn new(cfg: Config) -> Self {
        let mut report = Report::default();
        report.protocol.protocol_id = cfg.protocol_id;
        report.protocol.source = cfg.protocol_source.clone();
        report.protocol.ports = cfg.ports.clone();
        report.protocol.any_port = cfg.any_port;
        report.protocol.checksum = cfg.checksum;
        report.protocol.name = cfg.program.as_ref().map(|p| p.params.name.clone());
        report.protocol.checksum_rule = cfg.program.as_ref().and_then(|p| p.params.describe_rule());
        report.mtu.budget = cfg.format.mtu_budget;
        report.mtu.link_mtu = cfg.link_mtu;
        if cfg.program.as_ref().is_some_and(|p| p.messages.is_some()) {
            report.messages = Some(Default::default());
        }
        let mut sides = Vec::new();
        for d in cfg.program.iter().flat_map(|p| &p.packets) {
            let t = d.type_id as usize;
            if sides.len() <= t {
                sides.resize(t + 1, None);
            }
            sides[t] = d.from;
        }
        let ack_analysis = cfg.program.as_ref().is_some_and(|p| {
            use crate::dissect::program::Role;
            p.has_role(Role::Ack) || p.params.datagram_acks
        });
        Statistics {
            quarter_space: 1u128 << cfg.sequence_bits().clamp(2, 64).saturating_sub(2),
            sides,
            by_key: HashMap::new(),
            kinds_with_messages: cfg
                .program
                .as_deref()
                .filter(|p| p.kinds)
                .map(|p| (0..p.format_types()).map(|t| p.carries_messages(t)).collect()),
            ack_analysis,
            message_acks: cfg
                .program
                .as_ref()
                .is_some_and(|p| p.params.streams.iter().any(|s| s.acked)),
            keep_ack_log: false,
            ack_width: cfg.program.as_deref().map_or(16, acks::ack_width),
            flows: Vec::new(),
            untracked: None,
            path_mtu: HashMap::new(),
            dropped_over_mtu: hashbrown::HashSet::new(),
            bursts: BurstSizes::default(),
            link_types: Vec::new(),
            state: StateBudget {
                limit: cfg.flow_state_budget,
                ..StateBudget::default()
            },
            cfg,
            layers: Vec::new(),
            report,
        }
    }

    /// Starts the per-second timeline at `ts_ns`, so that shards of one capture share it.
    pub fn set_timeline_start(&mut self, ts_ns: i64) {
        self.report.timeline.start_ns.get_or_insert(ts_ns);
    }

    /// Records how reading file `i` ended (for shards, whose reader is elsewhere).
    pub fn file_result(&mut self, i: usize, end: &FileEnd) {
        if let Some(f) = self.report.capture.files.get_mut(i) {
            f.error = end.error.clone();
            f.truncated_tail = end.truncated_tail.clone();
        }
    }

    /// Folds in a shard: statistics of the same capture over a disjoint set of IP address
    /// pairs, both finished. Counters add up, lists merge by frame, flows keep their order
    /// of appearance.
    pub fn merge(&mut self, o: Statistics) {
        self.flows.extend(o.flows);
        self.flows.sort_by_key(|f| f.first_frame);
        // Shards that both left flows untracked are never merged into the report shown:
        // the run is done again on one core (`run::sharded`).
        self.untracked = self.untracked.take().or(o.untracked);
        self.path_mtu.extend(o.path_mtu);
        self.dropped_over_mtu.extend(o.dropped_over_mtu);
        self.bursts.bursts += o.bursts.bursts;
        self.bursts.before.merge(&o.bursts.before);
        self.bursts.all.merge(&o.bursts.all);
        for (t, n) in o.link_types {
            self.count_link_type(t, n);
        }
        // Every shard's engine stacks the same layers, in the same order.
        for (mine, theirs) in self.layers.iter_mut().zip(o.layers) {
            mine.1.merge(theirs.1);
        }
        self.report.merge(o.report);
    }

    fn count_link_type(&mut self, t: i32, n: u64) {
        match self.link_types.iter_mut().find(|(x, _)| *x == t) {
            Some((_, c)) => *c += n,
            None => self.link_types.push((t, n)),
        }
    }

    /// Keeps what each captured sequence settled as, for [`Statistics::ack_facts`].
    pub fn keep_ack_log(&mut self) {
        self.keep_ack_log = true;
    }

    /// What the ack analysis settled for each captured sequence, by direction (after the
    /// run; with [`Statistics::keep_ack_log`]).
    pub fn ack_facts(self) -> acks::AckFacts {
        let mut facts = acks::AckFacts::default();
        for fl in self.flows {
            let key = FlowId {
                src: fl.stats.src,
                dst: fl.stats.dst,
            };
            if let Some(t) = fl.acks {
                facts.add(key, t.finish_logged().1);
            }
            for ((stream, k), log) in fl.message_acks.map(|m| m.finish_logged()).unwrap_or_default() {
                facts.add_stream(key, (stream, k), log);
            }
        }
        facts
    }

    /// The statistics of the layers inside this one (a layer's own inner layers: the
    /// game's inside reliable.io), outermost first.
    pub fn layers(&self) -> &[(String, Statistics)] {
        &self.layers
    }

    /// Builds the report.
    pub fn report(mut self) -> Report {
        for (t, n) in std::mem::take(&mut self.link_types) {
            *self
                .report
                .capture
                .link_types
                .entry(crate::decode::linktype::name(t))
                .or_default() += n;
        }
        for fl in self.flows {
            let mut stats = fl.stats;
            stats.pad_types();
            let defs = self
                .cfg
                .program
                .as_deref()
                .map_or(&[][..], |p| &p.params.streams[..]);
            (stats.acks, stats.stream_acks) = match fl.message_acks {
                _ if fl.acks_not_tracked => (None, Vec::new()),
                Some(m) => m.finish(defs),
                None => (fl.acks.and_then(|a| a.finish()), Vec::new()),
            };
            stats.acks_not_tracked = fl.acks_not_tracked;
            stats.burst_window_capped = fl.burst_window_capped;
            stats.crc_other_id = other_id(&fl.crc_ids);
            self.report.flows.push(stats);
        }
        let c = &mut self.report.capture;
        c.acks_not_tracked += self.state.acks_not_tracked;
        c.burst_window_capped += self.state.burst_window_capped;
        self.report.untracked = self.untracked.map(|f| {
            let mut stats = f.stats;
            stats.pad_types();
            stats
        });
        self.report.mtu.bursts = self.bursts.report();
        self.report.finalize(&self.cfg);
        for (name, stats) in self.layers {
            let mut r = stats.report();
            let nested = std::mem::take(&mut r.layers);
            self.report.layers.push(report::LayerReport { name, report: r });
            self.report.layers.extend(nested);
        }
        self.report
    }

    /// Bytes held for flows (see [`Analyzer::state_bytes`]).
    pub fn state_bytes(&self) -> usize {
        self.flows
            .iter()
            .chain(&self.untracked)
            .map(FlowState::heap_bytes)
            .sum::<usize>()
            + (self.flows.capacity() - self.flows.len()) * std::mem::size_of::<FlowState>()
            + self.by_key.capacity() * (std::mem::size_of::<(FlowId, u32)>() + 1)
    }

    fn frame(&mut self, e: &PacketEvent) {
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

    fn icmp(&mut self, frame: u64, icmp: IcmpTooBig) {
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

    fn datagram(&mut self, e: &PacketEvent) {
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
        if e.crc.is_some() || self.cfg.checksum != crate::dissect::program::Checksum::Field {
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

    /// The acks a whole packet carries settle the other direction's sequences. A
    /// fragment's copy of the header is not read until its packet is complete (as
    /// reliable.io's receiver does), so the reassembled packet brings them.
    #[inline(always)]
    fn ack(&mut self, e: &PacketEvent) {
        // Most protocols carry no acks: decided before the flow's key is copied out.
        if !self.ack_analysis || (e.ack.is_none() && e.acks().is_empty()) {
            return;
        }
        self.settle_acks(e);
    }

    /// [`Statistics::ack`] for a packet that carries acks.
    #[inline(never)]
    fn settle_acks(&mut self, e: &PacketEvent) {
        let Some(key) = e.flow else {
            return;
        };
        let back = FlowId {
            src: key.dst,
            dst: key.src,
        };
        let second = self
            .report
            .timeline
            .start_ns
            .and_then(|start| u32::try_from(e.ts_ns.saturating_sub(start) / 1_000_000_000).ok());
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
    fn message_acks(&mut self, e: &PacketEvent) {
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
        let back = FlowId {
            src: key.dst,
            dst: key.src,
        };
        let second = self
            .report
            .timeline
            .start_ns
            .and_then(|start| u32::try_from(e.ts_ns.saturating_sub(start) / 1_000_000_000).ok());
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

    fn reassembled(&mut self, e: &PacketEvent) {
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

/// An inner layer's statistics: counted as the outermost layer's are.
fn layer_statistics(cfg: &Config) -> Box<dyn crate::engine::layers::LayerSink> {
    Box::new(Statistics::new(cfg.clone()))
}

impl Sink for Statistics {
    /// Bodies validated, not recorded; inner layers counted by statistics of their own.
    fn needs(&self) -> Needs {
        Needs {
            fields: false,
            layers: Some(layer_statistics),
        }
    }

    fn begin_file(&mut self, _file: u32, name: &str) {
        self.report.capture.files.push(FileSummary {
            name: name.to_string(),
            ..FileSummary::default()
        });
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Flow {
        match e.kind {
            Kind::Reassembled => self.reassembled(e),
            Kind::Game | Kind::OtherUdp => {
                self.frame(e);
                self.datagram(e);
                if self.message_acks
                    && !e.messages.is_empty()
                    && matches!(e.status, Status::Ok | Status::Malformed)
                {
                    self.message_acks(e);
                }
            }
            _ => self.frame(e),
        }
        Flow::Continue
    }

    fn end_file(&mut self, file: u32, end: &FileEnd) {
        self.file_result(file as usize, end);
    }

    fn flow_end(&mut self, end: &FlowEnd) {
        let r = &mut self.report.reassembly;
        r.attacks.add(&end.attacks);
        r.single_fragment_messages += end.single_fragment_messages;
        for (n, cs) in &end.reassembly {
            r.by_count.entry(*n).or_default().add(cs);
        }
        if let Some(fl) = self.flows.get_mut(end.index as usize) {
            fl.stats.seq = end.seq.clone();
            fl.stats.sequence_spaces = end.spaces.clone();
            fl.stats.streams = end.streams.clone();
            fl.stats.reassembly = end.reassembly.clone();
            fl.stats.attacks = end.attacks.clone();
        }
    }

    fn finish(&mut self, s: &Summary) {
        self.report.capture.ip_defrag = s.ip_defrag;
        self.report.reassembly.peak_bytes = s.reassembly_peak;
        self.report.sender_spaces = s.sender_spaces.clone();
        self.report.decryption = s.decryption.clone();
        // The inner layers' statistics, as `needs` made them.
        self.layers = (s.layers.iter())
            .filter_map(|l| {
                let stats = l.1.clone().into_any().downcast::<Statistics>().ok()?;
                Some((l.0.clone(), *stats))
            })
            .collect();
        if let Some(m) = &mut self.report.messages {
            m.streams_not_tracked = s.streams_not_tracked;
        }
    }
}

/// A sink beside the statistics that takes nothing: the plain analyzer's.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSink;

impl Sink for NoSink {
    #[inline(always)]
    fn packet(&mut self, _: &PacketEvent<'_>) -> Flow {
        Flow::Continue
    }
}

/// The engine with the statistics sink (and `extra`, another sink fed the same events:
/// the bandwidth profile of `analyze --bits` in shards): frames in, a [`Report`] out.
#[derive(Clone)]
pub struct Analyzer<X = NoSink> {
    engine: Engine,
    stats: Statistics,
    files: u32,
    extra: X,
}

impl Analyzer {
    pub fn new(cfg: Config) -> Self {
        Analyzer::with_sink(cfg, false, NoSink)
    }
}

impl<X: Clone + Sink> Analyzer<X> {
    /// The report so far, leaving the analysis running (packets still being reassembled
    /// count as incomplete in it).
    pub fn snapshot(&self) -> Report {
        self.clone().finish()
    }
}

impl<X: Sink> Analyzer<X> {
    /// `record`: the engine attaches field trees to the events (what `extra` may read).
    pub fn with_sink(cfg: Config, record: bool, extra: X) -> Self {
        let stats = Statistics::new(cfg.clone());
        let mut needs = stats.needs().and(extra.needs());
        needs.fields |= record;
        Analyzer {
            engine: Engine::with_needs(cfg, needs),
            stats,
            files: 0,
            extra,
        }
    }

    pub fn config(&self) -> &Config {
        self.engine.config()
    }

    /// Starts a new input file.
    pub fn begin_file(&mut self, name: &str) {
        self.engine.set_file(self.files);
        self.stats.begin_file(self.files, name);
        self.extra.begin_file(self.files, name);
        self.files += 1;
    }

    /// Ends the current file with what the reader said about it.
    pub fn end_file(&mut self, error: Option<CaptureError>, truncated_tail: Option<CaptureError>) {
        let end = FileEnd {
            error,
            truncated_tail,
        };
        self.stats.end_file(self.files.saturating_sub(1), &end);
        self.extra.end_file(self.files.saturating_sub(1), &end);
    }

    /// Starts the per-second timeline at `ts_ns`, so that shards of one capture share it.
    pub fn set_timeline_start(&mut self, ts_ns: i64) {
        self.stats.set_timeline_start(ts_ns);
    }

    /// Analyzes one frame.
    pub fn frame(&mut self, f: &Frame) {
        let _ = self.engine.frame(f, &mut (&mut self.stats, &mut self.extra));
    }

    /// Keeps what each frame does to reassembly memory (shards: `run::sharded`).
    pub fn log_memory(&mut self) {
        self.engine.log_memory();
    }

    /// What frames did to reassembly memory since the last call.
    pub fn take_memory_log(&mut self) -> Vec<crate::engine::MemoryMark> {
        self.engine.take_memory_log()
    }

    /// Analyzes one frame whose datagram another thread validated (`run::pipeline`).
    pub(crate) fn frame_with(
        &mut self,
        f: &Frame,
        pre: &crate::engine::Prepared,
        found: (&crate::engine::Joined, &[u8]),
    ) {
        let _ = self
            .engine
            .frame_with(f, pre, found, &mut (&mut self.stats, &mut self.extra));
    }

    /// Ends the analysis and returns the finished statistics (for merging shards).
    pub fn finish_stats(self) -> Statistics {
        self.finish_parts().0
    }

    /// Ends the analysis: the finished statistics and the other sink.
    pub fn finish_parts(self) -> (Statistics, X) {
        let mut sinks = (self.stats, self.extra);
        self.engine.finish(&mut sinks);
        sinks
    }

    /// Bytes the analysis holds now, by its own accounting: the engine's flow state, the
    /// reassembly budget's peak and the statistics' per-flow state. Memory only grows in
    /// flows (bounded by the flow table) and reassembly (bounded by its budget), so this
    /// at the end bounds the peak.
    pub fn state_bytes(&self) -> usize {
        self.engine.state_bytes() + self.engine.reassembly_peak() + self.stats.state_bytes()
    }

    /// Ends the analysis: gives up what is still incomplete and builds the report.
    pub fn finish(self) -> Report {
        self.finish_stats().report()
    }
}

/// One more packet of a type declared from `side`.
fn count_side(s: &mut FlowStats, side: Option<Side>) {
    match side {
        Some(Side::Client) => s.from_client += 1,
        Some(Side::Server) => s.from_server += 1,
        None => {}
    }
}

/// Counts one more `key`, allocating its name only the first time.
fn count(m: &mut std::collections::BTreeMap<String, u64>, key: &str) {
    match m.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            m.insert(key.to_string(), 1);
        }
    }
}

/// Keeps the earliest datagram the description failed on.
fn first_failure(first: &mut Option<fit::FirstFailure>, e: &PacketEvent, cause: &str) {
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

fn count_fault(m: &mut Malformed, kind: FaultKind, frame: u64, flow: FlowId) {
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

/// Payload sizes in the second before each loss burst (a gap of two or more sequences)
/// against all sizes: do oversize packets come before the losses?
#[derive(Default, Clone)]
struct BurstSizes {
    bursts: u64,
    before: SizeTally,
    all: SizeTally,
}

#[derive(Default, Clone, Copy)]
struct SizeTally {
    count: u64,
    bytes: u64,
    over_budget: u64,
}

impl SizeTally {
    fn merge(&mut self, o: &SizeTally) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.over_budget += o.over_budget;
    }

    fn add(&mut self, size: u32, budget: u32) {
        self.count += 1;
        self.bytes += size as u64;
        self.over_budget += (size > budget) as u64;
    }
}

impl BurstSizes {
    fn report(&self) -> BurstReport {
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
            .then(|| {
                format!(
                    "oversize packets cluster before loss bursts: {:.1}% of the {} datagrams in the second before a burst are over the budget, against {:.1}% of {} otherwise",
                    b * 100.0,
                    self.before.count,
                    r * 100.0,
                    rest.count
                )
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

/// Asks for the cache line holding `x`, to be read soon.
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and cannot fault; SSE is in every x86_64.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
