//! The packet engine: the one route from captured frames to anything a user sees.
//!
//! A frame goes through a stateless stage (link/IP/UDP decode, then checksum, header and
//! body in [`Validator`]: any frame, any core) and an ordered stateful stage (IP
//! defragmentation, flows, sequences, game-fragment reassembly). The engine emits one
//! [`PacketEvent`] per frame and one per reassembled game packet to a [`Sink`]: the
//! statistics behind the report, the TUI's packet index, the `dissect` printers and the
//! capture writer are all sinks, as Wireshark's taps are listeners of its one dissection.

pub mod identify;
pub mod pool;

// What the analyses, runs and outputs above name of the engine is public here, since
// they are another crate; `gpcap` re-exports only what its callers name (the engine's
// types at its root, `resolve`, `layers`, `reassembly` and `limits`).
pub mod ack_facts;
mod batch;
pub mod carried;
mod completed;
mod config;
mod conversation;
mod datagram;
pub mod event;
pub mod join;
pub mod layers;
pub mod msgfrag;
pub mod msgruns;
/// Game-fragment reassembly, open for its fuzz target and property tests.
#[doc(hidden)]
pub mod reassembly;
pub mod resolve;
pub mod seq;
mod sink;
pub mod streams;
mod validator;
use datagram::emit_shown;
mod frame;

pub use batch::BATCH_FRAMES;
pub use batch::{Batch, Recycler};
pub use config::{Config, FLOW_STATE_BUDGET, PortSet};
pub use event::{FlowId, Kind, Layer, PackedFlow, PacketEvent, Reliability, Status};
pub use join::Found;
pub use join::Joined;
pub use reassembly::{AttackCounters, CountStats};
pub use seq::SeqStats;
pub use sink::{Flow, Needs, Sink, SinkError};
pub use validator::Validator;
pub use validator::Verdict;

use gpcap_dissect::Dissection;
use gpcap_wire::capture::{CaptureError, Frame};
use gpcap_wire::decode::{Decoded, IpInfo, decode, udp_from_reassembled};
use gpcap_wire::decode::{DefragStats, IpDefrag};
use hashbrown::HashMap;
use reassembly::{Budget, FlowReassembly, FragmentIn, Outcome};
use seq::SeqTracker;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// The sink a frame's events go through: remembers a [`Flow::Stop`], and the first
/// error, for the frame's caller, so that the stages inside the engine hand packets on
/// without looking. Once the sink failed it is handed nothing more.
struct Watch<'s, S: ?Sized> {
    sink: &'s mut S,
    flow: Flow,
    error: Option<SinkError>,
}

impl<'s, S: Sink + ?Sized> Watch<'s, S> {
    fn new(sink: &'s mut S) -> Self {
        Watch {
            sink,
            flow: Flow::Continue,
            error: None,
        }
    }

    #[inline(always)]
    fn pass(&mut self, event: &PacketEvent<'_>) {
        if self.error.is_some() {
            return;
        }
        match self.sink.packet(event) {
            Ok(f) => self.flow = self.flow.and(f),
            Err(e) => self.error = Some(e),
        }
    }

    /// What the frame's caller is told.
    fn outcome(self) -> Result<Flow, SinkError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.flow),
        }
    }
}

/// How reading a file ended.
#[derive(Debug, Clone, Default)]
pub struct FileEnd {
    /// Reading stopped here (frames before it were analyzed).
    pub error: Option<CaptureError>,
    /// The file ended inside a record.
    pub truncated_tail: Option<CaptureError>,
}

/// A tracked flow's final state.
#[derive(Debug, Clone)]
pub struct FlowEnd {
    pub index: u32,
    pub flow: FlowId,
    pub first_frame: u64,
    pub seq: SeqStats,
    /// The flow's other sequence spaces (declared per flow), by name.
    pub spaces: Vec<(String, SeqStats)>,
    pub reassembly: BTreeMap<u32, CountStats>,
    pub attacks: AttackCounters,
    /// Message streams (definitions that declare them), by name and key.
    pub streams: Vec<streams::StreamEnd>,
    /// Messages of count-down or flagged fragments sent in one fragment (whole).
    pub single_fragment_messages: u64,
}

