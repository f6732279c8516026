//! The packet engine: the one route from captured frames to anything a user sees.
//!
//! A frame goes through a stateless stage (link/IP/UDP decode, then checksum, header and
//! body in [`Validator`]: any frame, any core) and an ordered stateful stage (IP
//! defragmentation, flows, sequences, game-fragment reassembly). The engine emits one
//! [`PacketEvent`] per frame and one per reassembled game packet to a [`Sink`]: the
//! statistics behind the report, the TUI's packet index, the `dissect` printers and the
//! capture writer are all sinks, as Wireshark's taps are listeners of its one dissection.

// The engine's rooms are its own: what callers name is re-exported below, and `layers`
// (stacks of definitions) and `resolve` (a config from flags and traffic) stay open for
// the command line.
pub(crate) mod ack_facts;
mod batch;
pub(crate) mod carried;
mod config;
mod conversation;
pub(crate) mod event;
pub(crate) mod join;
pub mod layers;
pub(crate) mod msgfrag;
pub(crate) mod msgruns;
/// Game-fragment reassembly, open for its fuzz target and property tests.
#[doc(hidden)]
pub mod reassembly;
pub mod resolve;
pub(crate) mod seq;
mod sink;
pub(crate) mod streams;
mod validator;

pub use batch::BATCH_FRAMES;
pub(crate) use batch::{Batch, Found, Recycler};
pub use config::{Config, FLOW_STATE_BUDGET, PortSet};
pub use event::{FlowId, Kind, Layer, PackedFlow, PacketEvent, Reliability, Status};
pub(crate) use join::Joined;
pub use reassembly::{AttackCounters, CountStats};
pub use seq::SeqStats;
pub use sink::{Flow, Needs, Sink};
pub(crate) use validator::Validator;
pub use validator::Verdict;

use crate::capture::{CaptureError, Frame};
use crate::decode::ipfrag::{DefragStats, IpDefrag};
use crate::decode::{Decoded, IpInfo, decode, udp_from_reassembled};
use crate::dissect::Dissection;
use hashbrown::HashMap;
use reassembly::{Budget, FlowReassembly, FragmentIn, Outcome};
use seq::SeqTracker;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// The sink a frame's events go through: remembers a [`Flow::Stop`] for the frame's
/// caller, so that the stages inside the engine hand packets on without looking.
struct Watch<'s, S: ?Sized> {
    sink: &'s mut S,
    flow: Flow,
}

impl<S: Sink + ?Sized> Sink for Watch<'_, S> {
    #[inline(always)]
    fn packet(&mut self, event: &PacketEvent<'_>) -> Flow {
        let f = self.sink.packet(event);
        self.flow = self.flow.and(f);
        f
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
    pub decryption: Option<crate::decrypt::Report>,
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
/// handed to a [`Sink`]. [`run`](fn@crate::run) drives it over captures; feed it frames of your
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
    completed: msgfrag::Completed,
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
pub(crate) struct UdpAt {
    ip: IpInfo,
    ports: (u16, u16),
    start: u32,
    len: u32,
    truncated: bool,
}

/// What a worker computed for one frame ([`Engine::prepare`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prepared {
    udp: Option<UdpAt>,
    verdict: Option<Verdict>,
    /// The packet this frame's fragment completed, as a worker joined it (an index of
    /// the batch's [`Joined`]).
    joined: Option<u32>,
    /// Its sealed body, as a worker opened it under a key log's key (the plaintext in
    /// the batch's [`Found::plain`]).
    opened: Option<crate::decrypt::ahead::Opened>,
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
    opened: Option<(&'a crate::decrypt::ahead::Opened, &'a [u8])>,
}

