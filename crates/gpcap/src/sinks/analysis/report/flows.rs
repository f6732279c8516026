//! One flow's figures, and the conversations (both directions of a flow) the report
//! lists.

use super::*;

/// Types listed per flow however few were seen: every type of a definition with up to
/// this many, else up to the highest seen (a 16-bit type field has 65,536).
pub const PADDED_TYPES: usize = 256;

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct FlowStats {
    /// Packet types of the definition (the per-type counts' length once padded).
    #[serde(skip)]
    pub num_types: u32,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub datagrams: u64,
    /// UDP payload bytes.
    pub bytes: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub duration_s: f64,
    pub packets_per_s: f64,
    pub bits_per_s: f64,
    pub largest_payload: u32,
    pub largest_ip: u32,
    pub crc_ok: u64,
    /// CRC mismatches, as every output spells the state (schema 2; `crc_fail` before).
    #[serde(rename = "crc_mismatch")]
    pub crc_fail: u64,
    pub too_short: u64,
    pub truncated: u64,
    pub malformed: u64,
    /// Datagrams by packet type id (fragments count as their own type).
    pub types: Vec<u64>,
    /// Packets reassembled from fragments, by the packet type of the whole packet.
    pub reassembled_types: Vec<u64>,
    pub fragments: u64,
    pub ip_fragmented: u64,
    pub over_budget: u64,
    pub seq: SeqStats,
    pub sizes: Percentiles,
    #[serde(skip)]
    pub size_hist: SizeHist,
    pub reassembly: BTreeMap<u32, CountStats>,
    pub attacks: AttackCounters,
    /// Packets (whole or reassembled) whose type the definition declares `from=client`,
    /// and `from=server`.
    pub from_client: u64,
    pub from_server: u64,
    /// Which end sends this flow, by the declared types of both directions (null when
    /// nothing decides it).
    pub role: Option<gpcap_dissect::program::Side>,
    /// Packets whose type is declared from the other side than `role`.
    pub wrong_direction: u64,
    /// Sequence analysis of the flow's other sequence spaces, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sequence_spaces: Vec<(String, SeqStats)>,
    /// Sequence analysis of the flow's message streams (definitions that declare them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<gpcap_engine::streams::StreamEnd>,
    /// Ack analysis of this direction's sequences (definitions with ack roles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acks: Option<super::super::acks::AckStats>,
    /// The ack analysis of each acked message stream of this direction, by stream.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stream_acks: Vec<super::super::msgacks::StreamAcks>,
    /// Its ack analysis was given up at the flow state budget (no `acks`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub acks_not_tracked: bool,
    /// Its sizes before loss bursts were sampled at the flow state budget.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub burst_window_capped: bool,
    /// Its CRC mismatches validate with another protocol id, the same for most of those
    /// sampled: another protocol or another version, not damage (null otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crc_other_id: Option<OtherId>,
    /// Datagrams whose header failed (of `malformed`), for the fit.
    #[serde(skip)]
    pub header_errors: u64,
    /// Datagrams that left trailing bytes after the body (of `malformed`).
    #[serde(skip)]
    pub trailing: u64,
    /// Sequences that jumped ahead by more than a quarter of the sequence space.
    #[serde(skip)]
    pub seq_jumps: u64,
    /// The input files (bit i: file i, the 64th for all later ones) it has datagrams in.
    #[serde(skip)]
    pub file_mask: u64,
}

/// The protocol id a flow's CRC mismatches validate with (solved from each datagram, as
/// `identify` solves ids: CRC32 is affine in the id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OtherId {
    /// `0x0BADF00D`.
    pub id: String,
    /// Mismatches solved (the flow's first ones, at most 16).
    pub sampled: u32,
    /// Of those, the ones this id validates.
    pub matching: u32,
}