/// A sequence space counted per sending address (netcode's server-global counter).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SenderSpace {
    pub sender: SocketAddr,
    pub space: String,
    pub seq: SeqStats,
}

/// What the engine's own state says at the end.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub ip_defrag: DefragStats,
    /// Most memory reassembly held at once.
    pub reassembly_peak: u64,
    /// Sequence spaces counted per sender, in order of first use.
    pub sender_spaces: Vec<SenderSpace>,
    /// Messages of streams past [`streams::MAX_STREAMS`] (no sequence analysis).
    pub streams_not_tracked: u64,
    /// What decryption did (definitions that declare `encryption`, given keys).
    pub decryption: Option<gpcap_decrypt::Report>,
    /// The inner layers' statistics, outermost first.
    pub layers: Vec<layers::LayerStats>,
}

/// Flows kept individually; traffic beyond is counted in aggregate. With per-flow state
/// bounded (sequences 128 B, reassembly within the shared budget, statistics 2 KiB) this
/// bounds memory whatever the capture.
pub const MAX_FLOWS: usize = 16_384;

#[derive(Clone)]
struct FlowState {
    key: FlowId,
    seq: SeqTracker,
    /// Further per-flow sequence spaces, by space index (created on first use).
    spaces: Vec<Option<SeqTracker>>,
    frags: FlowReassembly,
    first_frame: u64,
    /// Message streams (definitions with `role=sequence stream=…`), made on first use.
    streams: Option<Box<streams::FlowStreams>>,
    /// Messages sent in fragments inside messages, made on first use.
    messages: Option<Box<msgfrag::MessageReassembly>>,
    /// Messages whose fragments follow one another in a stream (count-down, flagged).
    runs: Option<Box<msgruns::Runs>>,
}

/// Frames in, events out: each frame decoded, validated, reassembled and dissected as
/// the [`Config`] says, one [`PacketEvent`] per datagram and per reassembled packet
/// handed to a [`Sink`]. `gpcap::run` drives it over captures; feed it frames of your
/// own with [`Engine::frame`] and end with [`Engine::finish`].
#[derive(Clone)]
pub struct Engine {
    cfg: Config,
    ports: PortSet,
    validator: Validator,
    defrag: IpDefrag,
    ip_pieces: u64,
    flow_index: HashMap<PackedFlow, u32>,
    /// The last two flows looked up: a session's traffic alternates between its two
    /// directions, and one flow's comes in runs.
    recent: [Option<(PackedFlow, u32)>; 2],
    flows: Vec<FlowState>,
    budget: Budget,
    reassembled: Vec<u8>,
    fragment_frames: Vec<u64>,
    file: u32,
    /// Per-sender sequence spaces: (sender, space) and its tracker, in first-use order.
    senders: Vec<((SocketAddr, u8), SeqTracker)>,
    sender_index: HashMap<(SocketAddr, u8), usize>,
    /// Shards only: every frame that changed reassembly memory ([`Engine::log_memory`]).
    memory_log: Option<Vec<MemoryMark>>,
    /// Values conversations remembered (definitions with `remember`).
    conversations: conversation::Conversations,
    /// Message streams open over all flows, and messages past [`streams::MAX_STREAMS`].
    streams_open: usize,
    streams_not_tracked: u64,
    /// The stream verdicts of the datagram being read (its messages' sequences).
    stream_events: Vec<streams::StreamEvent>,
    /// Messages the datagram being read completed.
    completed: completed::Completed,
    /// Decryption and inner layers (a run with keys or a stack of definitions).
    stack: Option<Box<layers::StackState>>,
}

/// What one frame did to reassembly memory: a shard's part of the sequential peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryMark {
    /// (file, frame number): the order frames are read in.
    pub at: (u32, u64),
    /// The most held while the frame was analyzed, and what it left held.
    pub high: usize,
    pub after: usize,
}

