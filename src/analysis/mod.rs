//! Flow analysis: protocol validation, sequence analysis, reassembly, MTU findings.
//! The [`Analyzer`] takes frames and returns a [`Report`]; it never prints.

pub mod parallel;
pub mod reassembly;
pub mod report;
pub mod seq;

use crate::capture::decode::{Decoded, IcmpTooBig, IpInfo, udp_from_reassembled};
use crate::capture::ipfrag::IpDefrag;
use crate::capture::{CaptureError, Frame, decode};
use crate::dissect::{Dissection, Dissector, FaultKind, Program};
use crate::wire::{self, CrcStatus, HeaderFormat, ProtocolId};
use hashbrown::HashMap;
use reassembly::{Budget, FlowReassembly, FragmentIn, Outcome};
pub use report::*;
use seq::SeqTracker;
use std::net::SocketAddr;
use std::sync::Arc;

/// What the protocol is and where to look for it.
#[derive(Debug, Clone)]
pub struct Config {
    pub protocol_id: Option<ProtocolId>,
    /// UDP ports of the protocol (either end).
    pub ports: Vec<u16>,
    /// Validate every UDP datagram, whatever its ports.
    pub any_port: bool,
    pub format: HeaderFormat,
    pub program: Option<Arc<Program>>,
    /// The link MTU for "IP datagram over the link MTU" findings.
    pub link_mtu: u32,
    /// Total reassembly memory across flows.
    pub reassembly_budget: usize,
    /// Where the protocol id came from, for the report.
    pub protocol_source: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            protocol_id: None,
            ports: Vec::new(),
            any_port: false,
            format: HeaderFormat::default(),
            program: None,
            link_mtu: 1500,
            reassembly_budget: 32 << 20,
            protocol_source: "none".into(),
        }
    }
}

impl Config {
    /// Takes the protocol id (and, when none are set, the ports) that identification found.
    pub fn use_identified(&mut self, c: &crate::identify::Candidate) {
        self.protocol_id = Some(c.protocol_id);
        self.protocol_source = "identified".into();
        if self.ports.is_empty() {
            self.ports = c.ports.clone();
        }
    }

    /// Parameters from a compiled definition.
    pub fn from_program(p: Arc<Program>) -> Self {
        Config {
            protocol_id: p.params.protocol_id,
            ports: p.params.ports.clone(),
            format: p.params.format,
            protocol_source: "definition".into(),
            program: Some(p),
            ..Config::default()
        }
    }
}

/// What the analyzer made of one frame: the packet list of the TUI and live capture is
/// built from these, so every view classifies a frame the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    pub kind: SeenKind,
    pub flow: Option<FlowId>,
    /// UDP payload bytes (game and other UDP).
    pub size: u32,
    pub sequence: Option<u16>,
    pub packet_type: Option<u32>,
    /// (fragment id, fragment count) of a game fragment.
    pub fragment: Option<(u32, u32)>,
    /// CRC verdict: None when not checked.
    pub crc_ok: Option<bool>,
    pub fault: Option<FaultKind>,
    /// The datagram was rebuilt from IP fragments (this frame carried the last one).
    pub ip_fragmented: bool,
    pub over_budget: bool,
    /// Cut by the snaplen or shorter than the UDP length says.
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SeenKind {
    /// A datagram on the protocol's ports.
    Game,
    OtherUdp,
    /// An IP fragment that did not (yet) complete a datagram.
    IpPiece,
    Icmp,
    #[default]
    NotUdp,
    Malformed,
}

/// Flows kept individually; traffic beyond is counted in aggregate. With the per-flow
/// state bounded (sizes 2 KiB, burst window 8 KiB, sequences 128 B, reassembly within the
/// shared budget) this bounds the analyzer's memory whatever the capture.
const MAX_FLOWS: usize = 16_384;
/// Findings kept as lists (counts are exact beyond).
const MAX_LISTED: usize = 1000;

