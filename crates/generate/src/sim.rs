//! The session and network simulator behind `gpcap gen`: game flows at game rates,
//! game-level fragmentation by the definition's profile, and a network that loses
//! (independently or in Gilbert–Elliott bursts), duplicates, reorders, delays, corrupts,
//! fragments at the IP layer or answers don't-fragment datagrams with ICMP, and carries
//! foreign traffic — deterministic for a seed. Alongside the frames it computes the
//! ground truth: what each sender sent, what the network did, and the totals an analyzer
//! must report.

use super::net::{self, Link};
use super::packet::{GenError, PacketWriter};
use super::rng::Rng;
use gpcap_dissect::Program;
use gpcap_wire::validate::AttackCounters;
use gpcap_wire::validate::{FRAGMENT_TYPE, ProtocolId, write_crc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

mod oracle;
mod setup;
use oracle::*;
use setup::*;

/// Gilbert–Elliott burst loss: the chance to enter the bad state, to leave it, and the
/// loss rate while in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    pub enter: f64,
    pub exit: f64,
    pub loss: f64,
}

#[derive(Debug, Clone)]
pub struct SimConfig {
    pub seed: u64,
    pub duration_s: f64,
    /// Stop after this many game packets (all flows), if given.
    pub packets: Option<u64>,
    /// Server send rate; clients send at half of it.
    pub rate_hz: f64,
    pub clients: u32,
    pub loss: f64,
    pub burst: Option<Burst>,
    pub dup: f64,
    pub reorder: f64,
    pub jitter_ms: f64,
    pub corrupt: f64,
    pub link_mtu: u32,
    /// Send with don't-fragment: oversize datagrams are dropped and answered by ICMP.
    pub df: bool,
    /// The sender ignores the MTU budget: no game-level fragmentation.
    pub no_fragment: bool,
    /// Foreign datagrams per game datagram.
    pub foreign: f64,
    pub ipv6: bool,
    pub link: Link,
    /// Chance that a packet is large (many array elements).
    pub big: f64,
    /// Add a flow that breaks each rule of fragment reassembly.
    pub attacks: bool,
    /// Chance that a whole (unfragmented) packet is sent cut short inside its end check,
    /// with a valid CRC: a malformed packet (past end). Needs an end check.
    pub malformed: f64,
    /// Seal every packet as the definition's `encryption` says, with keys drawn from the
    /// seed (in the truth's `keys`).
    pub encrypt: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            duration_s: 10.0,
            packets: None,
            rate_hz: 60.0,
            clients: 1,
            loss: 0.0,
            burst: None,
            dup: 0.0,
            reorder: 0.0,
            jitter_ms: 0.0,
            corrupt: 0.0,
            link_mtu: 1500,
            df: false,
            no_fragment: false,
            foreign: 0.0,
            ipv6: false,
            link: Link::Ethernet { vlan: None },
            big: 0.05,
            attacks: false,
            malformed: 0.0,
            encrypt: false,
        }
    }
}

/// What one game datagram went through.
#[derive(Debug, Clone, Serialize)]
pub struct SendEvent {
    pub event: &'static str,
    pub t_ns: i64,
    pub flow: String,
    pub sequence: u64,
    #[serde(rename = "type")]
    pub packet_type: u32,
    /// Size of the whole game packet.
    pub size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragment: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragments: Option<u32>,
    pub udp_payload: usize,
    pub lost: bool,
    pub duplicated: bool,
    pub corrupted: bool,
    pub ip_fragments: usize,
    pub icmp: bool,
}

/// The totals `gpcap analyze` must report for one flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowTruth {
    pub datagrams: u64,
    pub crc_ok: u64,
    pub crc_fail: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub late: u64,
    pub fragments: u64,
    pub ip_fragmented: u64,
    /// Intact datagrams whose body is malformed.
    pub malformed: u64,
    /// Fragment count → (packets seen, completed).
    pub reassembly: BTreeMap<u32, (u64, u64)>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Truth {
    pub event: String,
    pub seed: u64,
    pub protocol_id: Option<ProtocolId>,
    pub frames: u64,
    pub datagrams_sent: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub icmp: u64,
    /// Foreign datagrams on other ports (DNS-like).
    pub other_udp: u64,
    pub flows: BTreeMap<String, FlowTruth>,
    /// The fragment rules the attack flow breaks, and how often (only the rule
    /// counters; give-ups are not predicted).
    pub attacks: Option<AttackCounters>,
    /// Intact copies of a fragment already received (network duplicates), which the
    /// analyzer counts with the duplicate-fragment attack.
    pub fragment_duplicates: u64,
    /// Each connection's keys, when the traffic was sealed (`encrypt`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<super::encrypt::KeyTruth>,
}

