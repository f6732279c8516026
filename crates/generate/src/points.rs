//! One simulated session seen at two capture points, for `gpcap gen --second-point`:
//! A beside the clients, B beside the server (behind a NAT when asked). Each datagram
//! may be lost before the first point it passes, then passes it, then crosses the
//! network between the points — lost, duplicated, held back behind later ones, delayed,
//! damaged — and reaches the second. Each point stamps frames with its own clock: B's
//! runs `offset` ahead of A's and faster by `skew`. Frames are handed out per point in
//! its time order (held back for the delivery horizon only), with the truth of every
//! datagram and, at the end, what `gpcap diff` must report for each direction.

use super::net::{self, Link};
use super::packet::{GenError, PacketWriter};
use super::rng::Rng;
use super::sim::Burst;
use gpcap_dissect::Program;
use gpcap_dissect::program::Side;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const EPOCH_NS: i64 = 1_700_000_000_000_000_000;
/// Each point's capture runs this long before the session and after its last frame.
const MARGIN_NS: i64 = 500_000_000;

#[derive(Debug, Clone)]
pub struct PointsConfig {
    pub seed: u64,
    pub duration_s: f64,
    pub packets: Option<u64>,
    /// The server's send rate; clients send at half of it.
    pub rate_hz: f64,
    pub clients: u32,
    pub big: f64,
    pub no_fragment: bool,
    pub link_mtu: u32,
    pub ipv6: bool,
    pub link: Link,
    /// Between the points.
    pub loss: f64,
    pub burst: Option<Burst>,
    pub dup: f64,
    pub reorder: f64,
    pub corrupt: f64,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    /// Before the first point a datagram passes.
    pub loss_before: f64,
    /// B's clock minus A's at the session's start, and how much faster B's runs.
    pub offset_s: f64,
    pub skew_ppm: f64,
    /// B sees each client through a NAT: another address and port.
    pub nat: bool,
}

impl Default for PointsConfig {
    fn default() -> Self {
        PointsConfig {
            seed: 1,
            duration_s: 10.0,
            packets: None,
            rate_hz: 60.0,
            clients: 1,
            big: 0.05,
            no_fragment: false,
            link_mtu: 1500,
            ipv6: false,
            link: Link::Ethernet { vlan: None },
            loss: 0.0,
            burst: None,
            dup: 0.0,
            reorder: 0.0,
            corrupt: 0.0,
            delay_ms: 20.0,
            jitter_ms: 0.0,
            loss_before: 0.0,
            offset_s: 0.0,
            skew_ppm: 0.0,
            nat: false,
        }
    }
}

/// What happened to one datagram, for the truth file.
#[derive(Debug, Clone, Serialize)]
pub struct Passage {
    pub event: &'static str,
    /// The flow as A sees it (`src>dst`).
    pub flow_a: String,
    pub flow_b: String,
    pub upstream: &'static str,
    pub sequence: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragment: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragments: Option<u32>,
    pub lost_before: bool,
    /// Its frame's time at the upstream point (that point's clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_ns: Option<i64>,
    pub lost_between: bool,
    pub corrupted: bool,
    /// Its copies' times at the downstream point (that point's clock).
    pub downstream_ns: Vec<i64>,
    /// The one-way delay of its first copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ns: Option<i64>,
}

/// Delay percentiles, in milliseconds (nearest rank).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub floor: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// What `gpcap diff` must report for one direction.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DirectionTruth {
    pub flow_a: String,
    pub flow_b: String,
    pub upstream: String,
    pub sent: u64,
    pub arrived: u64,
    pub lost_between: u64,
    /// Sequences never seen at the upstream point, between its first and last.
    pub lost_before: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Copies damaged on the way (they count as lost, as RFC 7680 counts them).
    pub damaged: u64,
    pub delay_ms: Option<Percentiles>,
    /// `id/count` → fragments lost between.
    pub fragments_lost: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PointsTruth {
    pub event: String,
    pub seed: u64,
    /// B's clock minus A's at A's time `origin_ns`, and B's skew.
    pub offset_ns: i64,
    pub origin_ns: i64,
    pub skew_ppm: f64,
    pub nat: bool,
    pub frames: [u64; 2],
    pub datagrams: u64,
    pub directions: Vec<DirectionTruth>,
}