#[derive(Clone)]
struct FlowState {
    stats: FlowStats,
    seq: SeqTracker,
    frags: FlowReassembly,
    /// Recent (time, payload size) for "sizes in the second before a loss burst".
    recent: std::collections::VecDeque<(i64, u32)>,
    /// Datagrams up to this time were already counted as before a burst.
    counted_until: i64,
    /// The frame that opened the flow: shards merge flows back in this order.
    first_frame: u64,
}

/// Datagrams remembered per flow for the burst window (a flow sending faster than this
/// per second is sampled by its latest datagrams).
const RECENT: usize = 512;
const BURST_WINDOW_NS: i64 = 1_000_000_000;

/// Frame-by-frame analysis; `snapshot` reports without ending it (live capture).
#[derive(Clone)]
pub struct Analyzer {
    cfg: Config,
    dissector: Option<Dissector>,
    dissection: Dissection,
    reassembled: Vec<u8>,
    defrag: IpDefrag,
    budget: Budget,
    flows: HashMap<(SocketAddr, SocketAddr), FlowState>,
    order: Vec<(SocketAddr, SocketAddr)>,
    /// The smallest MTU ICMP announced for each flow.
    path_mtu: HashMap<(SocketAddr, SocketAddr), u32>,
    bursts: BurstSizes,
    seen: Seen,
    /// The UDP payload last rebuilt from IP fragments (for viewers of this frame).
    ip_payload: Vec<u8>,
    report: Report,
}