/// One frame for the capture; the heap pops the earliest delivery first.
struct Out {
    t_ns: i64,
    order: u64,
    frame: Vec<u8>,
    /// The datagram this frame carries a piece of (game traffic only).
    datagram: Option<usize>,
}

impl PartialEq for Out {
    fn eq(&self, o: &Self) -> bool {
        (self.t_ns, self.order) == (o.t_ns, o.order)
    }
}
impl Eq for Out {}
impl PartialOrd for Out {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Out {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.t_ns, o.order).cmp(&(self.t_ns, self.order))
    }
}

/// What the simulation hands out as it goes: frames in capture order, send events in
/// send order.
pub enum Emit<'a> {
    Frame { t_ns: i64, data: &'a [u8] },
    Event(&'a SendEvent),
}

/// A game datagram as delivered, for the oracle.
#[derive(Clone, Copy)]
struct Delivered {
    flow: usize,
    /// The sequence space its sequence came from (the oracle follows space 0, the
    /// flow's own counter, which is what the report's flow rows show).
    space: u8,
    malformed: bool,
    ext: i64,
    fragment: Option<(u32, u32)>,
    corrupted: bool,
    ip_fragments: usize,
    /// IP pieces still to arrive before the analyzer sees the datagram.
    pieces_left: usize,
}

struct Flow {
    src: SocketAddr,
    dst: SocketAddr,
    interval_ns: i64,
    next_ns: i64,
    ext: i64,
    /// Counters of the flow's other (per-flow) sequence spaces, by space index.
    space_ext: Vec<i64>,
    bad: bool,
    ip_id: u32,
    name: String,
    /// The packet types this side sends (a type declared `from` the other side is not).
    types: Vec<u32>,
}

pub struct Generated {
    pub frames: Vec<(i64, Vec<u8>)>,
    pub events: Vec<SendEvent>,
    pub truth: Truth,
    pub linktype: u32,
}

/// Runs the simulation into memory (small captures and tests).
pub fn simulate(p: &Program, cfg: &SimConfig) -> Result<Generated, GenError> {
    let mut frames = Vec::new();
    let mut events = Vec::new();
    let truth = simulate_into(p, cfg, &mut |e| match e {
        Emit::Frame { t_ns, data } => frames.push((t_ns, data.to_vec())),
        Emit::Event(e) => events.push(e.clone()),
    })?;
    Ok(Generated {
        frames,
        events,
        truth,
        linktype: cfg.link.linktype(),
    })
}

/// What gen cannot write yet, named: several messages per datagram, a checksum declared
/// with `field=`.
fn unwritable(p: &Program) -> Result<(), GenError> {
    if p.messages.is_some() {
        return Err(GenError::Unsupported {
            field: "messages".into(),
            why: "gen does not write several messages per datagram yet",
        });
    }
    if p.params.remaining {
        return Err(GenError::Unsupported {
            field: "remaining".into(),
            why: "gen does not write definitions whose expressions read `remaining` yet",
        });
    }
    if p.params.checksum == gpcap_dissect::program::Checksum::Field {
        return Err(GenError::Unsupported {
            field: "checksum".into(),
            why: "gen writes the articles' checksum only; a checksum declared with field= (and a stand-in learnt in the conversation) is not written yet",
        });
    }
    Ok(())
}

/// Refuses, before anything is written, a definition for which no packet type can carry
/// the counter in its sequence field (a derived sequence gen cannot invert): the traffic
/// would be empty, and a check of it could not fail.
pub fn preflight(p: &Program) -> Result<(), GenError> {
    unwritable(p)?;
    let mut writer = PacketWriter::new(p);
    let mut rng = Rng::new(1);
    let mask = u64::MAX >> (64 - p.sequence_bits.clamp(1, 64));
    let mut first_error = None;
    for ty in writer.types() {
        for seq in [5u64, 0x1234 & mask] {
            match writer.packet(&mut rng, ty, seq) {
                Ok(_) if writer.sequence_written().is_none_or(|s| s as u64 & mask == seq) => return Ok(()),
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let field = p
        .nodes
        .iter()
        .find(|n| n.role == Some(gpcap_dissect::program::Role::Sequence))
        .map_or_else(|| "sequence".to_string(), |n| n.name.clone());
    Err(GenError::Underivable(field))
}

/// Runs the simulation, streaming frames and events to `emit` with bounded memory (the
/// frames of the last delivery horizon are held back to be put in time order), and
/// returns the ground truth.
pub fn simulate_into(p: &Program, cfg: &SimConfig, emit: &mut dyn FnMut(Emit)) -> Result<Truth, GenError> {
    let id = signing_id(p, cfg)?;
    let mut sim = Sim::new(p, cfg, id)?;
    while let Some(fi) = (0..sim.flows.len()).min_by_key(|&i| sim.flows[i].next_ns) {
        let now = sim.flows[fi].next_ns;
        if now > sim.end_ns || cfg.packets.is_some_and(|n| sim.sent_packets >= n) {
            break;
        }
        let horizon = sim.horizon;
        sim.deliver(emit, |t| t < now - horizon);
        sim.send(fi, now, emit)?;
    }
    if cfg.attacks {
        sim.truth.attacks = Some(attacks(
            p,
            &mut sim.writer,
            &mut sim.values,
            cfg,
            sim.server,
            sim.end_ns,
            &mut sim.out,
            &mut sim.order,
        )?);
    }
    sim.deliver(emit, |_| true);
    sim.oracle.finish(&sim.flows, &mut sim.truth);
    Ok(sim.truth)
}

/// One packet being sent: what its datagrams' events and deliveries are told.
struct Sending {
    flow: usize,
    now: i64,
    ty: u32,
    space: u8,
    ext: i64,
    seq: u64,
    /// The packet's size before it was split into fragments.
    size: usize,
}

/// The simulation's state: the flows, the network's queue of frames in flight, and the
/// oracle that follows what the analyzer will see.
struct Sim<'p> {
    p: &'p Program,
    cfg: &'p SimConfig,
    id: Option<ProtocolId>,
    /// The stream the packets' values come from.
    values: Rng,
    /// The stream the network's impairments come from.
    net_rng: Rng,
    writer: PacketWriter<'p>,
    server: SocketAddr,
    router: IpAddr,
    flows: Vec<Flow>,
    sealer: Option<super::encrypt::Sealer>,
    out: std::collections::BinaryHeap<Out>,
    order: u64,
    delivered: HashMap<usize, Delivered>,
    next_datagram: usize,
    oracle: Oracle,
    /// No frame is delivered later than this after its send time.
    horizon: i64,
    truth: Truth,
    end_ns: i64,
    sent_packets: u64,
    max_packet: usize,
    /// Counters of sequence spaces shared by every flow of a sender.
    sender_ext: HashMap<(SocketAddr, u8), i64>,
}

impl<'p> Sim<'p> {
    fn new(p: &'p Program, cfg: &'p SimConfig, id: Option<ProtocolId>) -> Result<Self, GenError> {
        let mut rng = Rng::new(cfg.seed);
        let values = rng.fork(1);
        let net_rng = rng.fork(2);
        let writer = PacketWriter::new(p);
        if p.packets.is_empty() {
            return Err(GenError::UnknownType(1));
        }
        let server = addr(cfg.ipv6, 1, p.params.ports.first().copied().unwrap_or(40000));
        let flows = flows(cfg, &writer, &mut rng, server, p.spaces.len());
        let sealer = sealer(p, cfg, &flows, server)?;
        let max_interval = flows.iter().map(|f| f.interval_ns).max().unwrap_or(0);
        let truth = Truth {
            event: "summary".into(),
            seed: cfg.seed,
            protocol_id: id,
            keys: sealer.as_ref().map(|s| s.keys.clone()).unwrap_or_default(),
            ..Truth::default()
        };
        Ok(Sim {
            p,
            cfg,
            id,
            values,
            net_rng,
            max_packet: writer.max_packet(cfg.no_fragment),
            writer,
            server,
            router: addr(cfg.ipv6, 0xfe, 0).ip(),
            oracle: Oracle::new(flows.len()),
            flows,
            sealer,
            out: std::collections::BinaryHeap::new(),
            order: 0,
            delivered: HashMap::new(),
            next_datagram: 0,
            horizon: 20_000_000 + (cfg.jitter_ms * 1e6) as i64 + 3 * max_interval + 10_000_000,
            truth,
            end_ns: EPOCH_NS + (cfg.duration_s * 1e9) as i64,
            sent_packets: 0,
            sender_ext: HashMap::new(),
        })
    }

    /// Hands the queued frames due by `due` (their delivery time) to the oracle and
    /// `emit`, earliest first.
    fn deliver(&mut self, emit: &mut dyn FnMut(Emit), due: impl Fn(i64) -> bool) {
        while self.out.peek().is_some_and(|o| due(o.t_ns)) {
            if let Some(o) = self.out.pop() {
                self.oracle
                    .frame(&o, &self.flows, &mut self.delivered, &mut self.truth);
                emit(Emit::Frame {
                    t_ns: o.t_ns,
                    data: &o.frame,
                });
            }
        }
    }

    fn queue(&mut self, t_ns: i64, frame: Vec<u8>, datagram: Option<usize>) {
        self.out.push(Out {
            t_ns,
            order: self.order,
            frame,
            datagram,
        });
        self.order += 1;
    }

    /// The flow `fi`'s turn at `now`: one packet of one of its types, written, sealed,
    /// split and sent through the network.
    fn send(&mut self, fi: usize, now: i64, emit: &mut dyn FnMut(Emit)) -> Result<(), GenError> {
        let (p, cfg) = (self.p, self.cfg);
        self.flows[fi].next_ns += self.flows[fi].interval_ns;
        self.sent_packets += 1;
        let types = &self.flows[fi].types;
        if types.is_empty() {
            self.flows[fi].next_ns = i64::MAX;
            self.sent_packets -= 1;
            return Ok(());
        }
        let ty = types[self.values.below(types.len() as u64) as usize];
        let space = p.space_of(ty);
        let ext = self.next_sequence(fi, space);
        // The counter at the sequence field's width (it wraps at 16 bits in the
        // articles, and crosses into a third byte in netcode's).
        let mask = u64::MAX >> (64 - p.sequence_bits.clamp(1, 64));
        let seq = ext as u64 & mask;
        let scale = self.scale();
        let mut packet = self
            .writer
            .packet_within(&mut self.values, ty, seq, scale, self.max_packet)?;
        if self
            .writer
            .sequence_written()
            .is_some_and(|s| s as u64 & mask != seq)
        {
            self.withdraw(fi, ty, space);
            return Ok(());
        }
        if let Some(s) = &self.sealer {
            s.seal(self.flows[fi].src, self.flows[fi].dst, seq, &mut packet);
        }
        if packet.len() > self.max_packet {
            return Ok(());
        }
        let datagrams = self.datagrams_of(seq, &packet)?;
        let base_delay = 20_000_000 + (self.net_rng.unit() * cfg.jitter_ms * 1e6) as i64;
        let sending = Sending {
            flow: fi,
            now,
            ty,
            space,
            ext,
            seq,
            size: packet.len(),
        };
        for (k, (payload, frag)) in datagrams.into_iter().enumerate() {
            let t0 = now + base_delay + k as i64 * 10_000;
            self.transmit(&sending, t0, payload, frag, emit)?;
        }
        Ok(())
    }

    /// Takes the next value of the type's counter: the flow's own, another of the
    /// flow's, or one shared by every flow of the sender.
    fn next_sequence(&mut self, fi: usize, space: u8) -> i64 {
        let counter = self.counter(fi, space);
        let ext = *counter;
        *counter += 1;
        ext
    }

    fn counter(&mut self, fi: usize, space: u8) -> &mut i64 {
        match self.p.spaces.get(space as usize) {
            Some(def) if space > 0 && def.per_sender => {
                let start = self.flows[fi].ext;
                self.sender_ext
                    .entry((self.flows[fi].src, space))
                    .or_insert(start)
            }
            Some(_) if space > 0 => &mut self.flows[fi].space_ext[space as usize],
            _ => &mut self.flows[fi].ext,
        }
    }

    /// The type's sequence is not the counter (netcode's request derives 0): its
    /// sequences cannot be predicted, so this side stops sending it, and its turn is
    /// given back.
    fn withdraw(&mut self, fi: usize, ty: u32, space: u8) {
        self.flows[fi].types.retain(|&t| t != ty);
        let per_sender = self.p.spaces.get(space as usize).map(|d| d.per_sender);
        match per_sender {
            Some(true) if space > 0 => {
                if let Some(c) = self.sender_ext.get_mut(&(self.flows[fi].src, space)) {
                    *c -= 1;
                }
            }
            Some(_) if space > 0 => self.flows[fi].space_ext[space as usize] -= 1,
            _ => self.flows[fi].ext -= 1,
        }
        self.sent_packets -= 1;
        self.flows[fi].next_ns -= self.flows[fi].interval_ns;
    }

    /// How large the packet's variable parts are: mostly small, some medium, a share
    /// (`--big`) large enough to fragment.
    fn scale(&mut self) -> u64 {
        if self.values.chance(self.cfg.big) {
            self.values.range(200, 800) as u64
        } else if self.values.chance(0.3) {
            self.values.range(12, 64) as u64
        } else {
            self.values.range(0, 12) as u64
        }
    }

    /// The packet as datagrams: its fragments, or itself whole (cut inside its end
    /// check now and then, for `--malformed`).
    fn datagrams_of(&mut self, seq: u64, packet: &[u8]) -> Result<Vec<super::packet::Datagram>, GenError> {
        if self.writer.splits(packet, self.cfg.no_fragment) {
            return self.writer.fragments_of(&mut self.values, seq, packet);
        }
        let mut whole = packet.to_vec();
        if self.p.params.end_check.is_some() && packet.len() > 8 && self.values.chance(self.cfg.malformed) {
            // Cut inside the end check and sign it again: valid CRC, malformed body.
            whole.truncate(packet.len() - self.values.range(1, 3) as usize);
            if let Some(id) = self.id {
                write_crc(id, &mut whole);
            }
        }
        Ok(vec![(whole, None)])
    }

    /// One datagram through the network: corrupted, duplicated, reordered, split into
    /// IP fragments, lost or refused by the router as the configuration says, with the
    /// foreign traffic that rides along.
    fn transmit(
        &mut self,
        s: &Sending,
        t0: i64,
        mut payload: Vec<u8>,
        frag: Option<(u32, u32)>,
        emit: &mut dyn FnMut(Emit),
    ) -> Result<(), GenError> {
        let cfg = self.cfg;
        self.truth.datagrams_sent += 1;
        let corrupted = self.net_rng.chance(cfg.corrupt);
        if corrupted {
            let bit = self.net_rng.below(payload.len() as u64 * 8);
            payload[(bit / 8) as usize] ^= 1 << (bit % 8);
            self.truth.corrupted += 1;
        }
        let duplicated = self.net_rng.chance(cfg.dup);
        let f = &mut self.flows[s.flow];
        let reorder = if self.net_rng.chance(cfg.reorder) {
            f.interval_ns * self.net_rng.range(1, 3)
        } else {
            0
        };
        let t0 = t0 + reorder;
        f.ip_id = f.ip_id.wrapping_add(1);
        let pieces = net::ip_packets(f.src, f.dst, &payload, f.ip_id, cfg.df, cfg.link_mtu as usize);
        let mut event = SendEvent {
            event: "send",
            t_ns: s.now,
            flow: f.name.clone(),
            sequence: s.seq,
            packet_type: if frag.is_some() { FRAGMENT_TYPE } else { s.ty },
            size: s.size,
            fragment: frag.map(|x| x.0),
            fragments: frag.map(|x| x.1),
            udp_payload: payload.len(),
            lost: false,
            duplicated,
            corrupted,
            ip_fragments: pieces.len(),
            icmp: false,
        };
        if pieces.len() == 1 && pieces[0].len() > cfg.link_mtu as usize {
            self.refuse(s, &pieces[0], &mut event);
            emit(Emit::Event(&event));
            return Ok(());
        }
        let lost: Vec<bool> = pieces.iter().map(|_| self.lost_net(s.flow)).collect();
        let whole = !lost.iter().any(|&l| l);
        event.lost = !whole;
        if !whole {
            self.truth.lost += 1;
        }
        let copies = if duplicated && whole { 2 } else { 1 };
        if duplicated && whole {
            self.truth.duplicated += 1;
        }
        let d = Delivered {
            flow: s.flow,
            space: s.space,
            malformed: frag.is_none() && payload.len() < s.size,
            ext: s.ext,
            fragment: frag,
            corrupted,
            ip_fragments: pieces.len(),
            pieces_left: pieces.len(),
        };
        for copy in 0..copies {
            self.queue_copy(t0 + copy * 1_000_000, &pieces, &lost, whole.then_some(&d));
        }
        emit(Emit::Event(&event));
        self.foreign(s)
    }

    /// A datagram over the link MTU that may not be fragmented: the router drops it
    /// and says why.
    fn refuse(&mut self, s: &Sending, piece: &[u8], event: &mut SendEvent) {
        event.lost = true;
        event.icmp = true;
        self.truth.icmp += 1;
        self.truth.lost += 1;
        let icmp = net::icmp_too_big(self.router, piece, self.flows[s.flow].src.ip(), self.cfg.link_mtu);
        let frame = self.cfg.link.frame(&icmp, self.cfg.ipv6);
        self.queue(s.now + 5_000_000, frame, None);
    }

    /// Whether the network loses one IP piece of the flow's: the burst model's state
    /// moves on, then the loss of the state it is in (or `--loss`).
    fn lost_net(&mut self, fi: usize) -> bool {
        let (cfg, f, r) = (self.cfg, &mut self.flows[fi], &mut self.net_rng);
        if let Some(b) = cfg.burst {
            f.bad = if f.bad {
                !r.chance(b.exit)
            } else {
                r.chance(b.enter)
            };
            if f.bad {
                return r.chance(b.loss);
            }
        }
        r.chance(cfg.loss)
    }

    /// One copy of a datagram's IP pieces, those not lost, queued from `t`; a datagram
    /// that arrives whole is numbered for the oracle.
    fn queue_copy(&mut self, t: i64, pieces: &[Vec<u8>], lost: &[bool], whole: Option<&Delivered>) {
        let d = whole.map(|d| {
            self.next_datagram += 1;
            self.delivered.insert(self.next_datagram, *d);
            self.next_datagram
        });
        for (i, piece) in pieces.iter().enumerate() {
            if lost[i] {
                continue;
            }
            let frame = self.cfg.link.frame(piece, self.cfg.ipv6);
            self.queue(t + i as i64 * 1_000, frame, d);
        }
    }

    /// Foreign traffic riding along a game datagram: a DNS query now and then, and
    /// another protocol id on the game's ports (a protocol without a checksum has no id
    /// to differ by).
    fn foreign(&mut self, s: &Sending) -> Result<(), GenError> {
        let cfg = self.cfg;
        if self.net_rng.chance(cfg.foreign) {
            let f = &self.flows[s.flow];
            let client = if f.src == self.server { f.dst } else { f.src };
            let dns = addr(cfg.ipv6, 0x35, 53);
            let q: Vec<u8> = (0..self.net_rng.range(28, 60))
                .map(|_| self.net_rng.next_u32() as u8)
                .collect();
            // An ephemeral port below any game port of the shipped definitions.
            let from = SocketAddr::new(client.ip(), 33000 + self.net_rng.below(6000) as u16);
            let pkt = &net::ip_packets(from, dns, &q, 0, false, 65535)[0];
            let frame = cfg.link.frame(pkt, cfg.ipv6);
            self.queue(s.now + 1_000, frame, None);
            self.truth.other_udp += 1;
        }
        if self.net_rng.chance(cfg.foreign / 4.0) && self.id.is_some() {
            let rogue = addr(cfg.ipv6, 0x909, 50009);
            let seq = self.net_rng.next_u32() as u16 as u64;
            let mut pkt = self.writer.packet(&mut self.values, s.ty, seq)?;
            write_crc(ProtocolId::new32(0x0BAD_F00D), &mut pkt);
            let ip = &net::ip_packets(rogue, self.server, &pkt, 0, false, 65535)[0];
            let frame = cfg.link.frame(ip, cfg.ipv6);
            self.queue(s.now + 2_000, frame, None);
            let t = self
                .truth
                .flows
                .entry(format!("{rogue}>{}", self.server))
                .or_default();
            t.datagrams += 1;
            t.crc_fail += 1;
        }
        Ok(())
    }
}