impl PointsTruth {
    /// B's clock minus A's at A's time `t`.
    pub fn offset_at(&self, t: i64) -> f64 {
        self.offset_ns as f64 + self.skew_ppm * 1e-6 * (t - self.origin_ns) as f64
    }
}

/// What the simulation hands out: a frame of point 0 (A) or 1 (B), in that point's time
/// order, or a datagram's truth.
pub enum PointEmit<'a> {
    Frame { point: usize, t_ns: i64, data: &'a [u8] },
    Passage(&'a Passage),
}

struct Out {
    t: i64,
    order: u64,
    frame: Vec<u8>,
}

impl PartialEq for Out {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.order) == (o.t, o.order)
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
        (o.t, o.order).cmp(&(self.t, self.order))
    }
}

/// One direction of one client's conversation.
struct Flow {
    /// Addresses as A and as B see them.
    at: [(SocketAddr, SocketAddr); 2],
    upstream: usize,
    interval: i64,
    next: i64,
    ext: i64,
    ip_id: u32,
    types: Vec<u32>,
    bad: bool,
    acc: Acc,
}

/// What the truth of a direction is counted from.
#[derive(Default)]
struct Acc {
    passed: u64,
    seqs: HashSet<i64>,
    /// First intact copies: (arrival, frame order, position upstream).
    arrivals: Vec<(i64, u64, u64)>,
    delays: Vec<i64>,
    lost_between: u64,
    duplicated: u64,
    damaged: u64,
    fragments_lost: BTreeMap<String, u64>,
}

fn addr(v6: bool, a: [u8; 4], port: u16) -> SocketAddr {
    if v6 {
        let seg = |i: usize| u16::from_be_bytes([a[i], a[i + 1]]);
        SocketAddr::new(
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, seg(0), seg(2))),
            port,
        )
    } else {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), port)
    }
}

struct Points<'p> {
    p: &'p Program,
    cfg: &'p PointsConfig,
    writer: PacketWriter<'p>,
    values: Rng,
    net: Rng,
    flows: Vec<Flow>,
    heaps: [BinaryHeap<Out>; 2],
    order: u64,
    frames: [u64; 2],
    datagrams: u64,
    horizon: i64,
    start: i64,
}