impl Analyzer {
    pub fn new(cfg: Config) -> Self {
        let dissector = cfg.program.clone().map(|p| {
            let mut d = Dissector::new(p);
            d.record = false;
            d
        });
        let mut report = Report::default();
        report.protocol.protocol_id = cfg.protocol_id;
        report.protocol.source = cfg.protocol_source.clone();
        report.protocol.ports = cfg.ports.clone();
        report.protocol.any_port = cfg.any_port;
        report.protocol.name = cfg.program.as_ref().map(|p| p.params.name.clone());
        report.mtu.budget = cfg.format.mtu_budget;
        report.mtu.link_mtu = cfg.link_mtu;
        Analyzer {
            budget: Budget::new(cfg.reassembly_budget),
            cfg,
            dissector,
            dissection: Dissection::default(),
            reassembled: Vec::new(),
            defrag: IpDefrag::default(),
            flows: HashMap::new(),
            order: Vec::new(),
            path_mtu: HashMap::new(),
            bursts: BurstSizes::default(),
            seen: Seen::default(),
            ip_payload: Vec::new(),
            report,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Starts a new input file.
    pub fn begin_file(&mut self, name: &str) {
        self.report.capture.files.push(FileSummary {
            name: name.to_string(),
            ..FileSummary::default()
        });
    }

    /// Ends the current file with what the reader said about it.
    pub fn end_file(&mut self, error: Option<CaptureError>, truncated_tail: Option<CaptureError>) {
        if let Some(f) = self.report.capture.files.last_mut() {
            f.error = error;
            f.truncated_tail = truncated_tail;
        }
    }

    /// Starts the per-second timeline at `ts_ns`, so that shards of one capture share it.
    pub fn set_timeline_start(&mut self, ts_ns: i64) {
        self.report.timeline.start_ns.get_or_insert(ts_ns);
    }

    /// Records how reading file `i` ended (for shards, whose reader is elsewhere).
    pub fn file_result(
        &mut self,
        i: usize,
        error: Option<CaptureError>,
        truncated_tail: Option<CaptureError>,
    ) {
        if let Some(f) = self.report.capture.files.get_mut(i) {
            f.error = error;
            f.truncated_tail = truncated_tail;
        }
    }

    /// Folds in a shard: an analyzer of the same capture that saw a disjoint set of IP
    /// address pairs (so every flow, IP datagram and ICMP quote lives in one shard).
    /// Counters add up, lists merge by frame, flows keep their order of appearance.
    pub fn merge(&mut self, mut o: Analyzer) {
        for k in std::mem::take(&mut o.order) {
            if let Some(fs) = o.flows.remove(&k) {
                self.order.push(k);
                self.flows.insert(k, fs);
            }
        }
        let flows = &self.flows;
        self.order
            .sort_by_key(|k| flows.get(k).map_or(u64::MAX, |f| f.first_frame));
        self.path_mtu.extend(o.path_mtu.drain());
        self.bursts.bursts += o.bursts.bursts;
        self.bursts.before.merge(&o.bursts.before);
        self.bursts.all.merge(&o.bursts.all);
        self.defrag.merge(o.defrag);
        self.budget.used += o.budget.used;
        self.budget.peak += o.budget.peak;
        self.report.merge(o.report);
    }

    /// The UDP payload of the datagram the last frame completed, when it was rebuilt
    /// from IP fragments (the frame itself holds only the last piece).
    pub fn reassembled_payload(&self) -> Option<&[u8]> {
        self.seen.ip_fragmented.then_some(self.ip_payload.as_slice())
    }

    /// Analyzes one frame and says what it was.
    pub fn frame(&mut self, f: &Frame) -> Seen {
        self.seen = Seen::default();
        self.frame_inner(f);
        self.seen
    }

    fn frame_inner(&mut self, f: &Frame) {
        // The timeline counts seconds of capture time, from the first frame.
        self.report.timeline.start_ns.get_or_insert(f.ts_ns);
        let c = &mut self.report.capture;
        c.frames += 1;
        c.bytes += f.data.len() as u64;
        c.wire_bytes += f.origlen as u64;
        if c.first_ns.is_none() {
            c.first_ns = Some(f.ts_ns);
        }
        c.first_ns = c.first_ns.map(|t| t.min(f.ts_ns));
        c.last_ns = Some(c.last_ns.map_or(f.ts_ns, |t| t.max(f.ts_ns)));
        *c.link_types
            .entry(crate::capture::decode::linktype::name(f.linktype))
            .or_default() += 1;
        if let Some(file) = c.files.last_mut() {
            file.frames += 1;
        }
        let snap_cut = f.snaplen_truncated();
        if snap_cut {
            c.snaplen_truncated += 1;
        }
        match decode(f.linktype, f.data) {
            Decoded::Udp {
                ip,
                src_port,
                dst_port,
                payload,
                truncated,
            } => self.datagram(f, &ip, src_port, dst_port, payload, truncated || snap_cut, 1),
            Decoded::IpFragment {
                ip,
                protocol,
                payload,
            } => {
                self.report.capture.ip_fragments += 1;
                if let Some(r) = self.defrag.push(f.ts_ns, &ip, protocol, payload) {
                    if r.protocol == 17 {
                        if let Decoded::Udp {
                            ip,
                            src_port,
                            dst_port,
                            payload,
                            truncated,
                        } = udp_from_reassembled(r.ip, &r.data)
                        {
                            self.ip_payload.clear();
                            self.ip_payload.extend_from_slice(payload);
                            self.datagram(f, &ip, src_port, dst_port, payload, truncated, r.fragments);
                        } else {
                            *self.report.capture.decode_errors.entry("udp".into()).or_default() += 1;
                        }
                    } else {
                        *self
                            .report
                            .capture
                            .not_udp
                            .entry("ip-fragmented non-udp".into())
                            .or_default() += 1;
                    }
                }
                if self.report.capture.ip_fragments.is_multiple_of(1024) {
                    self.defrag.expire(f.ts_ns);
                }
            }
            Decoded::Icmp(icmp) => {
                self.seen.kind = SeenKind::Icmp;
                self.icmp(f, icmp)
            }
            Decoded::Other(what) => *self.report.capture.not_udp.entry(what.into()).or_default() += 1,
            Decoded::Malformed { layer, .. } => {
                self.seen.kind = SeenKind::Malformed;
                self.seen.truncated = snap_cut;
                if snap_cut {
                    *self
                        .report
                        .capture
                        .truncated_by_layer
                        .entry(layer.into())
                        .or_default() += 1;
                } else {
                    *self.report.capture.decode_errors.entry(layer.into()).or_default() += 1;
                }
            }
            Decoded::UnsupportedLink(t) => {
                *self
                    .report
                    .capture
                    .decode_errors
                    .entry(format!("unsupported linktype {t}"))
                    .or_default() += 1
            }
        }
    }

    fn icmp(&mut self, f: &Frame, icmp: IcmpTooBig) {
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
        }
        let m = &mut self.report.mtu;
        m.icmp_total += 1;
        if m.icmp.len() < MAX_LISTED {
            m.icmp.push(IcmpFinding {
                frame: f.number,
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

    #[allow(clippy::too_many_arguments)]
    fn datagram(
        &mut self,
        f: &Frame,
        ip: &IpInfo,
        sport: u16,
        dport: u16,
        payload: &[u8],
        truncated: bool,
        ip_fragments: u32,
    ) {
        let c = &mut self.report.capture;
        c.udp_datagrams += 1;
        if ip_fragments > 1 {
            c.ip_reassembled += 1;
        }
        let key = (SocketAddr::new(ip.src, sport), SocketAddr::new(ip.dst, dport));
        self.seen.flow = Some(FlowId {
            src: key.0,
            dst: key.1,
        });
        self.seen.size = payload.len() as u32;
        self.seen.ip_fragmented = ip_fragments > 1;
        self.seen.truncated = truncated;
        self.seen.kind = SeenKind::OtherUdp;
        if !(self.cfg.any_port || self.cfg.ports.contains(&sport) || self.cfg.ports.contains(&dport)) {
            c.other_udp += 1;
            return;
        }
        self.seen.kind = SeenKind::Game;
        self.seen.over_budget = payload.len() as u32 > self.cfg.format.mtu_budget;
        if !self.flows.contains_key(&key) {
            if self.flows.len() >= MAX_FLOWS {
                self.report.capture.flows_not_tracked += 1;
                return;
            }
            self.order.push(key);
            self.flows.insert(
                key,
                FlowState {
                    stats: FlowStats::new(key.0, key.1, self.cfg.format.num_types),
                    seq: SeqTracker::default(),
                    frags: FlowReassembly::default(),
                    recent: std::collections::VecDeque::new(),
                    counted_until: i64::MIN,
                    first_frame: f.number,
                },
            );
        }
        let Some(flow) = self.flows.get_mut(&key) else {
            return;
        };
        let s = &mut flow.stats;
        let v = &mut self.report.validation;
        v.examined += 1;
        s.datagrams += 1;
        s.bytes += payload.len() as u64;
        s.first_ns.get_or_insert(f.ts_ns);
        s.last_ns = Some(f.ts_ns);
        s.largest_payload = s.largest_payload.max(payload.len() as u32);
        s.largest_ip = s.largest_ip.max(ip.total_len);
        s.size_hist.add(payload.len() as u32);
        let m = &mut self.report.mtu;
        if payload.len() as u32 > self.cfg.format.mtu_budget {
            s.over_budget += 1;
            m.over_budget += 1;
        }
        if ip.total_len > self.cfg.link_mtu {
            m.over_link_mtu += 1;
            if ip.dont_fragment && ip_fragments <= 1 {
                m.df_over_link_mtu += 1;
            }
        }
        // A datagram sent whole with don't-fragment over the MTU a router announced
        // (the first one is counted from the ICMP that quotes it).
        if ip.dont_fragment
            && ip_fragments <= 1
            && let Some(&pmtu) = self.path_mtu.get(&key)
            && ip.total_len > pmtu
        {
            m.df_over_path_mtu += 1;
        }
        if ip_fragments > 1 {
            s.ip_fragmented += 1;
            m.ip_fragmented += 1;
            if m.ip_fragmented_list.len() < MAX_LISTED {
                m.ip_fragmented_list.push(IpFragFinding {
                    frame: f.number,
                    flow: FlowId {
                        src: key.0,
                        dst: key.1,
                    },
                    ip_len: ip.total_len,
                    fragments: ip_fragments,
                });
            }
        }
        if truncated {
            s.truncated += 1;
            v.truncated += 1;
            return;
        }
        // Validation: CRC, then header (and body with a definition).
        if let Some(id) = self.cfg.protocol_id {
            match wire::verify_crc(id, payload) {
                CrcStatus::Ok => {}
                CrcStatus::Mismatch { .. } => {
                    s.crc_fail += 1;
                    v.crc_mismatch += 1;
                    self.seen.crc_ok = Some(false);
                    return;
                }
                CrcStatus::TooShort { .. } => {
                    s.too_short += 1;
                    v.too_short += 1;
                    self.seen.crc_ok = Some(false);
                    return;
                }
            }
            self.seen.crc_ok = Some(true);
        }
        v.crc_ok += 1;
        s.crc_ok += 1;
        let (sequence, ptype, fragment, fault) = match &mut self.dissector {
            Some(d) => {
                d.dissect_into(payload, &mut self.dissection);
                let x = &self.dissection;
                match (x.sequence, x.packet_type) {
                    (Some(seq), Some(t)) => (seq, t, x.fragment, x.fault.as_ref().map(|f| f.kind)),
                    _ => {
                        *v.header_errors
                            .entry(x.fault.as_ref().map_or("header", |f| f.kind.code()).into())
                            .or_default() += 1;
                        s.malformed += 1;
                        self.seen.fault = Some(x.fault.as_ref().map_or(FaultKind::PastEnd, |f| f.kind));
                        return;
                    }
                }
            }
            None => match wire::read_header(payload, &self.cfg.format) {
                Ok(h) => (
                    h.header.sequence,
                    h.header.packet_type,
                    h.fragment.map(|fh| crate::dissect::FragmentInfo {
                        id: fh.fragment_id,
                        count: fh.num_fragments,
                        data_offset: h.body_offset,
                        data_len: payload.len().saturating_sub(h.body_offset),
                    }),
                    None,
                ),
                Err(e) => {
                    *v.header_errors.entry(e.kind.code().into()).or_default() += 1;
                    s.malformed += 1;
                    self.seen.fault = Some(FaultKind::from_error(&e.kind));
                    return;
                }
            },
        };
        let event = flow.seq.observe(sequence, fragment.is_some());
        let second = self.report.timeline.slot(f.ts_ns);
        if let Some(t) = second {
            t.datagrams += 1;
            if let seq::SeqEvent::New { gap } = event {
                t.lost += gap;
            }
        }
        while flow
            .recent
            .front()
            .is_some_and(|&(t, _)| t < f.ts_ns - BURST_WINDOW_NS || flow.recent.len() >= RECENT)
        {
            flow.recent.pop_front();
        }
        flow.recent.push_back((f.ts_ns, payload.len() as u32));
        let budget = self.cfg.format.mtu_budget;
        self.bursts.all.add(payload.len() as u32, budget);
        if let seq::SeqEvent::New { gap } = event
            && gap >= 2
        {
            // A burst: the datagrams of the second before it (not counted yet).
            self.bursts.bursts += 1;
            let from = (f.ts_ns - BURST_WINDOW_NS).max(flow.counted_until);
            for &(t, size) in flow.recent.iter().filter(|(t, _)| *t > from && *t < f.ts_ns) {
                let _ = t;
                self.bursts.before.add(size, budget);
            }
            flow.counted_until = f.ts_ns;
        }
        if let Some(n) = s.types.get_mut(ptype as usize) {
            *n += 1;
        }
        self.seen.sequence = Some(sequence);
        self.seen.packet_type = Some(ptype);
        self.seen.fragment = fragment.map(|x| (x.id, x.count));
        self.seen.fault = fault;
        if let Some(kind) = fault {
            s.malformed += 1;
            count_fault(&mut self.report.malformed, kind, f.number, key);
        }
        let Some(frag) = fragment else {
            v.packets += 1;
            return;
        };
        v.fragments += 1;
        s.fragments += 1;
        if frag.data_len as u32 > self.cfg.format.fragment_size {
            m.fragments_over_size += 1;
        }
        let data = payload
            .get(frag.data_offset..frag.data_offset + frag.data_len)
            .unwrap_or(&[]);
        let input = FragmentIn {
            sequence,
            id: frag.id,
            count: frag.count,
            data,
        };
        let outcome = flow
            .frags
            .push(input, &self.cfg.format, &mut self.budget, &mut self.reassembled);
        while self.budget.used > self.budget.limit {
            if !flow.frags.evict_oldest(&mut self.budget) {
                break;
            }
        }
        if let Outcome::Complete { count } = outcome {
            self.report.reassembly.completed += 1;
            let _ = count;
            self.reassembled_packet(f, key);
        }
        if self.budget.used > self.budget.limit {
            self.evict_elsewhere();
        }
    }

    fn evict_elsewhere(&mut self) {
        for k in &self.order {
            if self.budget.used <= self.budget.limit {
                break;
            }
            if let Some(fl) = self.flows.get_mut(k) {
                while fl.frags.bytes_held > 0 && self.budget.used > self.budget.limit {
                    if !fl.frags.evict_oldest(&mut self.budget) {
                        break;
                    }
                }
            }
        }
    }

    /// Validates and dissects a reassembled packet like any other.
    fn reassembled_packet(&mut self, f: &Frame, key: (SocketAddr, SocketAddr)) {
        let r = &mut self.report.reassembly;
        if let Some(id) = self.cfg.protocol_id
            && wire::verify_crc(id, &self.reassembled) != CrcStatus::Ok
        {
            r.crc_fail += 1;
            return;
        }
        let fault = match &mut self.dissector {
            Some(d) => {
                d.dissect_into(&self.reassembled, &mut self.dissection);
                self.dissection.fault.as_ref().map(|f| f.kind)
            }
            None => wire::read_header(&self.reassembled, &self.cfg.format)
                .err()
                .map(|_| FaultKind::PastEnd),
        };
        match fault {
            None => r.dissected_ok += 1,
            Some(kind) => {
                r.malformed += 1;
                count_fault(&mut self.report.malformed, kind, f.number, key);
            }
        }
    }

    /// The report so far, leaving the analysis running (packets still being reassembled
    /// count as incomplete in it).
    pub fn snapshot(&self) -> Report {
        self.clone().finish()
    }

    /// Ends the analysis: gives up what is still incomplete and builds the report.
    pub fn finish(mut self) -> Report {
        self.defrag.finish();
        let c = &mut self.report.capture;
        c.ip_defrag = self.defrag.stats;
        for k in &self.order {
            if let Some(mut fl) = self.flows.remove(k) {
                fl.frags.finish(&mut self.budget);
                self.report.reassembly.attacks.add(&fl.frags.attacks);
                for (n, cs) in &fl.frags.by_count {
                    let e = self.report.reassembly.by_count.entry(*n).or_default();
                    e.seen += cs.seen;
                    e.completed += cs.completed;
                    e.fragments_of_lost += cs.fragments_of_lost;
                    e.bytes_wasted += cs.bytes_wasted;
                }
                fl.stats.seq = fl.seq.stats;
                fl.stats.reassembly = fl.frags.by_count;
                fl.stats.attacks = fl.frags.attacks;
                self.report.flows.push(fl.stats);
            }
        }
        self.report.reassembly.peak_bytes = self.budget.peak as u64;
        self.report.mtu.bursts = self.bursts.report();
        self.report.finalize(&self.cfg);
        self.report
    }
}

fn count_fault(m: &mut Malformed, kind: FaultKind, frame: u64, key: (SocketAddr, SocketAddr)) {
    m.total += 1;
    *m.by_cause.entry(kind.code().into()).or_default() += 1;
    if m.examples.len() < 20 {
        m.examples.push(MalformedExample {
            frame,
            flow: FlowId {
                src: key.0,
                dst: key.1,
            },
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
        let finding = (self.bursts > 0 && self.before.count > 0 && b > 2.0 * r && self.before.over_budget > 0).then(|| {
            format!(
                "oversize packets cluster before loss bursts: {:.1}% of datagrams in the second before a burst are over the budget, against {:.1}% otherwise",
                b * 100.0,
                r * 100.0
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
