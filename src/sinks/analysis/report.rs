//! The analysis result: plain data, serialised as the `--json` schema (docs/json.md) and
//! rendered as tables by the CLI and TUI.

use crate::capture::CaptureError;
use crate::decode::ipfrag::DefragStats;
use crate::engine::Config;
pub use crate::engine::FlowId;
use crate::engine::reassembly::{AttackCounters, CountStats};
use crate::engine::seq::SeqStats;
use crate::validate::ProtocolId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// JSON schema version; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Default, Serialize)]
pub struct FileSummary {
    pub name: String,
    pub frames: u64,
    /// Reading stopped here (frames before it were analyzed).
    pub error: Option<CaptureError>,
    /// The file ended inside a record.
    pub truncated_tail: Option<CaptureError>,
    /// Its first and last timestamps: captures given as one trace must not overlap.
    #[serde(skip)]
    pub first_ns: Option<i64>,
    #[serde(skip)]
    pub last_ns: Option<i64>,
}

/// The first pair of captures given as one trace that overlap: a later file starts
/// before an earlier one ends, and a flow has datagrams in both (so reading one after
/// the other would stitch it). As (earlier, later) indexes.
pub fn overlapping(r: &Report) -> Option<(usize, usize)> {
    let files = &r.capture.files;
    let shared = |a: usize, b: usize| {
        let both = (1u64 << a.min(63)) | (1u64 << b.min(63));
        r.flows.iter().any(|f| f.file_mask & both == both)
    };
    for (i, f) in files.iter().enumerate() {
        for (j, g) in files[..i].iter().enumerate() {
            if let (Some(first), Some(last)) = (f.first_ns, g.last_ns)
                && first < last
                && shared(j, i)
            {
                return Some((j, i));
            }
        }
    }
    None
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CaptureSummary {
    pub files: Vec<FileSummary>,
    pub frames: u64,
    /// Bytes captured.
    pub bytes: u64,
    /// Bytes on the wire (original lengths).
    pub wire_bytes: u64,
    pub first_ns: Option<i64>,
    pub last_ns: Option<i64>,
    pub duration_s: f64,
    pub link_types: BTreeMap<String, u64>,
    /// Frames cut short by the capture's snaplen (not malformed).
    pub snaplen_truncated: u64,
    /// Snaplen-cut frames whose headers were cut, by layer.
    pub truncated_by_layer: BTreeMap<String, u64>,
    /// Frames whose link or network headers were malformed, by layer.
    pub decode_errors: BTreeMap<String, u64>,
    /// Frames that were not UDP, by what they were.
    pub not_udp: BTreeMap<String, u64>,
    pub udp_datagrams: u64,
    /// UDP datagrams on other ports (not the protocol's).
    pub other_udp: u64,
    pub ip_fragments: u64,
    /// UDP datagrams rebuilt from IP fragments.
    pub ip_reassembled: u64,
    pub ip_defrag: DefragStats,
    pub icmp_too_big: u64,
    /// Frames by 802.1Q VLAN id (the outer tag), when any frame had one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub vlans: BTreeMap<u16, u64>,
    pub flows_not_tracked: u64,
    /// Tracked flows whose ack analysis went past the flow state budget: their `acks`
    /// are absent and `acks_not_tracked` set (the totals of ack figures are partial).
    #[serde(skip_serializing_if = "is_zero")]
    pub acks_not_tracked: u64,
    /// Datagrams whose acks named sequences the other direction had not sent (none of
    /// its datagrams carried that sequence or stream yet): nothing for them to settle.
    #[serde(skip_serializing_if = "is_zero")]
    pub acks_unmatched: u64,
    /// Tracked flows whose window of the second's datagrams stopped growing at the flow
    /// state budget: `mtu.bursts` samples fewer of their datagrams.
    #[serde(skip_serializing_if = "is_zero")]
    pub burst_window_capped: u64,
    /// Datagrams earlier than one their flow sent before them: the clock stepped back
    /// (flows are timed by their earliest and latest datagram all the same).
    #[serde(skip_serializing_if = "is_zero")]
    pub time_went_back: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ProtocolInfo {
    pub name: Option<String>,
    pub protocol_id: Option<ProtocolId>,
    /// "definition", "flag", "identified" or "none".
    pub source: String,
    pub ports: Vec<u16>,
    pub any_port: bool,
    /// The validation used when it is not the default CRC32: "none" (ports and a clean
    /// header read). Left out of the JSON for "crc32", so reports of CRC protocols keep
    /// their shape.
    #[serde(skip_serializing_if = "crate::dissect::program::Checksum::is_crc32")]
    pub checksum: crate::dissect::program::Checksum,
    /// A checksum declared field by field, in words (`checksum` is "field").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_rule: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Validation {
    /// Datagrams on the protocol's ports.
    pub examined: u64,
    pub crc_ok: u64,
    pub crc_mismatch: u64,
    pub too_short: u64,
    /// Payload cut by the snaplen or shorter than its UDP length: not validated.
    pub truncated: u64,
    /// CRC fine but the header could not be read, by cause.
    pub header_errors: BTreeMap<String, u64>,
    /// Valid non-fragment packets.
    pub packets: u64,
    /// Valid fragments.
    pub fragments: u64,
    /// Packets whose type is declared from the other end than the one sending them
    /// (see `flows[].role`).
    pub wrong_direction: u64,
    /// Checksums that need a value the conversation has not shown yet (a declared
    /// `stand-in`): neither ok nor mismatched.
    #[serde(skip_serializing_if = "is_zero")]
    pub crc_unverified: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Payload sizes: 16-byte buckets up to 4 KiB, 256-byte buckets above — percentiles
/// within a bucket in at most 2 KiB per flow. Buckets exist up to the largest size seen:
/// a flow of small datagrams holds a few bytes (a flood of 16,384 one-datagram flows held
/// 32 MB of empty buckets).
#[derive(Debug, Clone, Default)]
pub struct SizeHist {
    buckets: Vec<u32>,
    pub count: u64,
    pub max: u32,
}

const FINE: u32 = 4096;
const FINE_STEP: u32 = 16;
const COARSE_STEP: u32 = 256;
const BUCKETS: usize = (FINE / FINE_STEP + (65536 - FINE) / COARSE_STEP) as usize;

fn bucket_of(size: u32) -> usize {
    if size < FINE {
        (size / FINE_STEP) as usize
    } else {
        ((FINE / FINE_STEP + (size.min(65535) - FINE) / COARSE_STEP) as usize).min(BUCKETS - 1)
    }
}

/// The largest size that falls in bucket `b`.
fn bucket_top(b: usize) -> u32 {
    let fine = (FINE / FINE_STEP) as usize;
    if b < fine {
        (b as u32 + 1) * FINE_STEP - 1
    } else {
        FINE + (b - fine + 1) as u32 * COARSE_STEP - 1
    }
}

impl SizeHist {
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * 4
    }

    pub fn add(&mut self, size: u32) {
        let b = bucket_of(size);
        if b >= self.buckets.len() {
            let len = (b + 1).max(self.buckets.len() * 2).min(BUCKETS);
            self.buckets.reserve_exact(len - self.buckets.len());
            self.buckets.resize(len, 0);
        }
        self.buckets[b] = self.buckets[b].saturating_add(1);
        self.count += 1;
        self.max = self.max.max(size);
    }

    /// Datagrams in the bucket that holds `size`.
    pub fn bucket(&self, size: u32) -> u32 {
        self.buckets.get(bucket_of(size)).copied().unwrap_or(0)
    }

    /// Upper edge of the bucket holding quantile `q` (capped at the max seen).
    pub fn quantile(&self, q: f64) -> u32 {
        if self.count == 0 {
            return 0;
        }
        let target = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut acc = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            acc += n as u64;
            if acc >= target {
                return bucket_top(i).min(self.max);
            }
        }
        self.max
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Percentiles {
    pub p50: u32,
    pub p95: u32,
    pub p99: u32,
    pub max: u32,
}

/// Types listed per flow however few were seen: every type of a definition with up to
/// this many, else up to the highest seen (a 16-bit type field has 65,536).
pub const PADDED_TYPES: usize = 256;

#[derive(Debug, Clone, Serialize)]
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
    pub role: Option<crate::dissect::program::Side>,
    /// Packets whose type is declared from the other side than `role`.
    pub wrong_direction: u64,
    /// Sequence analysis of the flow's other sequence spaces, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sequence_spaces: Vec<(String, SeqStats)>,
    /// Sequence analysis of the flow's message streams (definitions that declare them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<crate::engine::streams::StreamEnd>,
    /// Ack analysis of this direction's sequences (definitions with ack roles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acks: Option<super::acks::AckStats>,
    /// The ack analysis of each acked message stream of this direction, by stream.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stream_acks: Vec<super::msgacks::StreamAcks>,
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

#[derive(Debug, Clone, Serialize)]
pub struct IcmpFinding {
    pub frame: u64,
    pub from: IpAddr,
    pub v6: bool,
    /// The MTU the router announced.
    pub mtu: u32,
    /// The flow of the quoted datagram.
    pub flow: Option<FlowId>,
    /// Size of the datagram that did not fit.
    pub quoted_ip_len: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IpFragFinding {
    pub frame: u64,
    pub flow: FlowId,
    pub ip_len: u32,
    pub fragments: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct MtuReport {
    pub budget: u32,
    pub link_mtu: u32,
    /// Game datagrams whose UDP payload exceeds the budget.
    pub over_budget: u64,
    /// Game IP datagrams larger than the link MTU.
    pub over_link_mtu: u64,
    /// Of those, sent whole with don't-fragment.
    pub df_over_link_mtu: u64,
    /// Game datagrams that arrived IP-fragmented (and were reassembled).
    pub ip_fragmented: u64,
    /// Of those, datagrams no larger than `link_mtu`: fragmented on a path whose MTU is
    /// smaller than the link MTU assumed (see `fragment_mtu`).
    pub ip_fragmented_within_link_mtu: u64,
    /// The largest IP fragment that was not a datagram's last (any protocol): the MTU
    /// the senders fragmented at, or less. Null without IP fragments.
    pub fragment_mtu: Option<u32>,
    pub ip_fragmented_list: Vec<IpFragFinding>,
    /// IP-fragmented datagrams (any protocol) never reassembled.
    pub ip_never_reassembled: u64,
    pub fragments_over_size: u64,
    pub icmp_total: u64,
    pub icmp: Vec<IcmpFinding>,
    /// Don't-fragment datagrams larger than the MTU ICMP announced for their flow.
    pub df_over_path_mtu: u64,
    /// Sequence gaps (runs of lost sequences) on every flow.
    pub gaps: u64,
    /// Of those, gaps that follow an ICMP announcing that a datagram of the flow was over
    /// the path MTU (the datagram a router dropped).
    pub gaps_after_path_mtu: u64,
    pub bursts: BurstReport,
}

/// Sizes in the second before each loss burst against the rest.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BurstReport {
    /// Gaps of two or more sequences.
    pub bursts: u64,
    pub before_count: u64,
    pub before_mean_size: f64,
    /// Share of datagrams over the budget in the second before a burst.
    pub before_over_budget: f64,
    pub rest_count: u64,
    pub rest_mean_size: f64,
    pub rest_over_budget: f64,
    pub finding: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CountRow {
    pub fragments: u32,
    pub seen: u64,
    pub completed: u64,
    pub lost: u64,
    pub observed_loss: f64,
    /// 95% Wilson interval of the observed loss.
    pub observed_low: f64,
    pub observed_high: f64,
    /// `1 - (1 - p)^n`.
    pub predicted_loss: f64,
    /// Observed loss over single-datagram loss on the same flows.
    pub amplification: Option<f64>,
    pub bytes_wasted: u64,
}

/// The flows whose single datagrams measure the loss fragments are compared with (JSON
/// keeps the words it always had; `present/` says them in tables).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum LossScope {
    /// Nothing was reassembled: no scope.
    #[default]
    #[serde(rename = "")]
    None,
    /// The fragmenting flows' own single packets.
    #[serde(rename = "same flows")]
    SameFlows,
    /// The flows that never fragment, when the fragmenting flows send nothing else.
    #[serde(rename = "flows that never fragment")]
    NeverFragmenting,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReassemblyReport {
    /// Packets reassembled from all their fragments.
    pub completed: u64,
    pub dissected_ok: u64,
    pub malformed: u64,
    #[serde(rename = "crc_mismatch")]
    pub crc_fail: u64,
    pub attacks: AttackCounters,
    #[serde(skip)]
    pub by_count: BTreeMap<u32, CountStats>,
    /// Messages of count-down or flagged fragments sent in one fragment: whole, not
    /// fragmented (with the completed ones, every message delivered).
    #[serde(skip_serializing_if = "is_zero")]
    pub single_fragment_messages: u64,
    pub packets_seen: u64,
    pub fragments_expected: u64,
    pub fragments_received: u64,
    /// Fragment loss rate p: missing fragments over expected.
    pub fragment_loss: f64,
    /// Loss of single (unfragmented) datagrams: sequence gaps over gaps plus sequences
    /// received whole, on the flows `single_loss_scope` names.
    pub single_loss: f64,
    pub single_lost: u64,
    pub single_total: u64,
    /// Which flows measured `single_loss`.
    pub single_loss_scope: LossScope,
    pub rows: Vec<CountRow>,
    pub bytes_wasted: u64,
    pub peak_bytes: u64,
    pub finding: Option<String>,
    /// Fragmented packets of flows whose sequence or fragment fields do not fit and whose
    /// packets mostly never complete (an attacker's refused fragments, a wrong field):
    /// left out of the loss figures above.
    pub counted_apart: CountedApart,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CountedApart {
    pub flows: u64,
    pub packets: u64,
    pub fragments_received: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MalformedExample {
    pub frame: u64,
    pub flow: FlowId,
    pub cause: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Malformed {
    pub total: u64,
    pub by_cause: BTreeMap<String, u64>,
    pub examples: Vec<MalformedExample>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub schema: u32,
    /// How well the description fits the traffic (docs/json.md, `fit`).
    pub fit: super::fit::Fit,
    pub capture: CaptureSummary,
    pub protocol: ProtocolInfo,
    pub validation: Validation,
    pub flows: Vec<FlowStats>,
    /// Packet type names by id (from the definition).
    pub type_names: Vec<Option<String>>,
    pub malformed: Malformed,
    pub reassembly: ReassemblyReport,
    pub mtu: MtuReport,
    /// How the protocol was recovered when no id was given.
    pub identification: Option<crate::identify::Identification>,
    pub timeline: Timeline,
    /// Datagrams of flows past the flow table's cap, validated and counted together
    /// (no sequence or reassembly analysis); `capture.flows_not_tracked` of them.
    pub untracked: Option<FlowStats>,
    /// Sequence spaces counted per sender (one counter for all of a sender's flows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sender_spaces: Vec<crate::engine::SenderSpace>,
    /// The first datagram the description failed on (shards keep the earliest).
    #[serde(skip)]
    pub first_failure: Option<super::fit::FirstFailure>,
    /// Protocols that carry several messages per datagram: the messages by type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageReport>,
    /// Where the bits go, field by field (`analyze --bits` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<crate::sinks::bandwidth::BandwidthReport>,
    /// Decryption (a definition with `encryption`, run with keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decryption: Option<crate::decrypt::Report>,
    /// Protocols inside this one, outermost first, each with the report's sections.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerReport>,
}

/// One inner layer's report (`layers[]` in JSON): its name, then the usual sections.
#[derive(Debug, Clone, Serialize)]
pub struct LayerReport {
    pub name: String,
    #[serde(flatten)]
    pub report: Report,
}

/// The messages of valid datagrams (a malformed datagram's messages count up to the
/// fault: those read and the one that failed).
#[derive(Debug, Clone, Default, Serialize)]
pub struct MessageReport {
    pub total: u64,
    /// By type name (message types, `type N` for one the definition lacks).
    pub by_type: std::collections::BTreeMap<String, u64>,
    /// Datagrams by how many messages they carry.
    pub per_datagram: std::collections::BTreeMap<u32, u64>,
    /// Messages whose own header could not be read.
    pub unreadable: u64,
    /// Messages of streams past the cap on stream counters (no sequence analysis).
    #[serde(skip_serializing_if = "is_zero")]
    pub streams_not_tracked: u64,
    /// By type id while counting; `by_type` is made from it.
    #[serde(skip)]
    pub counts: Vec<u64>,
}

impl MessageReport {
    /// Counts one datagram's messages.
    pub fn add(&mut self, messages: &[crate::dissect::MessageInfo]) {
        self.total += messages.len() as u64;
        *self.per_datagram.entry(messages.len() as u32).or_default() += 1;
        for m in messages {
            match m.type_id {
                Some(t) => {
                    let t = t as usize;
                    if t >= self.counts.len() {
                        // Types are at most 2^16 (a type field of 16 bits).
                        self.counts.resize((t + 1).min(1 << 16), 0);
                    }
                    if let Some(n) = self.counts.get_mut(t) {
                        *n += 1;
                    }
                }
                None => self.unreadable += 1,
            }
        }
    }

    fn merge(&mut self, o: MessageReport) {
        self.total += o.total;
        self.unreadable += o.unreadable;
        self.streams_not_tracked += o.streams_not_tracked;
        add_map(&mut self.per_datagram, o.per_datagram);
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(o.counts) {
            *a += b;
        }
    }

    fn finalize(&mut self, p: &crate::dissect::Program) {
        self.by_type = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(t, n)| {
                let name = p.packet(t as u32).filter(|d| d.message).map_or_else(
                    || format!("type {}", (t as u32).saturating_sub(p.message_base)),
                    |d| d.name.clone(),
                );
                (name, *n)
            })
            .collect();
    }
}

/// Valid game datagrams and sequences lost, per second of capture time.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    pub start_ns: Option<i64>,
    pub seconds: Vec<Second>,
    /// The second [`Timeline::slot`] found last: the start it was found from, the offsets
    /// from it (ns) that fall in it, and its index. Frames come in time order, so most
    /// fall in it without a 64-bit division.
    #[serde(skip)]
    last: (i64, i64, i64, usize),
    /// The start before it was first moved back, and the earliest time given since:
    /// the seconds moved back past that time are trimmed at the end.
    #[serde(skip)]
    moved: Option<(i64, i64)>,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Second {
    pub datagrams: u64,
    pub lost: u64,
}

/// Seconds kept (a day); later traffic is not charted.
const TIMELINE_MAX: usize = 86_400;

impl Timeline {
    /// The bucket for a timestamp (None past the limit, before or after the start).
    pub fn slot(&mut self, ts_ns: i64) -> Option<&mut Second> {
        const NS: i64 = 1_000_000_000;
        let mut start = *self.start_ns.get_or_insert(ts_ns);
        if let Some((_, earliest)) = &mut self.moved {
            *earliest = (*earliest).min(ts_ns);
        }
        if ts_ns <= start.saturating_sub(NS) {
            // Earlier than the start (a clock stepped back): the start moves back.
            start = self.move_back(ts_ns)?;
        }
        let d = ts_ns.saturating_sub(start);
        let (from, lo, hi, at) = self.last;
        if from == start && d >= lo && d < hi {
            return self.seconds.get_mut(at);
        }
        let s = usize::try_from(d / NS).ok()?;
        if s >= TIMELINE_MAX {
            return None;
        }
        if self.seconds.len() <= s {
            self.seconds.resize(s + 1, Second::default());
        }
        // The offsets that divide to `s` (the division truncates: less than a second
        // before the start is second 0 too).
        let lo = if s == 0 { 1 - NS } else { s as i64 * NS };
        self.last = (start, lo, (s as i64 + 1) * NS, s);
        self.seconds.get_mut(s)
    }

    /// Moves the start back by whole seconds so that `ts_ns` falls in the timeline, at
    /// least doubling it (a clock stepping back second by second moves it rarely);
    /// `None` past the limit.
    fn move_back(&mut self, ts_ns: i64) -> Option<i64> {
        const NS: i64 = 1_000_000_000;
        let start = self.start_ns?;
        let d = start.checked_sub(ts_ns)?;
        let need = usize::try_from(d / NS + i64::from(d % NS != 0)).ok()?;
        let room = TIMELINE_MAX.checked_sub(self.seconds.len())?;
        if need > room {
            return None;
        }
        let (origin, earliest) = self.moved.unwrap_or((start, ts_ns));
        self.moved = Some((origin, earliest.min(ts_ns)));
        let by = need.max(self.seconds.len()).min(room);
        self.seconds
            .splice(0..0, std::iter::repeat_n(Second::default(), by));
        let start = start - by as i64 * NS;
        self.start_ns = Some(start);
        self.last = (0, 0, 0, 0);
        Some(start)
    }

    /// Adds a shard's seconds, its start aligned with this one's (shards start at one
    /// time and move back by whole seconds).
    fn merge(&mut self, o: Timeline) {
        const NS: i64 = 1_000_000_000;
        let Some(b) = o.start_ns else {
            return;
        };
        let a = *self.start_ns.get_or_insert(b);
        if b < a {
            // Moving back to another's start is no time given.
            let moved = self.moved;
            self.move_back(b);
            self.moved = moved.or(Some((a, a)));
        }
        self.moved = match (self.moved, o.moved) {
            (Some((x, e)), Some((y, f))) => Some((x.max(y), e.min(f))),
            (m, n) => m.or(n),
        };
        let start = self.start_ns.unwrap_or(b);
        let shift = usize::try_from((b - start) / NS).unwrap_or(0);
        let need = (shift + o.seconds.len()).min(TIMELINE_MAX);
        if self.seconds.len() < need {
            self.seconds.resize(need, Second::default());
        }
        for (x, y) in self.seconds.iter_mut().skip(shift).zip(o.seconds) {
            x.datagrams += y.datagrams;
            x.lost = x.lost.saturating_add(y.lost);
        }
        self.last = (0, 0, 0, 0);
    }

    /// Drops the seconds moved back past the earliest time given (at the end of a run).
    pub fn trim(&mut self) {
        const NS: i64 = 1_000_000_000;
        let (Some(start), Some((origin, earliest))) = (self.start_ns, self.moved.take()) else {
            return;
        };
        let extra = usize::try_from((earliest.min(origin) - start) / NS)
            .unwrap_or(0)
            .min(self.seconds.len());
        if extra > 0 {
            self.seconds.drain(..extra);
            self.start_ns = Some(start + extra as i64 * NS);
            self.last = (0, 0, 0, 0);
        }
    }
}

fn add_map<K: Ord + Clone>(a: &mut BTreeMap<K, u64>, b: BTreeMap<K, u64>) {
    for (k, v) in b {
        *a.entry(k).or_default() += v;
    }
}

/// Concatenates two lists kept in frame order, keeping the first `max`.
fn merge_listed<T>(a: &mut Vec<T>, b: Vec<T>, frame: impl Fn(&T) -> u64, max: usize) {
    a.extend(b);
    a.sort_by_key(|x| frame(x));
    a.truncate(max);
}

impl Report {
    /// Adds the counters of a shard's report (before `finalize`; flows are merged by the
    /// analyzer itself). Shards that left flows untracked are not merged: the run is
    /// done again on one core (`run::sharded`), so `untracked` is not added here.
    pub fn merge(&mut self, o: Report) {
        self.decryption = match (self.decryption.take(), o.decryption) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        self.capture.merge(o.capture);
        let (v, w) = (&mut self.validation, o.validation);
        v.examined += w.examined;
        v.crc_ok += w.crc_ok;
        v.crc_mismatch += w.crc_mismatch;
        v.too_short += w.too_short;
        v.crc_unverified += w.crc_unverified;
        v.truncated += w.truncated;
        add_map(&mut v.header_errors, w.header_errors);
        v.packets += w.packets;
        v.fragments += w.fragments;
        self.first_failure = match (self.first_failure.take(), o.first_failure) {
            (Some(a), Some(b)) => Some(if (b.file, b.frame) < (a.file, a.frame) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        };
        let m = &mut self.malformed;
        m.total += o.malformed.total;
        add_map(&mut m.by_cause, o.malformed.by_cause);
        merge_listed(&mut m.examples, o.malformed.examples, |e| e.frame, 20);
        let r = &mut self.reassembly;
        r.completed += o.reassembly.completed;
        r.dissected_ok += o.reassembly.dissected_ok;
        r.malformed += o.reassembly.malformed;
        r.crc_fail += o.reassembly.crc_fail;
        r.peak_bytes += o.reassembly.peak_bytes;
        r.attacks.add(&o.reassembly.attacks);
        r.single_fragment_messages += o.reassembly.single_fragment_messages;
        for (n, cs) in o.reassembly.by_count {
            r.by_count.entry(n).or_default().add(&cs);
        }
        self.mtu.merge(o.mtu);
        self.timeline.merge(o.timeline);
        match (&mut self.messages, o.messages) {
            (Some(a), Some(b)) => a.merge(b),
            (a, b) => *a = a.take().or(b),
        }
    }
}

impl CaptureSummary {
    /// Adds a shard's capture counters; files by position, times by their extremes.
    fn merge(&mut self, d: CaptureSummary) {
        let c = self;
        for (i, f) in d.files.into_iter().enumerate() {
            match c.files.get_mut(i) {
                Some(mine) => {
                    mine.frames += f.frames;
                    mine.first_ns = match (mine.first_ns, f.first_ns) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    mine.last_ns = mine.last_ns.max(f.last_ns);
                }
                None => c.files.push(f),
            }
        }
        c.frames += d.frames;
        c.bytes += d.bytes;
        c.wire_bytes += d.wire_bytes;
        c.first_ns = match (c.first_ns, d.first_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        c.last_ns = c.last_ns.max(d.last_ns);
        add_map(&mut c.link_types, d.link_types);
        c.snaplen_truncated += d.snaplen_truncated;
        add_map(&mut c.truncated_by_layer, d.truncated_by_layer);
        add_map(&mut c.decode_errors, d.decode_errors);
        add_map(&mut c.not_udp, d.not_udp);
        c.udp_datagrams += d.udp_datagrams;
        c.other_udp += d.other_udp;
        c.ip_fragments += d.ip_fragments;
        c.ip_reassembled += d.ip_reassembled;
        c.icmp_too_big += d.icmp_too_big;
        add_map(&mut c.vlans, d.vlans);
        c.flows_not_tracked += d.flows_not_tracked;
        c.acks_not_tracked += d.acks_not_tracked;
        c.time_went_back += d.time_went_back;
        c.acks_unmatched += d.acks_unmatched;
        c.burst_window_capped += d.burst_window_capped;
        c.ip_defrag.add(&d.ip_defrag);
    }
}

impl MtuReport {
    /// Adds a shard's MTU findings, the lists kept in frame order.
    fn merge(&mut self, n: MtuReport) {
        let m = self;
        m.over_budget += n.over_budget;
        m.over_link_mtu += n.over_link_mtu;
        m.df_over_link_mtu += n.df_over_link_mtu;
        m.ip_fragmented += n.ip_fragmented;
        m.ip_fragmented_within_link_mtu += n.ip_fragmented_within_link_mtu;
        m.fragment_mtu = m.fragment_mtu.max(n.fragment_mtu);
        merge_listed(&mut m.ip_fragmented_list, n.ip_fragmented_list, |x| x.frame, 1000);
        m.fragments_over_size += n.fragments_over_size;
        m.icmp_total += n.icmp_total;
        merge_listed(&mut m.icmp, n.icmp, |x| x.frame, 1000);
        m.df_over_path_mtu += n.df_over_path_mtu;
        m.gaps += n.gaps;
        m.gaps_after_path_mtu += n.gaps_after_path_mtu;
    }
}

/// Wilson score interval for `k` successes in `n` trials at 95%.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_985_f64;
    let n = n as f64;
    let p = k as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// `1 - (1 - p)^n`: the chance a packet of `n` fragments loses at least one.
pub fn predicted_loss(p: f64, n: u32) -> f64 {
    1.0 - (1.0 - p).powi(n as i32)
}

impl Report {
    /// Decides which end of each conversation is the client from the packet types the
    /// definition declares `from=client` or `from=server`, over both directions; packets
    /// against that decision are counted as wrong-direction. A tie decides nothing.
    fn directions(&mut self) {
        use crate::dissect::program::Side;
        let index: std::collections::HashMap<(SocketAddr, SocketAddr), usize> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.src, f.dst), i))
            .collect();
        let mut total = 0;
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            let back = index.get(&(f.dst, f.src)).map(|&j| &self.flows[j]);
            let (back_client, back_server) = back.map_or((0, 0), |b| (b.from_client, b.from_server));
            // Votes for "this flow's source is the client", and for "it is the server".
            let client = f.from_client + back_server;
            let server = f.from_server + back_client;
            let (role, wrong) = match client.cmp(&server) {
                std::cmp::Ordering::Greater => (Some(Side::Client), f.from_server),
                std::cmp::Ordering::Less => (Some(Side::Server), f.from_client),
                std::cmp::Ordering::Equal => (None, 0),
            };
            let f = &mut self.flows[i];
            f.role = role;
            f.wrong_direction = wrong;
            total += wrong;
        }
        self.validation.wrong_direction = total;
    }

    pub(crate) fn finalize(&mut self, cfg: &Config) {
        self.schema = SCHEMA_VERSION;
        self.timeline.trim();
        let c = &mut self.capture;
        if let (Some(a), Some(b)) = (c.first_ns, c.last_ns) {
            c.duration_s = b.saturating_sub(a) as f64 / 1e9;
        }
        self.mtu.ip_never_reassembled = c.ip_defrag.incomplete;
        if let Some(p) = &cfg.program {
            self.type_names = (0..p.params.format.num_types)
                .map(|t| p.type_name(t).map(str::to_string))
                .collect();
            if let Some(m) = &mut self.messages {
                m.finalize(p);
            }
        }
        self.directions();
        let single = self.flow_rates();
        self.count_apart(cfg.sequence_bits());
        let r = &mut self.reassembly;
        r.add_up(single);
        r.finding = amplification_finding(r);
        self.judge_fit(cfg.sequence_bits());
    }

    /// Each flow's duration, rates and size percentiles; returns the single-datagram
    /// loss from sequence gaps (lost, of, on which flows).
    fn flow_rates(&mut self) -> (u64, u64, LossScope) {
        // Single-datagram loss from sequence gaps: on the fragmenting flows when they also
        // send whole packets, else on the flows that never fragment.
        let mut same = (0u64, 0u64);
        let mut other = (0u64, 0u64);
        for f in &mut self.flows {
            if let (Some(a), Some(b)) = (f.first_ns, f.last_ns) {
                f.duration_s = b.saturating_sub(a).max(0) as f64 / 1e9;
            }
            if f.duration_s > 0.0 {
                f.packets_per_s = f.datagrams as f64 / f.duration_s;
                f.bits_per_s = f.bytes as f64 * 8.0 / f.duration_s;
            }
            f.sizes = Percentiles {
                p50: f.size_hist.quantile(0.50),
                p95: f.size_hist.quantile(0.95),
                p99: f.size_hist.quantile(0.99),
                max: f.size_hist.max,
            };
            // A gap is counted as a lost single datagram: a packet whose every fragment
            // was lost leaves the same gap and cannot be told apart.
            let gaps = (f.seq.lost, f.seq.lost + f.seq.single);
            if f.fragments > 0 && f.crc_ok > f.fragments {
                same = (same.0 + gaps.0, same.1 + gaps.1);
            } else if f.fragments == 0 && f.crc_ok > 0 {
                other = (other.0 + gaps.0, other.1 + gaps.1);
            }
        }
        if same.1 > 0 {
            (same.0, same.1, LossScope::SameFlows)
        } else {
            (other.0, other.1, LossScope::NeverFragmenting)
        }
    }

    /// Takes the fragmented packets of flows that do not fit (`seq_bits` wide
    /// sequences) out of the amplification table, into `counted_apart`.
    fn count_apart(&mut self, seq_bits: u32) {
        // Flows whose sequence or fragment fields do not fit are counted apart: their
        // "lost" packets are refused fragments or misread fields, not loss.
        let r = &mut self.reassembly;
        for f in &self.flows {
            // Only where the packets mostly never complete: a filtered capture's flows
            // skip sequences, but their fragments still join.
            if !super::fit::counted_apart(f, seq_bits) {
                continue;
            }
            let apart = &mut r.counted_apart;
            apart.flows += 1;
            for (n, cs) in &f.reassembly {
                apart.packets += cs.seen;
                apart.fragments_received += *n as u64 * cs.completed + cs.fragments_of_lost;
                if let Some(all) = r.by_count.get_mut(n) {
                    all.seen = all.seen.saturating_sub(cs.seen);
                    all.completed = all.completed.saturating_sub(cs.completed);
                    all.fragments_of_lost = all.fragments_of_lost.saturating_sub(cs.fragments_of_lost);
                    all.bytes_wasted = all.bytes_wasted.saturating_sub(cs.bytes_wasted);
                }
            }
        }
    }

    /// Judges the fit and holds back the findings built on loss when it is not good.
    fn judge_fit(&mut self, seq_bits: u32) {
        self.fit = super::fit::Fit::of(self, seq_bits);
        if self.fit.is_good() {
            return;
        }
        if let Some(f) = self.reassembly.finding.take() {
            self.fit.suppressed.push(f);
        }
        if let Some(f) = self.mtu.bursts.finding.take() {
            self.fit.suppressed.push(f);
        }
    }
}

/// A finding rests on at least this many packets on each side of the comparison.
pub const MIN_SAMPLE: u64 = 20;

/// The plain-language finding, when fragmented packets are lost more than single ones:
/// from the smallest fragment count whose packets (that count and more) are lost at
/// least twice as often as the baseline, on at least `MIN_SAMPLE` packets of each, with
/// the group's 95% Wilson interval above the baseline's.
fn amplification_finding(r: &ReassemblyReport) -> Option<String> {
    let lost: u64 = r.rows.iter().map(|x| x.lost).sum();
    if r.packets_seen == 0 || lost == 0 {
        return None;
    }
    let (base, base_n, base_k, against) = if r.single_loss > 0.0 {
        (r.single_loss, r.single_total, r.single_lost, "single datagrams")
    } else {
        let missing = r.fragments_expected.saturating_sub(r.fragments_received);
        (r.fragment_loss, r.fragments_expected, missing, "single fragments")
    };
    if base <= 0.0 || base_n < MIN_SAMPLE {
        return None;
    }
    let (_, base_high) = wilson(base_k, base_n);
    let (from, seen, lost) = r.rows.iter().find_map(|x| {
        let (seen, lost) = r
            .rows
            .iter()
            .filter(|y| y.fragments >= x.fragments)
            .fold((0, 0), |(s, l), y| (s + y.seen, l + y.lost));
        let observed = lost as f64 / seen.max(1) as f64;
        let (low, _) = wilson(lost, seen);
        (seen >= MIN_SAMPLE && observed >= 2.0 * base && low > base_high).then_some((x.fragments, seen, lost))
    })?;
    let observed = lost as f64 / seen as f64;
    let (low, high) = wilson(lost, seen);
    Some(format!(
        "packets of {from}+ fragments were lost {:.1}× as often as {against} ({:.1}%, {lost} of {seen} packets, 95% CI {:.1}–{:.1}%, vs {:.1}% of {base_n}); keep them under the MTU budget or send them reliably",
        observed / base,
        observed * 100.0,
        low * 100.0,
        high * 100.0,
        base * 100.0
    ))
}

/// What a capture holds when no game protocol was found in it: the capture summary and
/// its UDP conversations, counted without any protocol's validation.
#[derive(Debug, Clone, Serialize)]
pub struct Conversations {
    pub schema: u32,
    /// Always null: no protocol id validated the traffic.
    pub protocol: Option<()>,
    pub note: String,
    pub capture: CaptureSummary,
    pub identification: Option<crate::identify::Identification>,
    /// By datagrams, the busiest first.
    pub conversations: Vec<Conversation>,
}

/// A flow seen without a protocol: serialised with only the fields that do not depend
/// on one (what was sent, when, how large).
#[derive(Debug, Clone)]
pub struct Conversation(pub FlowStats);

impl ReassemblyReport {
    /// The totals over fragment counts, the baseline single-datagram loss (`single`:
    /// lost, of, on which flows), and one row per fragment count.
    fn add_up(&mut self, single: (u64, u64, LossScope)) {
        let r = self;
        r.by_count.retain(|_, s| s.seen > 0);
        for (&n, s) in &r.by_count {
            r.packets_seen += s.seen;
            r.fragments_expected += n as u64 * s.seen;
            r.fragments_received += n as u64 * s.completed + s.fragments_of_lost;
            r.bytes_wasted += s.bytes_wasted;
        }
        r.fragment_loss = if r.fragments_expected > 0 {
            r.fragments_expected.saturating_sub(r.fragments_received) as f64 / r.fragments_expected as f64
        } else {
            0.0
        };
        let (seq_lost, seq_total, scope) = single;
        r.single_lost = seq_lost;
        r.single_total = seq_total;
        r.single_loss = if seq_total > 0 {
            seq_lost as f64 / seq_total as f64
        } else {
            0.0
        };
        r.single_loss_scope = scope;
        let p = r.fragment_loss;
        r.rows = r
            .by_count
            .iter()
            .map(|(&n, s)| {
                let lost = s.lost();
                let observed = if s.seen > 0 {
                    lost as f64 / s.seen as f64
                } else {
                    0.0
                };
                let (lo, hi) = wilson(lost, s.seen);
                CountRow {
                    fragments: n,
                    seen: s.seen,
                    completed: s.completed,
                    lost,
                    observed_loss: observed,
                    observed_low: lo,
                    observed_high: hi,
                    predicted_loss: predicted_loss(p, n),
                    // From fewer packets than a finding needs, a ratio says nothing (one
                    // lost packet of one made 50×).
                    amplification: (r.single_loss > 0.0 && s.seen >= MIN_SAMPLE)
                        .then(|| observed / r.single_loss),
                    bytes_wasted: s.bytes_wasted,
                }
            })
            .collect();
    }
}

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
            &crate::decode::services::service(f.src.port(), f.dst.port()),
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

#[cfg(test)]
mod tests {
    use super::{LossScope, Timeline};

    /// The scope keeps, in JSON, the words it had when it was a string.
    #[test]
    fn the_loss_scope_serializes_as_its_old_words() {
        let json = |s| serde_json::to_string(&s).unwrap();
        assert_eq!(json(LossScope::None), r#""""#);
        assert_eq!(json(LossScope::SameFlows), r#""same flows""#);
        assert_eq!(
            json(LossScope::NeverFragmenting),
            r#""flows that never fragment""#
        );
    }

    /// The second a timestamp falls in, remembered or not, is the one the division gives:
    /// in order, out of order, less than a second before the start, long before it, past
    /// the day kept, and after the start moved.
    #[test]
    fn a_remembered_second_is_the_divided_one() {
        const NS: i64 = 1_000_000_000;
        let start = 5 * NS + 123;
        let offsets = [
            0,
            1,
            NS - 1,
            NS,
            NS + 7,
            -1,
            1 - NS,
            -NS,
            -5 * NS,
            3 * NS,
            NS - 1,
            2 * NS,
            86_399 * NS,
            86_400 * NS,
            0,
            i64::MIN / 2,
        ];
        let mut t = Timeline {
            start_ns: Some(start),
            ..Timeline::default()
        };
        for (i, d) in offsets.into_iter().enumerate() {
            let hit = t.slot(start + d).map(|s| s.datagrams += 1 << i).is_some();
            // Earlier than the start moves it back by whole seconds (a day at most).
            let now = t.start_ns.unwrap();
            let want = usize::try_from((start + d - now) / NS)
                .ok()
                .filter(|&s| s < super::TIMELINE_MAX);
            assert_eq!(hit, want.is_some(), "offset {d}");
            let got = want.map(|s| t.seconds[s].datagrams >> i & 1);
            assert_eq!(got, want.map(|_| 1), "offset {d}");
        }
        // Another start (shards set it before reading): nothing remembered from the old one.
        t.start_ns = Some(start + NS);
        let before = t.seconds[0].datagrams;
        t.slot(start + NS + 10).unwrap().datagrams += 1;
        assert_eq!(t.seconds[0].datagrams, before + 1);
    }
}
