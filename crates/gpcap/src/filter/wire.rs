//! Wireshark's names for what the frame's own headers hold — `eth.src`, `vlan.id`,
//! `ip.ttl`, `ip.flags.df`, `ipv6.hlim`, `udp.length`, `udp.checksum` — read from the
//! captured bytes ([`gpcap_wire::decode::headers`]) when a filter names them; and `matches`,
//! a regular expression over text and bytes (case-insensitive, as Wireshark's).

use super::{Cmp, Net, ordered};
use gpcap_engine::PacketEvent;
use gpcap_wire::decode::headers::{self, HeaderValue};

/// What a header field holds, for the values a filter may compare it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Holds {
    Num,
    Mac,
}

/// Every header field a filter may name (the addresses and ports of the flow are the
/// filter's own words: `ip.src`, `udp.srcport`…), and the protocol words of the headers.
pub(super) const HEADER_FIELDS: &[(&str, Holds)] = &[
    ("eth.dst", Holds::Mac),
    ("eth.src", Holds::Mac),
    ("eth.addr", Holds::Mac),
    ("eth.type", Holds::Num),
    ("vlan.priority", Holds::Num),
    ("vlan.dei", Holds::Num),
    ("vlan.id", Holds::Num),
    ("vlan.etype", Holds::Num),
    ("sll.pkttype", Holds::Num),
    ("sll.hatype", Holds::Num),
    ("sll.halen", Holds::Num),
    ("sll.etype", Holds::Num),
    ("sll.ifindex", Holds::Num),
    ("null.family", Holds::Num),
    ("ip.version", Holds::Num),
    ("ip.hdr_len", Holds::Num),
    ("ip.dsfield", Holds::Num),
    ("ip.dsfield.dscp", Holds::Num),
    ("ip.dsfield.ecn", Holds::Num),
    ("ip.len", Holds::Num),
    ("ip.id", Holds::Num),
    ("ip.flags", Holds::Num),
    ("ip.flags.rb", Holds::Num),
    ("ip.flags.df", Holds::Num),
    ("ip.flags.mf", Holds::Num),
    ("ip.frag_offset", Holds::Num),
    ("ip.ttl", Holds::Num),
    ("ip.proto", Holds::Num),
    ("ip.checksum", Holds::Num),
    ("ipv6.version", Holds::Num),
    ("ipv6.tclass", Holds::Num),
    ("ipv6.flow", Holds::Num),
    ("ipv6.plen", Holds::Num),
    ("ipv6.nxt", Holds::Num),
    ("ipv6.hlim", Holds::Num),
    ("udp.length", Holds::Num),
    ("udp.checksum", Holds::Num),
];

/// The headers' protocol words a filter may test alone (`eth`, `vlan`, `sll`).
pub(super) const HEADER_WORDS: &[&str] = &["eth", "vlan", "sll"];

/// The header field a word names.
pub(super) fn header_field(word: &str) -> Option<(&'static str, Holds)> {
    HEADER_FIELDS.iter().find(|(n, _)| *n == word).copied()
}

/// A test of a header field.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum HeaderTest {
    /// The frame has the field.
    Exists,
    Num(Cmp, i128),
    /// Any of these ranges (`in {…}`).
    NumIn(Vec<(i128, i128)>),
    /// `==` or `!=` a MAC address.
    Mac(Cmp, [u8; 6]),
    MacIn(Vec<[u8; 6]>),
}

/// A header field's value in `e`'s frame: `eth.addr` either end; `udp.length` of a
/// datagram rebuilt from IP fragments (whose UDP header is in the first fragment, not
/// the frame that completed it) is its payload and 8 bytes.
fn values(e: &PacketEvent, name: &'static str, out: &mut [Option<HeaderValue>; 2]) {
    let get = |n: &str| headers::value(e.linktype, e.frame_data, n);
    *out = match name {
        "eth.addr" => [get("eth.src"), get("eth.dst")],
        "udp.length" => [
            get(name).or_else(|| {
                (e.ip_fragments > 1 && e.flow.is_some() && !e.truncated)
                    .then(|| HeaderValue::Num(e.size as u64 + 8))
            }),
            None,
        ],
        _ => [get(name), None],
    };
}

