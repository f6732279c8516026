//! The statistics sink: counts what the engine's events say and builds the [`Report`]
//! (capture summary, validation, flows, malformed packets, reassembly and amplification,
//! MTU). It never prints. [`Analyzer`] is the engine with this sink, the usual way in.

pub(crate) mod acks;
pub mod fit;
pub mod gates;
pub(crate) mod msgacks;
pub(crate) mod report;

pub use acks::{AckStats, AckedBy, Mechanism, RttSummary};
use gpcap_dissect::FaultKind;
use gpcap_dissect::program::Side;
pub use gpcap_engine::Config;
use gpcap_engine::seq::SeqEvent;
use gpcap_engine::{
    Engine, FileEnd, Flow, FlowEnd, Kind, Layer, Needs, PacketEvent, Sink, SinkError, Status, Summary,
};
use gpcap_wire::capture::{CaptureError, Frame};
use gpcap_wire::decode::IcmpTooBig;
use hashbrown::HashMap;
pub use report::*;
use std::collections::VecDeque;
use std::net::SocketAddr;

mod count;
mod datagram;
mod finalize;
mod flow;
mod mtu;
mod reassembly;
mod settle;
mod validation;
use flow::*;

/// Findings kept as lists (counts are exact beyond).
const MAX_LISTED: usize = 1000;

/// Datagrams remembered per flow for the burst window (a flow sending faster than this
/// per second is sampled by its latest datagrams).
const RECENT: usize = 512;
/// Of those, what every flow may hold outside the flow state budget.
const RECENT_UNBUDGETED: usize = 32;
const BURST_WINDOW_NS: i64 = 1_000_000_000;

/// Counts events into a report.
#[derive(Clone)]
pub struct Statistics {
    cfg: Config,
    /// Tracked flows, by the engine's flow index.
    flows: Vec<FlowState>,
    /// Every flow past the engine's flow table, counted together.
    untracked: Option<FlowState>,
    /// The MTU section, counted by a tap of its own.
    mtu: mtu::MtuTap,
    /// The reassembly section's counts, by a tap of its own.
    reassembly: reassembly::ReassemblyTap,
    /// The validation section, the faults and the first failure, by a tap of their own.
    validation: validation::ValidationTap,
    bursts: BurstSizes,
    /// Frames by link type (named when the report is built).
    link_types: Vec<(i32, u64)>,
    /// The side each packet type is declared `from`, by type id.
    sides: Vec<Option<Side>>,
    /// With datagram kinds, which kinds carry messages (by type): the others are not
    /// counted as datagrams of no messages.
    kinds_with_messages: Option<Vec<bool>>,
    /// The acks section, counted by a tap of its own (its trackers in the flows).
    acks: settle::AckTap,
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
        Statistics {
            quarter_space: 1u128 << cfg.sequence_bits().clamp(2, 64).saturating_sub(2),
            sides,
            kinds_with_messages: cfg
                .program
                .as_deref()
                .filter(|p| p.kinds)
                .map(|p| (0..p.format_types()).map(|t| p.carries_messages(t)).collect()),
            acks: settle::AckTap::new(&cfg),
            flows: Vec::new(),
            untracked: None,
            mtu: mtu::MtuTap::new(&cfg),
            reassembly: Default::default(),
            validation: Default::default(),
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
        self.mtu.merge(o.mtu);
        self.reassembly.merge(o.reassembly);
        self.validation.merge(o.validation);
        self.acks.merge(o.acks);
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
        self.acks.keep_log();
    }

    /// The acks a packet carries, settled on the other direction's tracker.
    #[inline(always)]
    fn ack(&mut self, e: &PacketEvent) {
        let start = self.report.timeline.start_ns;
        self.acks.ack(&mut self.flows, &mut self.state, start, e);
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
                .entry(gpcap_wire::decode::linktype::name(t))
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
        c.acks_unmatched += self.acks.unmatched();
        c.burst_window_capped += self.state.burst_window_capped;
        self.report.untracked = self.untracked.map(|f| {
            let mut stats = f.stats;
            stats.pad_types();
            stats
        });
        self.report.mtu = self.mtu.finish(self.bursts.report());
        self.report.reassembly = self.reassembly.finish();
        self.validation.finish(&mut self.report);
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
            + self.acks.heap_bytes()
    }
}

/// An inner layer's statistics: counted as the outermost layer's are.
fn layer_statistics(cfg: &Config) -> Box<dyn gpcap_engine::layers::LayerSink> {
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

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        match e.kind {
            Kind::Reassembled => self.reassembled(e),
            Kind::Game | Kind::OtherUdp => {
                self.frame(e);
                self.datagram(e);
                if self.acks.of_messages()
                    && !e.messages.is_empty()
                    && matches!(e.status, Status::Ok | Status::Malformed)
                {
                    let start = self.report.timeline.start_ns;
                    (self.acks).messages(&mut self.flows, &mut self.state, (start, &self.cfg), e);
                }
            }
            _ => self.frame(e),
        }
        Ok(Flow::Continue)
    }

    fn end_file(&mut self, file: u32, end: &FileEnd) {
        self.file_result(file as usize, end);
    }

    fn flow_end(&mut self, end: &FlowEnd) {
        self.reassembly.flow_end(end);
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
        self.reassembly.peak(s.reassembly_peak);
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
    fn packet(&mut self, _: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        Ok(Flow::Continue)
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
    /// `extra` counts beside the statistics (the bandwidth profile): it is handed every
    /// frame, cannot stop the analysis and must not fail; a sink that writes runs through
    /// [`crate::run::run_files`], which ends with its error.
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
        let counted = self.engine.frame(f, &mut (&mut self.stats, &mut self.extra));
        debug_assert!(counted.is_ok(), "an analyzer's sinks count; they do not fail");
    }

    /// Keeps what each frame does to reassembly memory (shards: `run::sharded`).
    pub fn log_memory(&mut self) {
        self.engine.log_memory();
    }

    /// What frames did to reassembly memory since the last call.
    pub fn take_memory_log(&mut self) -> Vec<gpcap_engine::MemoryMark> {
        self.engine.take_memory_log()
    }

    /// Analyzes one frame whose datagram another thread validated (`run::pipeline`).
    pub(crate) fn frame_with(
        &mut self,
        f: &Frame,
        pre: &gpcap_engine::Prepared,
        found: (&gpcap_engine::Joined, &[u8]),
    ) {
        let counted = self
            .engine
            .frame_with(f, pre, found, &mut (&mut self.stats, &mut self.extra));
        debug_assert!(counted.is_ok(), "an analyzer's sinks count; they do not fail");
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
