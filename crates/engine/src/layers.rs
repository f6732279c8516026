//! Protocols inside protocols: a layer's field (`dissect-as="NAME"`, or with several
//! `-d` a layer's `rest` fields) is a datagram of the next definition, analyzed by an
//! engine of its own — its own flows, sequences, acks, reassembly and faults — and
//! counted into that layer's statistics. An encrypted layer (`encryption …`) is
//! decrypted first, with the keys the run was given, and read with its plaintext view.

use super::carried::{Carried, Recorder};
use super::{Engine, Flow, FlowId, Layer, Needs, PacketEvent, Preset, Sink, SinkError, Status, Watch};
use gpcap_decrypt::ahead::{Opened, Opener};
use gpcap_decrypt::keys::Secrets;
use gpcap_decrypt::{Decryptor, Outcome};
use gpcap_dissect::program::{Kind as FieldKind, NodeId, Role};
use gpcap_dissect::{Dissection, Dissector, Fault, FaultKind, Program, Value};
use gpcap_wire::capture::Frame;
use gpcap_wire::decode::IpInfo;
use std::sync::Arc;

/// What a run stacks on its outermost definition.
#[derive(Debug, Clone, Default)]
pub struct Stack {
    /// Keys for an encrypted outermost layer.
    pub secrets: Option<Arc<Secrets>>,
    /// Show decrypted keys in field trees (hidden otherwise).
    pub show_keys: bool,
    /// Definitions inside the outermost, outermost first (`-d A -d B -d C`: B, C).
    pub layers: Vec<Arc<Program>>,
}

impl Stack {
    /// Anything to do: keys or inner layers.
    pub fn active(&self) -> bool {
        self.secrets.is_some() || !self.layers.is_empty()
    }
}

/// The program whose names a recorded tree is read with: with keys, the decrypted view
/// (a superset: the encrypted view's fields keep their ids in it).
pub fn shown_program(cfg: &super::Config) -> Option<Arc<Program>> {
    let p = cfg.program.as_ref()?;
    let keyed = cfg.stack.as_ref().is_some_and(|s| s.secrets.is_some());
    match &p.params.plaintext {
        Some(v) if keyed => Some(v.clone()),
        _ => Some(p.clone()),
    }
}