/// Hands `e` to the sink, with the field tree when fields are recorded (the tree lives
/// in the validator, not as long as the event: a copy carries it), and the datagram's
/// messages, acks and stream verdicts when the validator read this very datagram.
#[inline]
fn emit<S: Sink + ?Sized>(
    sink: &mut S,
    e: &PacketEvent<'_>,
    d: &Dissection,
    record: bool,
    fresh: Option<&[streams::StreamEvent]>,
) -> Flow {
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
        return sink.packet(e);
    }
    sink.packet(&PacketEvent {
        dissection: record.then_some(d),
        messages,
        reliability: with.then_some(&more),
        ..*e
    })
}

/// As [`emit`], with a decrypted datagram's plaintext and tree when there is one (the
/// tree's byte values read the plaintext).
#[inline]
fn emit_shown<S: Sink + ?Sized>(
    sink: &mut S,
    e: &PacketEvent<'_>,
    d: &Dissection,
    record: bool,
    fresh: Option<&[streams::StreamEvent]>,
    stack: Option<&layers::StackState>,
) -> Flow {
    let Some(stack) = stack else {
        return emit(sink, e, d, record, fresh);
    };
    let carried = stack.carried();
    match stack.shown() {
        Some((plain, tree)) if record => sink.packet(&PacketEvent {
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
    /// Hands `e` to the sink as the validator and the layers read it.
    #[inline]
    fn show<S: Sink + ?Sized>(&self, sink: &mut S, e: &PacketEvent<'_>, record: bool, fresh: bool) {
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

    pub(crate) fn with_needs(cfg: Config, needs: Needs) -> Self {
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
    pub(crate) fn log_memory(&mut self) {
        self.memory_log.get_or_insert_with(Vec::new);
    }

    /// The marks since the last call.
    pub(crate) fn take_memory_log(&mut self) -> Vec<MemoryMark> {
        self.memory_log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Bytes the engine holds for its flows, outside the reassembly budget (which counts
    /// the data being reassembled): flow states, their sequence trackers and tables, the
    /// flow index and per-sender spaces. The memory accounting a property test bounds.
    pub(crate) fn state_bytes(&self) -> usize {
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

    /// Runs one frame through the stateful stage only, with what a worker already found
    /// in it (see [`Engine::prepare`]): the frame is not decoded again, and a whole UDP
    /// datagram's verdict is not computed again.
    /// `joined`: the packets workers joined from the frame's batch; `plain`, the
    /// plaintexts they opened in it.
    pub(crate) fn frame_with<S: Sink + ?Sized>(
        &mut self,
        f: &Frame<'_>,
        pre: &Prepared,
        (joined, plain): (&Joined, &[u8]),
        sink: &mut S,
    ) -> Flow {
        let mut sink = Watch {
            sink,
            flow: Flow::Continue,
        };
        match &pre.udp {
            Some(u) => {
                let payload = f
                    .data
                    .get(u.start as usize..(u.start + u.len) as usize)
                    .unwrap_or(&[]);
                let decoded = Decoded::Udp {
                    ip: u.ip,
                    src_port: u.ports.0,
                    dst_port: u.ports.1,
                    payload,
                    truncated: u.truncated,
                };
                // Read where the worker left it: a copy staged on the stack first was
                // read back before its stores had landed (store forwarding stalls).
                let preset = Preset {
                    verdict: pre.verdict.as_ref(),
                    joined: pre.joined.map(|i| (joined, i)),
                    opened: pre.opened.as_ref().map(|o| (o, plain)),
                };
                self.frame_decoded(f, decoded, preset, &mut sink)
            }
            None => self.frame_decoded(f, decode(f.linktype, f.data), Preset::default(), &mut sink),
        }
        sink.flow
    }

    /// The stateless part of a frame, for a worker to compute ahead of the engine: its
    /// UDP datagram found by decoding, and the verdict on it when it is whole and on the
    /// protocol's ports (validation is a function of the payload alone).
    #[inline]
    pub(crate) fn prepare(ports: &PortSet, validator: &mut Validator, f: &Frame<'_>) -> Prepared {
        let decoded = decode(f.linktype, f.data);
        let mut pre = Prepared::decoded(f, &decoded);
        if let Decoded::Udp {
            src_port,
            dst_port,
            payload,
            truncated: false,
            ..
        } = decoded
            && !f.snaplen_truncated()
            && ports.on_port(src_port, dst_port)
        {
            pre.verdict = Some(validator.datagram(payload));
        }
        pre
    }

    /// Runs one frame through both stages and hands its events to `sink`; whether the
    /// sink asked to stop.
    pub fn frame<S: Sink + ?Sized>(&mut self, f: &Frame<'_>, sink: &mut S) -> Flow {
        let mut sink = Watch {
            sink,
            flow: Flow::Continue,
        };
        self.frame_decoded(f, decode(f.linktype, f.data), Preset::default(), &mut sink);
        sink.flow
    }

    /// `preset`: what a worker computed on the whole datagram, if anything.
    fn frame_decoded<S: Sink + ?Sized>(
        &mut self,
        f: &Frame<'_>,
        decoded: Decoded<'_>,
        preset: Preset<'_>,
        sink: &mut S,
    ) {
        let held = self.budget.used;
        self.budget.frame_start();
        let mut e = PacketEvent::new(f, self.file);
        let snap_cut = f.snaplen_truncated();
        match decoded {
            Decoded::Udp {
                ip,
                src_port,
                dst_port,
                payload,
                truncated,
            } => {
                e.layer = Layer::Udp;
                self.datagram(
                    &mut e,
                    f,
                    ip,
                    (src_port, dst_port),
                    payload,
                    truncated || snap_cut,
                    1,
                    preset,
                    sink,
                );
            }
            Decoded::IpFragment {
                ip,
                protocol,
                payload,
            } => {
                e.kind = Kind::IpPiece;
                e.layer = Layer::IpPiece { protocol };
                e.ip = Some(ip);
                self.ip_pieces += 1;
                let mut done = false;
                if let Some(r) = self.defrag.push(f.ts_ns, &ip, protocol, payload) {
                    if r.protocol == 17 {
                        match udp_from_reassembled(r.ip, &r.data) {
                            Decoded::Udp {
                                ip,
                                src_port,
                                dst_port,
                                payload,
                                truncated,
                            } => {
                                // The layer stays `IpPiece`: this frame carried the last piece.
                                let mut e = e;
                                self.datagram(
                                    &mut e,
                                    f,
                                    ip,
                                    (src_port, dst_port),
                                    payload,
                                    truncated,
                                    r.fragments,
                                    Preset::default(),
                                    sink,
                                );
                                done = true;
                            }
                            _ => e.layer = Layer::RebuiltBadUdp,
                        }
                    } else {
                        e.layer = Layer::RebuiltNotUdp;
                    }
                }
                if self.ip_pieces.is_multiple_of(1024) {
                    self.defrag.expire(f.ts_ns);
                }
                if !done {
                    sink.packet(&e);
                }
            }
            Decoded::Icmp(icmp) => {
                e.kind = Kind::Icmp;
                e.layer = Layer::Icmp(icmp);
                sink.packet(&e);
            }
            Decoded::Other(what) => {
                e.layer = Layer::Other(what);
                sink.packet(&e);
            }
            Decoded::Malformed { layer, ref reason } => {
                e.kind = Kind::BadFrame;
                e.layer = Layer::Malformed { layer, reason };
                e.truncated = snap_cut;
                sink.packet(&e);
            }
            Decoded::UnsupportedLink(t) => {
                e.layer = Layer::UnsupportedLink(t);
                sink.packet(&e);
            }
        }
        if let Some(log) = &mut self.memory_log
            && (self.budget.frame_peak != held || self.budget.used != held)
        {
            log.push(MemoryMark {
                at: (self.file, f.number),
                high: self.budget.frame_peak,
                after: self.budget.used,
            });
        }
    }

    /// The flow's index, tracking it if there is room.
    #[inline]
    fn track(&mut self, packed: PackedFlow, key: impl FnOnce() -> FlowId, frame: u64) -> Option<u32> {
        for (last, i) in self.recent.iter().flatten() {
            if *last == packed {
                return Some(*i);
            }
        }
        if let Some(&i) = self.flow_index.get(&packed) {
            self.recent = [Some((packed, i)), self.recent[0]];
            return Some(i);
        }
        if self.flows.len() >= self.cfg.max_flows {
            return None;
        }
        let i = self.flows.len() as u32;
        self.flow_index.insert(packed, i);
        self.recent = [Some((packed, i)), self.recent[0]];
        self.flows.push(FlowState {
            key: key(),
            seq: SeqTracker::new(self.cfg.sequence_bits()),
            spaces: Vec::new(),
            frags: FlowReassembly::default(),
            first_frame: frame,
            streams: None,
            messages: None,
            runs: None,
        });
        Some(i)
    }

    #[allow(clippy::too_many_arguments)]
    fn datagram<'a, S: Sink + ?Sized>(
        &mut self,
        e: &mut PacketEvent<'a>,
        f: &Frame<'_>,
        ip: IpInfo,
        (sport, dport): (u16, u16),
        payload: &'a [u8],
        truncated: bool,
        ip_fragments: u32,
        preset: Preset<'_>,
        sink: &mut S,
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
            sink.packet(e);
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
            sink.packet(e);
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
        if let Some(st) = self.stack.as_deref_mut() {
            st.begin();
            if v.status == Status::Ok {
                let o = st.carry(
                    f,
                    self.file,
                    ip,
                    (sport, dport),
                    payload,
                    (v.sequence, v.packet_type),
                    e.flow_index,
                    preset.opened.filter(|_| ip_fragments <= 1),
                );
                if let (s, Some(kind)) = layers::status_after(o, e.status) {
                    e.status = s;
                    e.fault = Some(kind);
                    if record && kind == crate::dissect::FaultKind::Mac {
                        self.validator.dissection.fault = Some(layers::mac_fault(payload.len()));
                    }
                }
            }
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
        let flow = &mut self.flows[index as usize];
        let fragment = v.fragment.is_some();
        let program = self.cfg.program.as_deref();
        let space = match program {
            Some(p) if !fragment => p.space_of(ptype),
            _ => 0,
        };
        let bits = self.cfg.sequence_bits();
        e.seq_event = match (space, program.and_then(|p| p.spaces.get(space as usize))) {
            (0, _) | (_, None) => Some(flow.seq.observe(sequence, fragment)),
            (s, Some(def)) if def.per_sender => {
                let src = SocketAddr::new(ip.src, sport);
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
        };
        let Some(frag) = v.fragment else {
            self.show(sink, e, record, fresh);
            self.emit_completed(sink, e, record);
            return;
        };
        let data = payload
            .get(frag.data_offset..frag.data_offset + frag.data_len)
            .unwrap_or(&[]);
        let input = FragmentIn {
            // Reassembly buffers are indexed by the low 16 bits, as the articles'.
            sequence: sequence as u16,
            id: frag.id,
            count: frag.count,
            frame: f.number,
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
        e.opens = flow.frags.opened;
        while self.budget.used > self.budget.limit {
            if !flow.frags.evict_oldest(&mut self.budget) {
                break;
            }
        }
        if self.budget.used > self.budget.limit {
            self.evict_elsewhere();
        }
        let Outcome::Complete { count } = outcome else {
            self.show(sink, e, record, fresh);
            return;
        };
        e.completes = Some(count);
        self.show(sink, e, record, fresh);
        // The packet itself, validated and dissected like any other — by a worker, when
        // one joined these very bytes and no field tree is wanted.
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
        sink.packet(&whole);
    }

    /// The message streams a definition declares (none without one).
    fn stream_defs(&self) -> &[crate::dissect::program::StreamDef] {
        self.cfg.program.as_ref().map_or(&[], |p| &p.params.streams)
    }

    /// Counts the sequences of the datagram's messages in their streams.
    fn observe_streams(&mut self, index: u32) {
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
    fn converse(&mut self, v: &mut Verdict, key: conversation::ConversationKey, payload: &[u8]) {
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