impl FlowStats {
    /// Bytes held on the heap (the analysis' memory accounting).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        (self.types.capacity() + self.reassembled_types.capacity()) * 8
            + self.size_hist.heap_bytes()
            + self.reassembly.len() * (size_of::<(u32, CountStats)>() + 16)
            + self.sequence_spaces.capacity() * size_of::<(String, SeqStats)>()
    }

    /// One more datagram (or reassembled packet) of type `t` in `counts`, grown to it.
    pub fn count_type(counts: &mut Vec<u64>, t: u32, num_types: u32) {
        if t >= num_types {
            return;
        }
        if counts.len() <= t as usize {
            counts.resize(t as usize + 1, 0);
        }
        counts[t as usize] += 1;
    }

    /// Pads the per-type counts to every type the definition has (up to [`PADDED_TYPES`]:
    /// beyond, to the highest type seen), as the report lists them.
    pub fn pad_types(&mut self) {
        let n = (self.num_types as usize).min(PADDED_TYPES);
        for v in [&mut self.types, &mut self.reassembled_types] {
            if v.len() < n {
                v.resize(n, 0);
            }
        }
    }

    pub fn new(src: SocketAddr, dst: SocketAddr, num_types: u32) -> Self {
        FlowStats {
            src,
            dst,
            datagrams: 0,
            bytes: 0,
            first_ns: None,
            last_ns: None,
            duration_s: 0.0,
            packets_per_s: 0.0,
            bits_per_s: 0.0,
            largest_payload: 0,
            largest_ip: 0,
            crc_ok: 0,
            crc_fail: 0,
            too_short: 0,
            truncated: 0,
            malformed: 0,
            // Grown on use ([`FlowStats::count_type`]) and padded when the report is made:
            // 16,384 flows of a 16-bit type field held 16 GB of zeros.
            types: Vec::new(),
            reassembled_types: Vec::new(),
            num_types: num_types.min(65536),
            fragments: 0,
            ip_fragmented: 0,
            over_budget: 0,
            seq: SeqStats::default(),
            sizes: Percentiles::default(),
            size_hist: SizeHist::default(),
            reassembly: BTreeMap::new(),
            attacks: AttackCounters::default(),
            from_client: 0,
            from_server: 0,
            role: None,
            wrong_direction: 0,
            acks: None,
            stream_acks: Vec::new(),
            acks_not_tracked: false,
            burst_window_capped: false,
            crc_other_id: None,
            sequence_spaces: Vec::new(),
            header_errors: 0,
            trailing: 0,
            seq_jumps: 0,
            file_mask: 0,
            streams: Vec::new(),
        }
    }

    pub fn id(&self) -> FlowId {
        FlowId {
            src: self.src,
            dst: self.dst,
        }
    }

    /// Whether any datagram of the flow passed validation.
    pub fn is_game(&self) -> bool {
        self.crc_ok > 0
    }
}

/// What a capture holds when no game protocol was found in it: the capture summary and
/// its UDP conversations, counted without any protocol's validation.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Conversations {
    pub schema: u32,
    /// Always null: no protocol id validated the traffic.
    pub protocol: Option<()>,
    pub note: String,
    pub capture: CaptureSummary,
    pub identification: Option<gpcap_engine::identify::Identification>,
    /// By datagrams, the busiest first.
    pub conversations: Vec<Conversation>,
}

/// A flow seen without a protocol: serialised with only the fields that do not depend
/// on one (what was sent, when, how large).
#[derive(Debug, Clone)]
pub struct Conversation(pub FlowStats);

impl Serialize for Conversation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let f = &self.0;
        let mut m = s.serialize_struct("Conversation", 14)?;
        m.serialize_field("src", &f.src)?;
        m.serialize_field("dst", &f.dst)?;
        m.serialize_field("datagrams", &f.datagrams)?;
        m.serialize_field("bytes", &f.bytes)?;
        m.serialize_field("first_ns", &f.first_ns)?;
        m.serialize_field("last_ns", &f.last_ns)?;
        m.serialize_field("duration_s", &f.duration_s)?;
        m.serialize_field("packets_per_s", &f.packets_per_s)?;
        m.serialize_field("bits_per_s", &f.bits_per_s)?;
        m.serialize_field("largest_payload", &f.largest_payload)?;
        m.serialize_field("largest_ip", &f.largest_ip)?;
        m.serialize_field("ip_fragmented", &f.ip_fragmented)?;
        m.serialize_field("sizes", &f.sizes)?;
        // The well-known service on its ports (`DNS`, `QUIC`, `STUN`), or null.
        m.serialize_field(
            "service",
            &gpcap_wire::decode::services::service(f.src.port(), f.dst.port()),
        )?;
        m.end()
    }
}

impl Conversations {
    /// From a report made with every UDP port and no protocol id: only what does not
    /// depend on a protocol is kept.
    pub fn from_report(r: Report, note: String) -> Self {
        let mut conversations: Vec<Conversation> = r.flows.into_iter().map(Conversation).collect();
        conversations.sort_by_key(|c| std::cmp::Reverse(c.0.datagrams));
        Conversations {
            schema: SCHEMA_VERSION,
            protocol: None,
            note,
            capture: r.capture,
            identification: r.identification,
            conversations,
        }
    }
}