/// What counts an inner layer's packets: a sink the engine keeps for each layer and
/// hands back in [`Summary::layers`](super::Summary) (the statistics behind the report's
/// `layers`, made by [`Sink::needs`]). Any cloneable sink is one.
pub trait LayerSink: Sink + Send {
    fn clone_box(&self) -> Box<dyn LayerSink>;
    /// The sink itself, for its maker to take back.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

impl<T: Sink + Clone + Send + 'static> LayerSink for T {
    fn clone_box(&self) -> Box<dyn LayerSink> {
        Box::new(self.clone())
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

impl Clone for Box<dyn LayerSink> {
    fn clone(&self) -> Self {
        (**self).clone_box()
    }
}

/// Makes the sink of an inner layer from the layer's config.
pub type MakeLayerSink = fn(&super::Config) -> Box<dyn LayerSink>;

/// An inner layer's packets counted by nothing (no sink asked for them).
#[derive(Clone, Copy)]
struct Uncounted;

impl Sink for Uncounted {
    #[inline(always)]
    fn packet(&mut self, _: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        Ok(Flow::Continue)
    }
}

/// An inner layer's engine and what counts its packets.
#[derive(Clone)]
pub struct Inner {
    pub name: String,
    program: Arc<Program>,
    engine: Box<Engine>,
    stats: Box<dyn LayerSink>,
}

/// The stack's state in one engine.
#[derive(Clone)]
pub struct StackState {
    decryptor: Option<Decryptor>,
    /// Reads decrypted datagrams (the plaintext view), or the layer's own datagrams to
    /// find the fields inner layers read; records fields.
    reader: Option<Dissector>,
    /// Fields whose bytes go to an inner layer: (node, index in `inner`).
    targets: Vec<(NodeId, usize)>,
    inner: Vec<Inner>,
    show_keys: bool,
    /// The last datagram's plaintext (header, then body) and its field tree.
    plain: Vec<u8>,
    tree: Dissection,
    /// The last datagram was decrypted (its plaintext is what a recorded tree reads).
    pub decrypted: bool,
    /// The engine records field trees: a decrypted datagram's is read even when no
    /// inner layer needs it, and what inner layers read is kept in `carried`.
    record: bool,
    /// What inner layers read in the last packet carried (recording only).
    carried: Vec<Carried>,
}

impl StackState {
    /// The state for `program` with `stack`; `None` when there is nothing to do.
    /// Inner layers work within `limits`' budgets and flow table, the outermost layer's
    /// (a shard's share of them when sharded: each inner engine held a whole flow table
    /// and flow state budget per shard).
    pub fn new(
        program: Option<&Arc<Program>>,
        stack: &Stack,
        limits: &super::Config,
        needs: Needs,
    ) -> Option<Self> {
        let record = needs.fields;
        let program = program?;
        let decryptor = match (&program.params.encryption, &stack.secrets) {
            (Some(_), Some(s)) => {
                let id = program.params.protocol_id.map_or(0, |p| p.value);
                gpcap_decrypt::decryptor(s.clone(), id).map(|mut d| {
                    d.protocol_id_from_requests(limits.protocol_id_taken);
                    d
                })
            }
            _ => None,
        };
        let view = match (&decryptor, &program.params.plaintext) {
            (Some(_), Some(p)) => p.clone(),
            (Some(_), None) => program.clone(),
            (None, _) if program.params.encryption.is_some() => {
                // Encrypted bodies without keys: nothing inside can be read.
                return None;
            }
            (None, _) => program.clone(),
        };
        let mut inner: Vec<Inner> = Vec::new();
        let mut targets = Vec::new();
        let layer_for = |at: usize, inner: &mut Vec<Inner>| -> usize {
            let p = &stack.layers[at];
            if let Some(i) = inner.iter().position(|x| x.name == p.params.name) {
                return i;
            }
            let mut cfg = super::Config::from_program(p.clone());
            cfg.any_port = true;
            cfg.reassembly_budget = limits.reassembly_budget;
            cfg.flow_state_budget = limits.flow_state_budget;
            cfg.max_flows = limits.max_flows;
            cfg.max_streams = limits.max_streams;
            // Not datagrams on the wire: no MTU to exceed.
            cfg.format.mtu_budget = u32::MAX;
            cfg.stack = Some(Arc::new(Stack {
                secrets: None,
                show_keys: stack.show_keys,
                // Every other layer stays reachable from inside this one, in order.
                layers: (stack.layers.iter().enumerate())
                    .filter(|(i, _)| *i != at)
                    .map(|(_, l)| l.clone())
                    .collect(),
            }));
            inner.push(Inner {
                name: p.params.name.clone(),
                program: p.clone(),
                // Recording: what each layer reads is shown and filtered on.
                engine: Box::new(Engine::with_needs(cfg.clone(), needs)),
                stats: needs
                    .layers
                    .map_or_else(|| Box::new(Uncounted) as Box<dyn LayerSink>, |m| m(&cfg)),
            });
            inner.len() - 1
        };
        for (node, at) in carried_fields(&view, stack) {
            targets.push((node, layer_for(at, &mut inner)));
        }
        if decryptor.is_none() && targets.is_empty() {
            return None;
        }
        let mut decryptor = decryptor;
        if let Some(d) = &mut decryptor {
            d.read_plaintext(reads_plaintext(record, &targets));
        }
        Some(StackState {
            decryptor,
            reader: Some(Dissector::new(view)),
            targets,
            inner,
            show_keys: stack.show_keys,
            plain: Vec::new(),
            tree: Dissection::default(),
            decrypted: false,
            record,
            carried: Vec::new(),
        })
    }

    /// A valid datagram (or reassembled packet) of this layer: decrypts it when the layer
    /// is encrypted, then hands the fields inner layers read to their engines. Returns
    /// what decryption made of it.
    #[allow(clippy::too_many_arguments)]
    pub fn carry(
        &mut self,
        f: &Frame<'_>,
        file: u32,
        ip: IpInfo,
        ports: (u16, u16),
        bytes: &[u8],
        (sequence, ptype): (Option<u64>, Option<u32>),
        index: Option<u32>,
        ahead: Option<(&Opened, &[u8])>,
    ) -> Outcome {
        self.begin();
        let outcome = match (&mut self.decryptor, sequence, ptype) {
            (Some(d), Some(seq), Some(t)) => {
                let flow = FlowId {
                    src: std::net::SocketAddr::new(ip.src, ports.0),
                    dst: std::net::SocketAddr::new(ip.dst, ports.1),
                };
                d.datagram(flow, index, seq, t, bytes, &mut self.plain, ahead)
            }
            (Some(_), _, _) => Outcome::NoKey,
            (None, _, _) => Outcome::Clear,
        };
        let data: &[u8] = match outcome {
            Outcome::Decrypted | Outcome::Replayed => {
                self.decrypted = true;
                &self.plain
            }
            Outcome::Clear if self.decryptor.is_none() => bytes,
            _ => return outcome,
        };
        // A replay is shown as it reads, but its inner layers had it the first time.
        let feed = outcome != Outcome::Replayed;
        let wanted = self.record || (feed && !self.targets.is_empty());
        let Some(reader) = self.reader.as_mut().filter(|_| wanted) else {
            return outcome;
        };
        reader.dissect_into(data, &mut self.tree);
        if !self.show_keys && self.decrypted {
            hide_keys(reader.program(), &mut self.tree, &mut self.plain);
        }
        if !feed {
            self.tree.fault = Some(replay_fault(reader.program(), &self.tree));
        }
        let data: &[u8] = if self.decrypted { &self.plain } else { bytes };
        for fi in (0..self.tree.fields.len()).filter(|_| feed) {
            let fd = self.tree.fields[fi];
            let Some(&(_, layer)) = self.targets.iter().find(|(n, _)| *n == fd.node) else {
                continue;
            };
            let (a, b) = (
                (fd.bit_offset / 8) as usize,
                ((fd.bit_offset + fd.bit_len) / 8) as usize,
            );
            let Some(inner_bytes) = data.get(a..b) else {
                continue;
            };
            let x = &mut self.inner[layer];
            let mut e = PacketEvent::new(f, file);
            e.layer = Layer::Udp;
            let (b, p) = (inner_bytes, Preset::default());
            // An inner layer's counting never stops the outer run: what it writes is
            // the outer sink's to say (an export's layers are part of its own failure).
            if !self.record {
                let mut sink = Watch::new(&mut x.stats);
                x.engine.datagram(&mut e, f, ip, ports, b, false, 1, p, &mut sink);
                debug_assert!(
                    sink.outcome().is_ok(),
                    "an inner layer's sink counts; it does not fail"
                );
                continue;
            }
            let mut rec = Recorder {
                out: &mut self.carried,
                layer: &x.program,
                carrier: (fd.node, fd.bit_offset),
                at: a as u64 * 8,
            };
            // The recorder first: what the layer carried is kept whatever its counting says.
            let mut both = (&mut rec, &mut x.stats);
            let mut sink = Watch::new(&mut both);
            x.engine.datagram(&mut e, f, ip, ports, b, false, 1, p, &mut sink);
            debug_assert!(
                sink.outcome().is_ok(),
                "an inner layer's sink counts; it does not fail"
            );
        }
        outcome
    }

    /// A new outer packet: nothing decrypted or carried yet.
    pub fn begin(&mut self) {
        self.decrypted = false;
        self.carried.clear();
    }

    /// What inner layers read in the last packet carried (empty unless recording).
    pub fn carried(&self) -> &[Carried] {
        &self.carried
    }

    /// The last datagram's plaintext and tree, when it was decrypted.
    pub fn shown(&self) -> Option<(&[u8], &Dissection)> {
        self.decrypted.then_some((&self.plain[..], &self.tree))
    }

    /// Ends the inner layers: their statistics, innermost after their outer layer.
    pub fn finish(self) -> (Option<gpcap_decrypt::Report>, Vec<LayerStats>) {
        let mut layers = Vec::new();
        for x in self.inner {
            let mut stats = x.stats;
            x.engine.finish(&mut stats);
            layers.push(LayerStats(x.name, stats));
        }
        (self.decryptor.map(|d| d.finish()), layers)
    }
}

/// The fields of `view` whose bytes go to an inner layer, each with the index in
/// `stack.layers` of the definition that reads them: the fields named by
/// `dissect-as`, or else every plain `rest` field, read by the next layer.
fn carried_fields(view: &Program, stack: &Stack) -> Vec<(NodeId, usize)> {
    let mut fields = Vec::new();
    for (node, name) in &view.params.dissect_as {
        if let Some(at) = stack.layers.iter().position(|l| l.params.name == *name) {
            fields.push((*node, at));
        }
    }
    if view.params.dissect_as.is_empty() && !stack.layers.is_empty() {
        for (i, n) in view.nodes.iter().enumerate() {
            if matches!(n.kind, FieldKind::Rest { .. }) && n.role.is_none() {
                fields.push((i as NodeId, 0));
            }
        }
    }
    fields
}

/// Whether a decrypted packet's plaintext is read: by a recorded field tree, or by an
/// inner layer. Otherwise (`analyze` of the encrypted layer alone) only the verdict
/// counts, and checking the MAC gives it.
fn reads_plaintext<T>(record: bool, carried: &[T]) -> bool {
    record || !carried.is_empty()
}

/// What opens `cfg`'s sealed packets ahead of the ordered stage: the key log's ciphers
/// when the outermost layer is encrypted and keys were given with a key log (the
/// ordered stage's decryptor is made on the same conditions, with the same protocol id),
/// decrypting the bodies when an engine with `needs` would read them. An engine that
/// reads them takes only what was decrypted, and opens the rest itself.
pub fn opener(cfg: &super::Config, needs: Needs) -> Option<Opener> {
    let p = cfg.program.as_ref()?;
    let stack = cfg.stack.as_ref()?;
    let secrets = stack.secrets.as_ref()?;
    p.params.encryption.as_ref()?;
    let view = p.params.plaintext.as_ref().unwrap_or(p);
    let read = reads_plaintext(needs.fields, &carried_fields(view, stack));
    Opener::new(secrets, p.params.protocol_id.map_or(0, |p| p.value), read)
}

impl super::Prepared {
    /// Opens the frame's datagram with `opener` when a worker validated it whole and it
    /// reads as a sealed packet, as [`StackState::carry`] would (the plaintext appended
    /// to `plain`, the batch's).
    pub fn open_ahead(&mut self, f: &Frame<'_>, opener: &Opener, plain: &mut Vec<u8>) {
        let (Some(u), Some(v)) = (&self.udp, &self.verdict) else {
            return;
        };
        let (Status::Ok, Some(sequence), Some(ptype)) = (v.status, v.sequence, v.packet_type) else {
            return;
        };
        let Some(payload) = f.data.get(u.start as usize..(u.start + u.len) as usize) else {
            return;
        };
        let flow = (
            std::net::SocketAddr::new(u.ip.src, u.ports.0),
            std::net::SocketAddr::new(u.ip.dst, u.ports.1),
        );
        self.opened = opener.open(flow, sequence, ptype, payload, plain);
    }
}

/// Decrypted keys are not shown unless asked (`--show-keys`): a field named `…_key` of
/// a decrypted datagram loses its value, and its bytes are zeroed in the plaintext.
fn hide_keys(p: &Program, tree: &mut Dissection, plain: &mut [u8]) {
    for f in &mut tree.fields {
        let Some(n) = p.nodes.get(f.node as usize) else {
            continue;
        };
        if n.name.ends_with("_key")
            && let Value::Bytes { offset, len } = f.value
        {
            if let Some(b) = plain.get_mut(offset..offset + len) {
                b.fill(0);
            }
            f.value = Value::None;
        }
    }
}

/// The fault a MAC failure leaves in a recorded tree.
pub fn mac_fault(len: usize) -> Fault {
    Fault {
        kind: FaultKind::Mac,
        field: "mac".into(),
        bit: (len.saturating_sub(gpcap_decrypt::netcode::MAC) * 8) as u64,
        reason: "the MAC does not match under this connection's key (a wrong key, tampering, or a packet of another connection)"
            .into(),
    }
}

/// The fault a replay leaves in a recorded tree: at the sequence, which is what it repeats.
fn replay_fault(p: &Program, tree: &Dissection) -> Fault {
    let at = (tree.fields.iter()).find(|f| {
        p.nodes
            .get(f.node as usize)
            .is_some_and(|n| n.role == Some(Role::Sequence))
    });
    Fault {
        kind: FaultKind::Replayed,
        field: "sequence".into(),
        bit: at.map_or(8, |f| f.bit_offset),
        reason: "a replay: this direction of the connection received this sequence already, or it is 256 or more older than the newest (netcode 1.02's replay protection drops it)".into(),
    }
}

/// An inner layer's sink (what [`Needs::layers`] made), by the layer's name.
#[derive(Clone)]
pub struct LayerStats(pub String, pub Box<dyn LayerSink>);

impl std::fmt::Debug for LayerStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LayerStats({})", self.0)
    }
}

/// Status of an outer datagram after decryption: a MAC failure is malformed.
pub fn status_after(o: Outcome, s: Status) -> (Status, Option<FaultKind>) {
    match o {
        Outcome::MacFailure => (Status::Malformed, Some(FaultKind::Mac)),
        Outcome::Replayed => (Status::Malformed, Some(FaultKind::Replayed)),
        _ => (s, None),
    }
}