impl Points<'_> {
    /// B's clock at true (A's) time `t`.
    fn stamp(&self, point: usize, t: i64) -> i64 {
        if point == 0 {
            return t;
        }
        t + (self.cfg.offset_s * 1e9) as i64
            + (self.cfg.skew_ppm * 1e-6 * (t - self.start) as f64).round() as i64
    }

    fn queue(&mut self, point: usize, t: i64, frame: Vec<u8>) -> u64 {
        self.order += 1;
        self.heaps[point].push(Out {
            t,
            order: self.order,
            frame,
        });
        self.order
    }

    fn deliver(&mut self, until: i64, emit: &mut dyn FnMut(PointEmit)) {
        for point in 0..2 {
            while self.heaps[point].peek().is_some_and(|o| o.t < until) {
                let Some(o) = self.heaps[point].pop() else { break };
                self.frames[point] += 1;
                let t = self.stamp(point, o.t);
                emit(PointEmit::Frame {
                    point,
                    t_ns: t,
                    data: &o.frame,
                });
            }
        }
    }

    /// A frame of other traffic at both points: each capture runs before and after
    /// the session.
    fn marker(&mut self, t: i64) {
        let (from, to) = (
            addr(self.cfg.ipv6, [10, 0, 9, 9], 33333),
            addr(self.cfg.ipv6, [10, 0, 0, 53], 53),
        );
        let ip = &net::ip_packets(from, to, b"capture running", 0, false, 65535)[0];
        let frame = self.cfg.link.frame(ip, self.cfg.ipv6);
        self.queue(0, t, frame.clone());
        self.queue(1, t, frame);
    }

    /// Whether the network between the points loses one IP piece of flow `fi`.
    fn lost_between(&mut self, fi: usize) -> bool {
        let (cfg, f, r) = (self.cfg, &mut self.flows[fi], &mut self.net);
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

    /// Flow `fi`'s turn at `now`: one packet, split as the definition says, each of its
    /// datagrams through both points.
    fn send(&mut self, fi: usize, now: i64, emit: &mut dyn FnMut(PointEmit)) -> Result<bool, GenError> {
        let f = &mut self.flows[fi];
        f.next += f.interval;
        if f.types.is_empty() {
            f.next = i64::MAX;
            return Ok(false);
        }
        let ty = f.types[self.values.below(f.types.len() as u64) as usize];
        let mask = u64::MAX >> (64 - self.p.sequence_bits.clamp(1, 64));
        let ext = f.ext;
        let seq = ext as u64 & mask;
        let scale = if self.values.chance(self.cfg.big) {
            self.values.range(200, 800) as u64
        } else {
            self.values.range(0, 12) as u64
        };
        let max = self.writer.max_packet(self.cfg.no_fragment);
        let packet = self.writer.packet_within(&mut self.values, ty, seq, scale, max)?;
        if self
            .writer
            .sequence_written()
            .is_some_and(|s| s as u64 & mask != seq)
            || packet.len() > max
        {
            // This type does not carry the counter as written: the side stops sending it.
            let f = &mut self.flows[fi];
            f.types.retain(|&t| t != ty);
            f.next -= f.interval;
            return Ok(false);
        }
        self.flows[fi].ext += 1;
        let datagrams = if self.writer.splits(&packet, self.cfg.no_fragment) {
            self.writer.fragments_of(&mut self.values, seq, &packet)?
        } else {
            vec![(packet, None)]
        };
        for (k, (payload, frag)) in datagrams.into_iter().enumerate() {
            self.transmit(fi, now + k as i64 * 10_000, ext, seq, payload, frag, emit);
        }
        Ok(true)
    }

    /// One datagram: maybe lost before its first point, seen there, then across the
    /// network to the second.
    #[allow(clippy::too_many_arguments)]
    fn transmit(
        &mut self,
        fi: usize,
        t: i64,
        ext: i64,
        seq: u64,
        payload: Vec<u8>,
        frag: Option<(u32, u32)>,
        emit: &mut dyn FnMut(PointEmit),
    ) {
        let cfg = self.cfg;
        self.datagrams += 1;
        let (up, at) = (self.flows[fi].upstream, self.flows[fi].at);
        let down = 1 - up;
        let name = |x: usize| format!("{}>{}", at[x].0, at[x].1);
        let mut passage = Passage {
            event: "datagram",
            flow_a: name(0),
            flow_b: name(1),
            upstream: ["A", "B"][up],
            sequence: seq,
            fragment: frag.map(|f| f.0),
            fragments: frag.map(|f| f.1),
            lost_before: self.net.chance(cfg.loss_before),
            upstream_ns: None,
            lost_between: false,
            corrupted: false,
            downstream_ns: Vec::new(),
            delay_ns: None,
        };
        if passage.lost_before {
            emit(PointEmit::Passage(&passage));
            return;
        }
        let f = &mut self.flows[fi];
        f.ip_id = f.ip_id.wrapping_add(1);
        let id = f.ip_id;
        let position = f.acc.passed;
        f.acc.passed += 1;
        f.acc.seqs.insert(ext);
        let pieces =
            |x: usize, data: &[u8]| net::ip_packets(at[x].0, at[x].1, data, id, false, cfg.link_mtu as usize);
        let up_pieces = pieces(up, &payload);
        let n = up_pieces.len() as i64;
        for (i, piece) in up_pieces.iter().enumerate() {
            let frame = cfg.link.frame(piece, cfg.ipv6);
            self.queue(up, t + i as i64 * 1_000, frame);
        }
        passage.upstream_ns = Some(self.stamp(up, t + (n - 1) * 1_000));
        // Across the network: every IP piece may be lost; the copy may be damaged.
        let lost = (0..n).map(|_| self.lost_between(fi)).fold(false, |a, b| a | b);
        let corrupted = self.net.chance(cfg.corrupt);
        let dup = self.net.chance(cfg.dup);
        let held = if self.net.chance(cfg.reorder) {
            self.flows[fi].interval * self.net.range(1, 3)
        } else {
            0
        };
        let delay = (cfg.delay_ms * 1e6) as i64 + (self.net.unit() * cfg.jitter_ms * 1e6) as i64 + held;
        let mut data = payload.clone();
        if corrupted {
            let bit = self.net.below(data.len() as u64 * 8);
            // After the sender signed it: the checksum fails downstream.
            data[(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        let acc_key = frag.map(|(i, c)| format!("{i}/{c}"));
        if lost || corrupted {
            passage.lost_between = true;
            passage.corrupted = corrupted && !lost;
            let acc = &mut self.flows[fi].acc;
            acc.lost_between += 1;
            if let Some(k) = acc_key {
                *acc.fragments_lost.entry(k).or_default() += 1;
            }
        }
        if !lost {
            let copies = 1 + dup as i64;
            let down_pieces = pieces(down, &data);
            let mut last_order = 0;
            for c in 0..copies {
                let t0 = t + delay + c * 1_000_000;
                for (i, piece) in down_pieces.iter().enumerate() {
                    let frame = cfg.link.frame(piece, cfg.ipv6);
                    let o = self.queue(down, t0 + i as i64 * 1_000, frame);
                    if c == 0 {
                        last_order = o;
                    }
                }
                passage.downstream_ns.push(self.stamp(down, t0 + (n - 1) * 1_000));
            }
            let acc = &mut self.flows[fi].acc;
            if corrupted {
                acc.damaged += copies as u64;
            } else {
                acc.duplicated += dup as u64;
                acc.delays.push(delay);
                acc.arrivals
                    .push((t + delay + (n - 1) * 1_000, last_order, position));
                passage.delay_ns = Some(delay);
            }
        }
        emit(PointEmit::Passage(&passage));
    }
}

/// Both directions of every client's conversation with the server, as A and B see them.
fn flows(cfg: &PointsConfig, writer: &PacketWriter, p: &Program, rng: &mut Rng) -> Vec<Flow> {
    let space0 =
        |types: Vec<u32>| -> Vec<u32> { types.into_iter().filter(|&t| p.space_of(t) == 0).collect() };
    let (server_types, client_types) = (
        space0(writer.types_from(Side::Server)),
        space0(writer.types_from(Side::Client)),
    );
    let port = p.params.ports.first().copied().unwrap_or(40000);
    let server = addr(cfg.ipv6, [10, 0, 0, 1], port);
    let mut out = Vec::new();
    for c in 0..cfg.clients.max(1) {
        let host = [10, 0, 1 + (c >> 8) as u8, (c & 0xff) as u8 + 1];
        let client = addr(cfg.ipv6, host, 50000 + (c % 10000) as u16);
        let public = if cfg.nat {
            addr(
                cfg.ipv6,
                [198, 51, 100, 1 + (c >> 12) as u8],
                61000 + (c % 4096) as u16,
            )
        } else {
            client
        };
        for (to_client, hz, types) in [
            (true, cfg.rate_hz, &server_types),
            (false, cfg.rate_hz / 2.0, &client_types),
        ] {
            let interval = ((1e9 / hz.max(0.1)) as i64).max(1);
            let at = if to_client {
                [(server, client), (server, public)]
            } else {
                [(client, server), (public, server)]
            };
            out.push(Flow {
                at,
                // Client to server passes A (beside the client) first.
                upstream: if to_client { 1 } else { 0 },
                interval,
                next: if types.is_empty() {
                    i64::MAX
                } else {
                    EPOCH_NS + rng.range(0, interval)
                },
                ext: rng.range(0, 60000),
                ip_id: rng.next_u32() & 0xffff,
                types: types.clone(),
                bad: false,
                acc: Acc::default(),
            });
        }
    }
    out
}

/// Runs the session, streaming both points' frames and every datagram's truth to
/// `emit`, and returns what `diff` must report.
pub fn simulate_points(
    p: &Program,
    cfg: &PointsConfig,
    emit: &mut dyn FnMut(PointEmit),
) -> Result<PointsTruth, GenError> {
    super::sim::preflight(p)?;
    if p.params.checksum == gpcap_dissect::program::Checksum::None && cfg.corrupt > 0.0 {
        return Err(GenError::CorruptWithoutChecksum);
    }
    let mut rng = Rng::new(cfg.seed);
    let values = rng.fork(1);
    let net = rng.fork(2);
    let writer = PacketWriter::new(p);
    let flows = flows(cfg, &writer, p, &mut rng);
    let max_interval = flows.iter().map(|f| f.interval).max().unwrap_or(0);
    let mut s = Points {
        p,
        cfg,
        writer,
        values,
        net,
        flows,
        heaps: Default::default(),
        order: 0,
        frames: [0; 2],
        datagrams: 0,
        horizon: ((cfg.delay_ms + cfg.jitter_ms) * 1e6) as i64 + 4 * max_interval + 10_000_000,
        start: EPOCH_NS,
    };
    s.marker(EPOCH_NS - MARGIN_NS);
    let end = EPOCH_NS + (cfg.duration_s * 1e9) as i64;
    let mut packets = 0u64;
    while let Some(fi) = (0..s.flows.len()).min_by_key(|&i| s.flows[i].next) {
        let now = s.flows[fi].next;
        if now > end || cfg.packets.is_some_and(|n| packets >= n) {
            break;
        }
        s.deliver(now - s.horizon, emit);
        packets += s.send(fi, now, emit)? as u64;
    }
    let last = s
        .heaps
        .iter()
        .filter_map(|h| h.iter().map(|o| o.t).max())
        .max()
        .unwrap_or(end);
    s.marker(last.max(end) + MARGIN_NS);
    s.deliver(i64::MAX, emit);
    Ok(truth(&mut s))
}

fn percentiles(mut v: Vec<i64>) -> Option<Percentiles> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let at = |q: f64| {
        let rank = (q * v.len() as f64).ceil() as usize;
        v[rank.clamp(1, v.len()) - 1] as f64 / 1e6
    };
    Some(Percentiles {
        floor: at(0.0),
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        p999: at(0.999),
        max: at(1.0),
    })
}

fn truth(s: &mut Points) -> PointsTruth {
    let mut directions = Vec::new();
    for f in &mut s.flows {
        let acc = std::mem::take(&mut f.acc);
        if acc.passed == 0 {
            continue;
        }
        let mut arrivals = acc.arrivals;
        arrivals.sort_unstable();
        let (mut reordered, mut max) = (0, None);
        for &(_, _, pos) in &arrivals {
            match max {
                Some(m) if pos < m => reordered += 1,
                _ => max = Some(pos),
            }
        }
        let (lo, hi) = (
            acc.seqs.iter().min().copied().unwrap_or(0),
            acc.seqs.iter().max().copied().unwrap_or(0),
        );
        let name = |x: usize| format!("{}>{}", f.at[x].0, f.at[x].1);
        directions.push(DirectionTruth {
            flow_a: name(0),
            flow_b: name(1),
            upstream: ["A", "B"][f.upstream].into(),
            sent: acc.passed,
            arrived: arrivals.len() as u64,
            lost_between: acc.lost_between,
            lost_before: (hi - lo + 1) as u64 - acc.seqs.len() as u64,
            duplicated: acc.duplicated,
            reordered,
            damaged: acc.damaged,
            delay_ms: percentiles(acc.delays),
            fragments_lost: acc.fragments_lost,
        });
    }
    PointsTruth {
        event: "summary".into(),
        seed: s.cfg.seed,
        offset_ns: (s.cfg.offset_s * 1e9) as i64,
        origin_ns: s.start,
        skew_ppm: s.cfg.skew_ppm,
        nat: s.cfg.nat,
        frames: s.frames,
        datagrams: s.datagrams,
        directions,
    }
}
