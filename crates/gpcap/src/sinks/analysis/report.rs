//! The analysis result: plain data, serialised as the `--json` schema (docs/json.md) and
//! rendered as tables by the CLI and TUI.

pub use gpcap_engine::FlowId;
use gpcap_engine::reassembly::{AttackCounters, CountStats};
use gpcap_engine::seq::SeqStats;
use gpcap_wire::capture::CaptureError;
use gpcap_wire::decode::DefragStats;
use gpcap_wire::validate::ProtocolId;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

mod flows;
mod messages;
mod mtu;
mod sizes;
#[cfg(test)]
mod tests;
mod timeline;
mod verdict;
pub use flows::*;
pub use messages::*;
pub use mtu::*;
pub use sizes::*;
pub use timeline::*;
pub use verdict::*;

/// JSON schema version; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
    #[serde(skip_serializing_if = "gpcap_dissect::program::Checksum::is_crc32")]
    pub checksum: gpcap_dissect::program::Checksum,
    /// A checksum declared field by field, in words (`checksum` is "field").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum_rule: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
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

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct CountedApart {
    pub flows: u64,
    pub packets: u64,
    pub fragments_received: u64,
}

#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct MalformedExample {
    pub frame: u64,
    pub flow: FlowId,
    pub cause: String,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Malformed {
    pub total: u64,
    pub by_cause: BTreeMap<String, u64>,
    pub examples: Vec<MalformedExample>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Report {
    pub schema: u32,
    /// How well the description fits the traffic (docs/json.md, `fit`).
    pub fit: Fit,
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
    pub identification: Option<gpcap_engine::identify::Identification>,
    pub timeline: Timeline,
    /// Datagrams of flows past the flow table's cap, validated and counted together
    /// (no sequence or reassembly analysis); `capture.flows_not_tracked` of them.
    pub untracked: Option<FlowStats>,
    /// Sequence spaces counted per sender (one counter for all of a sender's flows).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sender_spaces: Vec<gpcap_engine::SenderSpace>,
    /// The first datagram the description failed on (shards keep the earliest).
    #[serde(skip)]
    pub first_failure: Option<FirstFailure>,
    /// Protocols that carry several messages per datagram: the messages by type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageReport>,
    /// Where the bits go, field by field (`analyze --bits` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<crate::sinks::bandwidth::BandwidthReport>,
    /// Decryption (a definition with `encryption`, run with keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decryption: Option<gpcap_decrypt::Report>,
    /// Protocols inside this one, outermost first, each with the report's sections.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerReport>,
}

/// One inner layer's report (`layers[]` in JSON): its name, then the usual sections.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct LayerReport {
    pub name: String,
    #[serde(flatten)]
    pub report: Report,
}

fn add_map<K: Ord + Clone>(a: &mut BTreeMap<K, u64>, b: BTreeMap<K, u64>) {
    for (k, v) in b {
        *a.entry(k).or_default() += v;
    }
}

/// Concatenates two lists kept in frame order, keeping the first `max`.
/// Examples of malformed packets kept (counts are exact beyond).
pub(in crate::sinks::analysis) const MALFORMED_EXAMPLES: usize = 20;

fn merge_listed<T>(a: &mut Vec<T>, b: Vec<T>, frame: impl Fn(&T) -> u64, max: usize) {
    a.extend(b);
    a.sort_by_key(|x| frame(x));
    a.truncate(max);
}

impl Report {
    /// Adds the counters of a shard's report (before `finalize`; flows are merged by the
    /// analyzer itself). Shards that left flows untracked are not merged: the run is
    /// done again on one core (`run::sharded`), so `untracked` is not added here. Inside
    /// `Statistics` the sections its taps count (validation, faults, first failure,
    /// reassembly, MTU) are still empty when shards merge: the taps merge themselves.
    pub fn merge(&mut self, o: Report) {
        self.decryption = match (self.decryption.take(), o.decryption) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        self.capture.merge(o.capture);
        self.validation.merge(o.validation);
        self.first_failure = earliest(self.first_failure.take(), o.first_failure);
        self.malformed.merge(o.malformed);
        self.reassembly.merge(o.reassembly);
        self.mtu.merge(o.mtu);
        self.timeline.merge(o.timeline);
        match (&mut self.messages, o.messages) {
            (Some(a), Some(b)) => a.merge(b),
            (a, b) => *a = a.take().or(b),
        }
    }
}

/// The earlier of two shards' first failures.
pub(in crate::sinks::analysis) fn earliest(
    a: Option<FirstFailure>,
    b: Option<FirstFailure>,
) -> Option<FirstFailure> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (b.file, b.frame) < (a.file, a.frame) {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

impl Validation {
    /// Adds a shard's verdict counts.
    pub(in crate::sinks::analysis) fn merge(&mut self, w: Validation) {
        let v = self;
        v.examined += w.examined;
        v.crc_ok += w.crc_ok;
        v.crc_mismatch += w.crc_mismatch;
        v.too_short += w.too_short;
        v.crc_unverified += w.crc_unverified;
        v.truncated += w.truncated;
        add_map(&mut v.header_errors, w.header_errors);
        v.packets += w.packets;
        v.fragments += w.fragments;
    }
}

impl Malformed {
    /// Adds a shard's faults; the examples kept are the earliest.
    pub(in crate::sinks::analysis) fn merge(&mut self, o: Malformed) {
        self.total += o.total;
        add_map(&mut self.by_cause, o.by_cause);
        merge_listed(&mut self.examples, o.examples, |e| e.frame, MALFORMED_EXAMPLES);
    }
}

impl ReassemblyReport {
    /// Adds a shard's reassembled packets, refusals and fragment counts.
    pub(in crate::sinks::analysis) fn merge(&mut self, o: ReassemblyReport) {
        let r = self;
        r.completed += o.completed;
        r.dissected_ok += o.dissected_ok;
        r.malformed += o.malformed;
        r.crc_fail += o.crc_fail;
        r.peak_bytes += o.peak_bytes;
        r.attacks.add(&o.attacks);
        r.single_fragment_messages += o.single_fragment_messages;
        for (n, cs) in o.by_count {
            r.by_count.entry(n).or_default().add(&cs);
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