/// A frame's UDP datagram, located in the frame (what decoding found, handed from a
/// worker to the engine without decoding twice).
#[derive(Debug, Clone, Copy)]
pub struct UdpAt {
    ip: IpInfo,
    ports: (u16, u16),
    start: u32,
    len: u32,
    truncated: bool,
}

/// What a worker computed for one frame ([`Engine::prepare`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Prepared {
    udp: Option<UdpAt>,
    verdict: Option<Verdict>,
    /// The packet this frame's fragment completed, as a worker joined it (an index of
    /// the batch's [`Joined`]).
    joined: Option<u32>,
    /// Its sealed body, as a worker opened it under a key log's key (the plaintext in
    /// the batch's [`Found::plain`]).
    opened: Option<gpcap_decrypt::ahead::Opened>,
}

impl Prepared {
    /// The UDP datagram `decoded` (the decoding of `f`) found, if any, to hand on.
    #[inline]
    pub fn decoded(f: &Frame<'_>, decoded: &Decoded<'_>) -> Self {
        let udp = match *decoded {
            Decoded::Udp {
                ip,
                src_port,
                dst_port,
                payload,
                truncated,
            } => Some(UdpAt {
                ip,
                ports: (src_port, dst_port),
                start: (payload.as_ptr() as usize).wrapping_sub(f.data.as_ptr() as usize) as u32,
                len: payload.len() as u32,
                truncated,
            }),
            _ => None,
        };
        Prepared {
            udp,
            verdict: None,
            joined: None,
            opened: None,
        }
    }
}

/// What workers found for a frame ahead of the ordered stage.
#[derive(Clone, Copy, Default)]
struct Preset<'a> {
    /// The verdict on its whole UDP datagram.
    verdict: Option<&'a Verdict>,
    /// The packet its fragment completed, as a worker joined it.
    joined: Option<(&'a Joined, u32)>,
    /// Its sealed body as a worker opened it, and the buffer the plaintext is in.
    opened: Option<(&'a gpcap_decrypt::ahead::Opened, &'a [u8])>,
}

impl Engine {
    /// Hands `e` to the sink as the validator and the layers read it.
    #[inline]
    fn show<S: Sink + ?Sized>(
        &self,
        sink: &mut Watch<'_, S>,
        e: &PacketEvent<'_>,
        record: bool,
        fresh: bool,
    ) {
        emit_shown(
            sink,
            e,
            &self.validator.dissection,
            record,
            fresh.then_some(&self.stream_events[..]),
            self.stack.as_deref(),
        );
    }

    /// `record`: attach the field tree to events (dissect, TUI detail); statistics alone
    /// only validate bodies, which is much faster. Inner layers are read, not counted.
    pub fn new(cfg: Config, record: bool) -> Self {
        Engine::with_needs(
            cfg,
            Needs {
                fields: record,
                layers: None,
            },
        )
    }

    /// The engine `sink` needs ([`Sink::needs`]): field trees when it reads them, inner
    /// layers counted by what it makes for them.
    pub fn for_sink<S: Sink + ?Sized>(cfg: Config, sink: &S) -> Self {
        Engine::with_needs(cfg, sink.needs())
    }

    pub fn with_needs(cfg: Config, needs: Needs) -> Self {
        let record = needs.fields;
        let stack = cfg
            .stack
            .as_deref()
            .and_then(|s| layers::StackState::new(cfg.program.as_ref(), s, &cfg, needs).map(Box::new));
        Engine {
            stack,
            validator: Validator::new(&cfg, record),
            budget: Budget::new(cfg.reassembly_budget),
            ports: cfg.port_set(),
            cfg,
            defrag: IpDefrag::default(),
            ip_pieces: 0,
            flow_index: HashMap::new(),
            recent: [None; 2],
            flows: Vec::new(),
            reassembled: Vec::new(),
            fragment_frames: Vec::new(),
            file: 0,
            senders: Vec::new(),
            sender_index: HashMap::new(),
            memory_log: None,
            conversations: Default::default(),
            streams_open: 0,
            streams_not_tracked: 0,
            stream_events: Vec::new(),
            completed: Default::default(),
        }
    }

