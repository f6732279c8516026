//! Zero configuration: recover the protocol id from the traffic itself.
//!
//! CRC-32 is affine over GF(2). For a datagram of fixed length, the CRC of
//! `prefix || packet-with-zeroed-crc` is `L·prefix ⊕ c`, where the columns of `L` are the
//! CRCs of each single prefix bit followed by zeros (minus the all-zero CRC) and `c` is the
//! CRC with a zero prefix. The stored CRC then gives `L·prefix = stored ⊕ c`, solved by
//! Gaussian elimination: one datagram pins a 32-bit id. No brute force.
//!
//! A 64-bit id cannot be pinned by any number of datagrams: after the prefix the CRC
//! register holds 32 bits, so 2^32 prefixes of 8 bytes leave the same state and validate
//! exactly the same packets, and since 4 prefix bytes reach every state, each 64-bit id
//! has a 32-bit equivalent. Solving for 32 bits therefore also finds the protocol of a
//! game that uses 64-bit ids, as the 32-bit id that validates identically.

use gpcap_wire::decode::FlowId;
use gpcap_wire::validate::{ProtocolId, packet_crc, stored_crc, verify_crc};
use hashbrown::HashMap;
use serde::Serialize;

/// Equations `coeffs · x = rhs` over GF(2), `x` up to 64 bits; rhs is bit 64.
#[derive(Default)]
struct System {
    rows: Vec<u128>,
}

impl System {
    fn add(&mut self, coeffs: u64, rhs: bool) {
        self.rows.push(coeffs as u128 | (rhs as u128) << 64);
    }

    /// The unique solution for `vars` unknowns, or None if under-determined or
    /// inconsistent.
    fn solve(mut self, vars: u32) -> Option<u64> {
        let mut pivot_row = 0;
        let mut pivots = Vec::with_capacity(vars as usize);
        for col in 0..vars {
            let bit = 1u128 << col;
            let r = (pivot_row..self.rows.len()).find(|&r| self.rows[r] & bit != 0)?;
            self.rows.swap(pivot_row, r);
            let p = self.rows[pivot_row];
            for (i, row) in self.rows.iter_mut().enumerate() {
                if i != pivot_row && *row & bit != 0 {
                    *row ^= p;
                }
            }
            pivots.push(col);
            pivot_row += 1;
        }
        // Any remaining row must be 0 = 0.
        if self.rows[pivot_row..].iter().any(|r| r >> 64 & 1 == 1) {
            return None;
        }
        let mut x = 0u64;
        for (r, &col) in pivots.iter().enumerate() {
            if self.rows[r] >> 64 & 1 == 1 {
                x |= 1 << col;
            }
        }
        Some(x)
    }
}

/// Adds the 32 equations one datagram gives for a prefix of `width` bytes.
fn equations(sys: &mut System, packet: &[u8], width: usize) -> Option<()> {
    let stored = stored_crc(packet)?;
    let zero_prefix = ProtocolId {
        value: 0,
        width: width as u8,
    };
    let target = stored ^ packet_crc(zero_prefix, packet)?;
    // Column i: CRC of (bit i set in the prefix, then zeros) xor CRC of all zeros.
    let len = width + packet.len();
    let mut buf = vec![0u8; len];
    let base = crc32fast::hash(&buf);
    let mut cols = [0u32; 64];
    for (i, col) in cols.iter_mut().enumerate().take(width * 8) {
        buf[i / 8] = 1 << (i % 8);
        *col = crc32fast::hash(&buf) ^ base;
        buf[i / 8] = 0;
    }
    for j in 0..32 {
        let mut coeffs = 0u64;
        for (i, col) in cols.iter().enumerate().take(width * 8) {
            coeffs |= ((col >> j & 1) as u64) << i;
        }
        sys.add(coeffs, target >> j & 1 == 1);
    }
    Some(())
}

/// The one 32-bit protocol id that makes this datagram's CRC valid.
pub fn solve32(packet: &[u8]) -> Option<u32> {
    if packet.len() < 5 {
        return None;
    }
    let mut sys = System::default();
    equations(&mut sys, packet, 4)?;
    sys.solve(32).map(|x| x as u32)
}

