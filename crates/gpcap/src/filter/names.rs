//! The built-in names: fields, flags, and the nearest of them to a slip.

use super::*;

pub(super) const BUILTIN_FIELDS: &str = "type seq size frame time gap rtt frag.id frag.count ack ack_bits frame.len frame.cap_len udp.srcport udp.dstport udp.port udp.length ip.src ip.dst ip.addr ip.ttl ip.flags.df eth.src vlan.id (and Wireshark's other eth/vlan/ip/ipv6/udp header fields)";
pub(super) const FLAGS: &str = "crc_ok crc_mismatch too_short crc.fail frag reassembled ip_fragmented malformed over_budget truncated game late dup gap replayed mac_failure eth vlan ip ipv6 udp";

/// Built-in names compared with a value, for "did you mean".
pub(super) const FIELD_NAMES: &[&str] = &[
    "type",
    "seq",
    "size",
    "frame",
    "time",
    "gap",
    "frag.id",
    "frag.count",
    "ack",
    "ack_bits",
    "udp.srcport",
    "udp.dstport",
    "udp.port",
    "udp.length",
    "ip.src",
    "ip.dst",
    "ip.addr",
    "frame.number",
    "frame.len",
    "frame.cap_len",
    "frame.time_relative",
    "frame.time_epoch",
    "rtt",
];
/// Built-in names that stand alone (flags, and the address words).
pub(super) const FLAG_NAMES: &[&str] = &[
    "crc_mismatch",
    "crc_ok",
    "too_short",
    "crc.fail",
    "frag",
    "reassembled",
    "ip_fragmented",
    "malformed",
    "over_budget",
    "truncated",
    "game",
    "late",
    "dup",
    "gap",
    "never_acked",
    "retransmission",
    "spurious",
    "naked",
    "replayed",
    "mac_failure",
    "udp",
    "ip",
    "ipv6",
    "flow",
    "src",
    "dst",
];

/// The name of `names` nearest to `word`, when it is near enough to be a slip.
pub(super) fn closest(names: &[&'static str], word: &str) -> Option<&'static str> {
    names
        .iter()
        .map(|n| (gpcap_dissect::paths::distance(n, word), *n))
        .filter(|(_, n)| wire::plausible(word, n))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// A flag by any of its names.
pub(super) fn flag_named(word: &str) -> Option<Flag> {
    Some(match word {
        "crc.fail" | "crc.bad" => Flag::CrcFail,
        "crc_mismatch" => Flag::CrcMismatch,
        "too_short" => Flag::TooShort,
        "crc_ok" | "crc.ok" | "ok" => Flag::CrcOk,
        "frag" | "fragment" => Flag::Frag,
        "ip_fragmented" | "ipfrag" | "ip.frag" => Flag::IpFrag,
        "malformed" => Flag::Malformed,
        "over-budget" | "over_budget" | "oversize" => Flag::OverBudget,
        "truncated" => Flag::Truncated,
        "game" => Flag::Game,
        "reassembled" => Flag::Reassembled,
        "late" => Flag::Late,
        "dup" | "duplicate" => Flag::Dup,
        "gap" => Flag::Gap,
        "never_acked" | "never-acked" => Flag::NeverAcked,
        "retransmission" | "retransmitted" => Flag::Retransmission,
        "spurious" | "spurious_retransmission" => Flag::Spurious,
        "naked" | "nak" | "naked_sequence" => Flag::Naked,
        "replayed" | "replay" => Flag::Replayed,
        "mac_failure" | "mac-failure" => Flag::MacFailure,
        "udp" => Flag::Udp,
        "ip" => Flag::Ipv4,
        "ipv6" => Flag::Ipv6,
        _ => return None,
    })
}