    /// Keeps a [`MemoryMark`] for every frame that changes reassembly memory, for
    /// [`Engine::take_memory_log`].
    pub fn log_memory(&mut self) {
        self.memory_log.get_or_insert_with(Vec::new);
    }

    /// The marks since the last call.
    pub fn take_memory_log(&mut self) -> Vec<MemoryMark> {
        self.memory_log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Bytes the engine holds for its flows, outside the reassembly budget (which counts
    /// the data being reassembled): flow states, their sequence trackers and tables, the
    /// flow index and per-sender spaces. The memory accounting a property test bounds.
    pub fn state_bytes(&self) -> usize {
        use std::mem::size_of;
        let flows: usize = self
            .flows
            .iter()
            .map(|f| f.spaces.capacity() * size_of::<Option<SeqTracker>>() + f.frags.table_bytes())
            .sum();
        flows
            + self.flows.capacity() * size_of::<FlowState>()
            + self.flow_index.capacity() * (size_of::<(PackedFlow, u32)>() + 1)
            + self.senders.capacity() * size_of::<((SocketAddr, u8), SeqTracker)>()
            + self.sender_index.capacity() * (size_of::<((SocketAddr, u8), usize)>() + 1)
    }

    /// Reassembly data held now (within the budget).
    pub fn reassembly_held(&self) -> usize {
        self.budget.used
    }

    /// The most reassembly held at once so far.
    pub fn reassembly_peak(&self) -> usize {
        self.budget.peak
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Frames that follow belong to input file `file`.
    pub fn set_file(&mut self, file: u32) {
        self.file = file;
    }

    fn evict_elsewhere(&mut self) {
        self.evict_messages_elsewhere();
        for fl in &mut self.flows {
            if self.budget.used <= self.budget.limit {
                break;
            }
            while fl.frags.bytes_held > 0 && self.budget.used > self.budget.limit {
                if !fl.frags.evict_oldest(&mut self.budget) {
                    break;
                }
            }
        }
    }

    /// Ends the run: gives up what is still incomplete and reports every flow's final
    /// state, then the engine's own, to `sink`.
    pub fn finish<S: Sink + ?Sized>(mut self, sink: &mut S) {
        self.defrag.finish();
        for (i, mut fl) in std::mem::take(&mut self.flows).into_iter().enumerate() {
            fl.frags.finish(&mut self.budget);
            Self::finish_messages(&mut fl, &mut self.budget);
            sink.flow_end(&FlowEnd {
                index: i as u32,
                flow: fl.key,
                first_frame: fl.first_frame,
                seq: fl.seq.stats,
                spaces: fl
                    .spaces
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, t)| Some((self.space_name(i as u8), t?.stats)))
                    .collect(),
                single_fragment_messages: fl.runs.as_ref().map_or(0, |r| r.single),
                reassembly: fl.frags.by_count,
                attacks: fl.frags.attacks,
                streams: fl
                    .streams
                    .map(|s| s.finish(self.stream_defs()))
                    .unwrap_or_default(),
            });
        }
        let sender_spaces = std::mem::take(&mut self.senders)
            .into_iter()
            .map(|((sender, s), t)| SenderSpace {
                sender,
                space: self.space_name(s),
                seq: t.stats,
            })
            .collect();
        let (decryption, layers) = self.stack.take().map(|s| s.finish()).unwrap_or_default();
        sink.finish(&Summary {
            decryption,
            layers,
            ip_defrag: self.defrag.stats,
            reassembly_peak: self.budget.peak as u64,
            sender_spaces,
            streams_not_tracked: self.streams_not_tracked,
        });
    }

    fn space_name(&self, s: u8) -> String {
        self.cfg
            .program
            .as_ref()
            .and_then(|p| p.spaces.get(s as usize))
            .map_or_else(String::new, |d| d.name.clone())
    }
}