/// The 32-bit id that validates exactly what `id` validates (identity for 32-bit ids).
pub fn equivalent32(id: ProtocolId) -> u32 {
    if id.width == 4 {
        return id.value as u32;
    }
    let mut p = vec![0u8; 16];
    gpcap_wire::validate::write_crc(id, &mut p);
    solve32(&p).unwrap_or(0)
}

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FlowShare {
    pub flow: FlowId,
    pub sampled: u64,
    pub valid: u64,
}

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Candidate {
    pub protocol_id: ProtocolId,
    /// Sampled datagrams this id validates.
    pub datagrams: u64,
    pub flows: Vec<FlowShare>,
    /// Ports of the flows it validates (both ends).
    pub ports: Vec<u16>,
    /// Share of consecutive validated datagrams per flow whose 16-bit sequence (bytes
    /// 4–5) stays or steps forward by a little: evidence for the reference header.
    pub sequence_increments: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Identification {
    pub flows: u64,
    pub sampled: u64,
    /// Confident candidates (at least two datagrams), most supported first.
    pub candidates: Vec<Candidate>,
    /// Sampled datagrams that no confident candidate explains.
    pub unexplained: u64,
    /// Candidates seen for a single datagram only (not protocols: noise or one-offs).
    pub singletons: u64,
}

impl Identification {
    pub fn best(&self) -> Option<&Candidate> {
        self.candidates.first()
    }
}

/// Datagrams sampled per flow, and the flows sampled.
const SAMPLES_PER_FLOW: usize = 24;
const MAX_FLOWS: usize = 2048;
const MAX_SAMPLE_LEN: usize = 4096;
/// Datagrams in a row that add nothing to the sample (no new flow, no flow short of its
/// samples) after which reading further is not expected to: sampling stops there.
const QUIET: u32 = 65_536;

/// Collects samples while a capture is read, then solves.
#[derive(Default)]
pub struct Identifier {
    flows: HashMap<FlowId, Vec<Vec<u8>>>,
    order: Vec<FlowId>,
    /// Datagrams since the sample last grew.
    quiet: u32,
    /// Only looking for a connection request ([`Identifier::requests`]).
    only_requests: bool,
    /// The protocol id the first netcode connection request carries in the clear.
    request_id: Option<u64>,
}

impl Identifier {
    /// An identifier that keeps no samples and looks only for the first netcode
    /// connection request (an encrypted definition: the id is in every packet's
    /// additional data, in the clear only in requests); saturated once found, or after
    /// as many datagrams without one as a sample's quiet end.
    pub fn requests() -> Self {
        Identifier {
            only_requests: true,
            ..Identifier::default()
        }
    }

    /// The protocol id of the first connection request sampled.
    pub fn request_protocol_id(&self) -> Option<u64> {
        self.request_id
    }

    pub fn datagram(&mut self, flow: FlowId, payload: &[u8]) {
        self.quiet = self.quiet.saturating_add(1);
        if self.request_id.is_none() {
            self.request_id = gpcap_decrypt::netcode::request_protocol_id(payload);
        }
        if self.only_requests {
            return;
        }
        if payload.len() < 7 || payload.len() > MAX_SAMPLE_LEN {
            return;
        }
        if !self.flows.contains_key(&flow) {
            if self.flows.len() >= MAX_FLOWS {
                return;
            }
            self.order.push(flow);
        }
        let s = self.flows.entry(flow).or_default();
        if s.len() < SAMPLES_PER_FLOW {
            s.push(payload.to_vec());
            self.quiet = 0;
        }
    }

    /// Samples the UDP datagram of one captured frame, if it holds a whole one.
    pub fn frame(&mut self, linktype: i32, data: &[u8]) {
        if let gpcap_wire::decode::Decoded::Udp {
            ip,
            src_port,
            dst_port,
            payload,
            truncated: false,
        } = gpcap_wire::decode::decode(linktype, data)
        {
            let flow = FlowId {
                src: std::net::SocketAddr::new(ip.src, src_port),
                dst: std::net::SocketAddr::new(ip.dst, dst_port),
            };
            self.datagram(flow, payload);
        }
    }

    /// Whether reading further is not expected to add anything: the flow table is
    /// full, or the last 65,536 datagrams brought no new flow and no missing sample
    /// (a flow that appears only later is then analyzed but not sampled).
    pub fn saturated(&self) -> bool {
        if self.only_requests {
            return self.request_id.is_some() || self.quiet >= QUIET;
        }
        self.flows.len() >= MAX_FLOWS || self.quiet >= QUIET
    }

    pub fn finish(self) -> Identification {
        // Votes count distinct datagrams: a replayed datagram is no new evidence.
        let mut votes: HashMap<ProtocolId, std::collections::HashSet<u64>> = HashMap::new();
        let mut out = Identification {
            flows: self.order.len() as u64,
            ..Default::default()
        };
        for f in &self.order {
            let samples = &self.flows[f];
            out.sampled += samples.len() as u64;
            for s in samples {
                if let Some(id) = solve32(s) {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    s.hash(&mut h);
                    votes.entry(ProtocolId::new32(id)).or_default().insert(h.finish());
                }
            }
        }
        let mut ranked: Vec<(ProtocolId, u64)> =
            votes.into_iter().map(|(id, v)| (id, v.len() as u64)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.singletons = ranked.iter().filter(|(_, n)| *n < 2).count() as u64;
        let mut explained = 0u64;
        for (id, _) in ranked.into_iter().filter(|(_, n)| *n >= 2) {
            let mut c = Candidate {
                protocol_id: id,
                datagrams: 0,
                flows: Vec::new(),
                ports: Vec::new(),
                sequence_increments: None,
            };
            let (mut steps, mut good) = (0u64, 0u64);
            for f in &self.order {
                let samples = &self.flows[f];
                let valid: Vec<&Vec<u8>> = samples
                    .iter()
                    .filter(|s| verify_crc(id, s) == gpcap_wire::validate::CrcStatus::Ok)
                    .collect();
                if valid.is_empty() {
                    continue;
                }
                c.datagrams += valid.len() as u64;
                c.flows.push(FlowShare {
                    flow: *f,
                    sampled: samples.len() as u64,
                    valid: valid.len() as u64,
                });
                for port in [f.src.port(), f.dst.port()] {
                    if !c.ports.contains(&port) {
                        c.ports.push(port);
                    }
                }
                for w in valid.windows(2) {
                    let a = u16::from_le_bytes([w[0][4], w[0][5]]);
                    let b = u16::from_le_bytes([w[1][4], w[1][5]]);
                    steps += 1;
                    if (0..=8).contains(&b.wrapping_sub(a)) {
                        good += 1;
                    }
                }
            }
            if c.datagrams < 2 {
                continue;
            }
            c.ports.sort_unstable();
            c.sequence_increments = (steps > 0).then(|| good as f64 / steps as f64);
            explained += c.datagrams;
            out.candidates.push(c);
        }
        out.unexplained = out.sampled.saturating_sub(explained);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #16: zero-config stops sampling once 65,536 datagrams in a row add nothing, so a
    /// long capture is not read twice; a new flow or a missing sample restarts the count.
    #[test]
    fn sampling_stops_when_reading_adds_nothing() {
        let flow = |port: u16| FlowId {
            src: std::net::SocketAddr::from(([10, 0, 0, 1], port)),
            dst: std::net::SocketAddr::from(([10, 0, 0, 2], 40000)),
        };
        let mut id = Identifier::default();
        for k in 0..SAMPLES_PER_FLOW as u32 + QUIET - 1 {
            id.datagram(flow(1), &k.to_le_bytes().repeat(3));
        }
        assert!(!id.saturated());
        id.datagram(flow(2), &[7; 12]);
        for _ in 0..QUIET - 1 {
            id.datagram(flow(1), &[1; 12]);
        }
        assert!(!id.saturated(), "a new flow restarts the count");
        for _ in 0..SAMPLES_PER_FLOW {
            id.datagram(flow(2), &[2; 12]);
        }
        for _ in 0..QUIET {
            id.datagram(flow(1), &[1; 12]);
        }
        assert!(id.saturated());
    }
    use gpcap_wire::validate::write_crc;

    #[test]
    fn solves_a_32_bit_id() {
        let mut p = vec![0u8; 40];
        for (i, b) in p.iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        write_crc(ProtocolId::new32(0x5566_7788), &mut p);
        assert_eq!(solve32(&p), Some(0x5566_7788));
    }

    #[test]
    fn a_64_bit_id_has_a_32_bit_equivalent() {
        let id = ProtocolId::new64(0x0123_4567_89ab_cdef);
        let eq = ProtocolId::new32(equivalent32(id));
        for n in [13usize, 40, 77, 300] {
            let mut p: Vec<u8> = (0..n).map(|i| (i * 31 + n) as u8).collect();
            write_crc(id, &mut p);
            assert_eq!(solve32(&p), Some(eq.value as u32), "length {n}");
            assert_eq!(verify_crc(eq, &p), gpcap_wire::validate::CrcStatus::Ok);
        }
    }
}