/// Wireshark's semantics: any occurrence satisfies, `!=` none is equal.
pub(super) fn eval(name: &'static str, t: &HeaderTest, e: &PacketEvent) -> bool {
    let mut vs = [None, None];
    values(e, name, &mut vs);
    let present = || vs.iter().flatten();
    let num = |v: &HeaderValue| match v {
        HeaderValue::Num(n) => Some(*n as i128),
        _ => None,
    };
    let mac = |v: &HeaderValue| match v {
        HeaderValue::Mac(m) => Some(*m),
        _ => None,
    };
    match t {
        HeaderTest::Exists => present().next().is_some(),
        HeaderTest::Num(Cmp::Ne, x) => !present().filter_map(num).any(|v| v == *x),
        HeaderTest::Num(cmp, x) => present().filter_map(num).any(|v| ordered(*cmp, v.cmp(x))),
        HeaderTest::NumIn(ranges) => present()
            .filter_map(num)
            .any(|v| ranges.iter().any(|(a, b)| (*a..=*b).contains(&v))),
        HeaderTest::Mac(Cmp::Ne, m) => !present().filter_map(mac).any(|v| v == *m),
        HeaderTest::Mac(_, m) => present().filter_map(mac).any(|v| v == *m),
        HeaderTest::MacIn(ms) => present().filter_map(mac).any(|v| ms.contains(&v)),
    }
}

/// `aa:bb:cc:dd:ee:ff` (or with `-` or `.` between the bytes).
pub(super) fn parse_mac(v: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = v.split([':', '-', '.']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (k, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        m[k] = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

/// An address set member for `ip.addr in {…}`.
pub(super) fn parse_net(v: &str) -> Option<Net> {
    match v.split_once('/') {
        Some((ip, bits)) => Net::new(ip.parse().ok()?, bits.parse().ok()?),
        None => Some(Net::host(
            v.trim_start_matches('[').trim_end_matches(']').parse().ok()?,
        )),
    }
}

/// A compiled `matches` pattern, compared by its text.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    pub text: String,
    pub re: regex::bytes::Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// The most a pattern may compile to: a hostile filter cannot take the memory.
const PATTERN_LIMIT: usize = 1 << 20;

impl Pattern {
    /// Compiles a regular expression, case-insensitive as Wireshark's `matches` (`(?-i)`
    /// in front makes it sensitive).
    pub fn new(text: &str) -> Result<Pattern, String> {
        regex::bytes::RegexBuilder::new(text)
            .case_insensitive(true)
            .size_limit(PATTERN_LIMIT)
            .dfa_size_limit(PATTERN_LIMIT)
            .build()
            .map(|re| Pattern {
                text: text.to_string(),
                re,
            })
            .map_err(|e| match e {
                regex::Error::Syntax(s) => {
                    let first = s.lines().last().unwrap_or("").trim().to_string();
                    format!("`{text}` is not a regular expression: {first}")
                }
                regex::Error::CompiledTooBig(_) => {
                    format!("`{text}` is a regular expression too large to compile (over 1 MiB)")
                }
                _ => format!("`{text}` is not a regular expression"),
            })
    }
}

/// Whether a suggestion is near enough to be a slip rather than another word: fewer
/// edits than half the longer name, two letters swapped counting as one (`gpa` → `gap`,
/// `scen` → `scene`, never `t` for `eth`).
pub(super) fn plausible(word: &str, suggestion: &str) -> bool {
    let d = slips(word, suggestion);
    let longer = word.chars().count().max(suggestion.chars().count());
    2 * d < longer
}

/// Edits between two names — insertions, deletions, substitutions and swaps of two
/// neighbours (optimal string alignment), bounded to short names.
fn slips(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().take(128).collect(), b.chars().take(128).collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn plausible_slips() {
        use super::plausible;
        assert!(plausible("gpa", "gap") && plausible("scen", "scene") && plausible("sizee", "size"));
        assert!(!plausible("eth", "t") && !plausible("scen", "seq") && !plausible("xq", "t"));
    }
}
