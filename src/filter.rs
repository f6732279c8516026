//! The display filter shared by the TUI's `/` bar, `gpcap dissect --filter` and live
//! capture: `type == scene`, `seq > 100`, `crc.fail`, `frag`, `reassembled`,
//! `size > 1200`, `flow 10.0.0.1:40000`, `src 10.0.0.1`, `dst 10.0.0.2:50000`,
//! `time > 5`, what the sequence analysis found (`late`, `dup`, `gap`, `gap > 3`) and the
//! ack analysis settled (`never_acked`, `rtt > 50`: after a pass of their own),
//! Wireshark's names (`ip.src`, `udp.dstport`, `frame.number`, `frame.time_relative`),
//! and any dissected field by its path (`scene.objects.at_rest == true`,
//! `input.weapon == railgun`, `chat.text contains "gg"`), combined with `&&`/`and`,
//! `||`/`or`, `!`/`not` and parentheses. Compiled once against the definition; it reads
//! the engine's [`PacketEvent`], the one packet model, so a flag it tests is the very
//! verdict `analyze` counted.
//!
//! A path names every occurrence of a field (`objects.position.x`: each object's), or one
//! (`objects[3].position.x`). As in Wireshark, a comparison holds when any occurrence
//! satisfies it and `!=` when none is equal (`!(a == b)`); `all PATH OP VALUE` asks every
//! occurrence (and at least one). Floats compare at their resolution: a compressed float
//! equals a value within half its step, an f32 equals the value rounded to f32.

use crate::analysis::acks::{AckFacts, CopyVerdict, Settled};
use crate::dissect::paths::{Holds, PathInfo, Step, catalog, is_occurrence, nearest, steps, strip_indices};
use crate::dissect::{Dissection, FaultKind, Program, Value};
use crate::engine::seq::SeqEvent;
use crate::engine::{Kind, PacketEvent};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

mod layers;
mod wire;
pub use layers::Stacked;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Type,
    Seq,
    Size,
    Frame,
    FragId,
    FragCount,
    /// The ack role of the packet (needs the engine: the index has no acks).
    Ack,
    AckBits,
    SrcPort,
    DstPort,
    /// Either port (`udp.port`): any end satisfies, `!=` none is equal.
    Port,
    /// The frame's bytes on the wire and as captured (`frame.len`, `frame.cap_len`).
    FrameLen,
    CapLen,
    /// Nanoseconds since the first frame of the run.
    Time,
    /// Nanoseconds since the Unix epoch (UTC).
    Epoch,
    /// Sequences skipped just before this datagram (0 for an in-order one).
    Gap,
    /// The round trip of the packet's sequence to the first ack of it, in µs.
    Rtt,
    /// Sequences of a message's stream skipped just before it: any message's satisfies.
    StreamGap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    /// A CRC mismatch or a datagram too short for a CRC (`crc.fail`).
    CrcFail,
    /// A CRC mismatch (`crc_mismatch`, as analyze counts it), and too short for one.
    CrcMismatch,
    TooShort,
    CrcOk,
    Frag,
    IpFrag,
    Malformed,
    OverBudget,
    Truncated,
    Game,
    Reassembled,
    /// Arrived after a newer sequence of its flow (the analysis' `late`).
    Late,
    /// A sequence that had already arrived (`dup`).
    Dup,
    /// Sequences were skipped just before this one (`gap`).
    Gap,
    /// A message of the datagram has that verdict in its stream (`late`, `dup`, `gap`
    /// with a definition that declares message streams).
    StreamLate,
    StreamDup,
    StreamGap,
    /// The peer acked newer sequences but never this one (`never_acked`).
    NeverAcked,
    /// A further copy of a sequence already captured (`retransmission`), one sent after
    /// its ack was seen (`spurious`), a sequence the peer NAKed (`naked`): the ack
    /// analysis' verdicts on the datagram's sequence or any of its messages'.
    Retransmission,
    Spurious,
    Naked,
    /// An encrypted packet that opened but was a replay (`replayed`).
    Replayed,
    /// An encrypted body whose MAC failed (`mac_failure`).
    MacFailure,
    /// Wireshark's protocol words: `udp` (every datagram has it), `ip` (IPv4), `ipv6`.
    Udp,
    Ipv4,
    Ipv6,
}

/// An address, or a network: the addresses whose first `prefix` bits are its own.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Net {
    ip: IpAddr,
    prefix: u8,
}

impl Net {
    fn host(ip: IpAddr) -> Net {
        let prefix = if ip.is_ipv4() { 32 } else { 128 };
        Net { ip, prefix }
    }

    /// `ip/prefix`, when the prefix fits the address's family.
    fn new(ip: IpAddr, prefix: u8) -> Option<Net> {
        (prefix <= Net::host(ip).prefix).then_some(Net { ip, prefix })
    }

    /// Whether `a` is this address, or in this network (same family).
    fn holds(&self, a: IpAddr) -> bool {
        let keep = |bits: u32, x: u128| match self.prefix {
            0 => 0,
            p => x >> (bits - p as u32),
        };
        match (self.ip, a) {
            (IpAddr::V4(n), IpAddr::V4(a)) => keep(32, u32::from(n).into()) == keep(32, u32::from(a).into()),
            (IpAddr::V6(n), IpAddr::V6(a)) => keep(128, n.into()) == keep(128, a.into()),
            _ => false,
        }
    }
}

/// Which end of a datagram an address test looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Src,
    Dst,
    Either,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Compare(Field, Cmp, i128),
    /// `FIELD in {a b c..d}`: any of the ranges.
    In(Field, Vec<(i128, i128)>),
    /// A field of the frame's own headers (`ip.ttl`, `eth.src`), read from its bytes.
    Header(&'static str, wire::HeaderTest),
    /// The frame has a header of this protocol (`eth`, `vlan`, `sll`).
    Proto(&'static str),
    Flag(Flag),
    /// An address (or a network: its first `prefix` bits) and maybe a port.
    Addr(End, Net, Option<u16>),
    Dissected(Box<FieldTest>),
    /// A test of a datagram of an inner layer (its index in the stack) the packet carries.
    Layer(usize, Box<Node>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    True,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Int(i128),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    Exists,
    Compare(Cmp, Operand),
    Contains(Vec<u8>),
    /// A regular expression over text or bytes.
    Matches(wire::Pattern),
    /// Equal to any of these values, or within a range (`in {1 3..5}`).
    In(Vec<(Operand, Operand)>),
}

/// A test of a dissected field.
#[derive(Debug, Clone, PartialEq)]
struct FieldTest {
    /// The packet type the path was prefixed with (`scene.objects…`).
    packet_type: Option<u32>,
    segs: Vec<Step>,
    holds: Holds,
    all: bool,
    test: Test,
}

/// A compiled filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    root: Node,
    pub text: String,
    /// It reads what only the engine knows (dissected fields, acks), not the TUI's index.
    needs_engine: bool,
    /// The first frame's time, for `time` (set by [`Filter::start`]).
    origin: Option<i64>,
    /// It reads `rtt` or `never_acked`: known only after the run ([`Filter::set_acks`]).
    needs_acks: bool,
    acks: Option<std::sync::Arc<AckFacts>>,
    /// The layers the filter names, to read them in each packet.
    stacked: Option<Stacked>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct FilterError {
    pub message: String,
    /// 1-based.
    pub column: usize,
}

struct Parser<'a> {
    toks: Vec<(String, usize)>,
    pos: usize,
    program: Option<&'a Program>,
    paths: Vec<PathInfo>,
    /// Definitions inside `program`, outermost first (their names prefix paths).
    layers: &'a [Arc<Program>],
    needs_engine: bool,
    needs_acks: bool,
    len: usize,
    /// Nesting of `!` and parentheses, bounded so no filter can exhaust the stack.
    depth: u32,
}

const MAX_NESTING: u32 = 64;

fn tokenize(s: &str) -> Result<Vec<(String, usize)>, FilterError> {
    let mut out = Vec::new();
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == '"' {
            // A quoted string, backslash escaping a quote or backslash; the token keeps
            // its opening quote so that it is never read as a word.
            let mut t = String::from('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' && i + 1 < b.len() {
                    i += 1;
                }
                t.push(b[i]);
                i += 1;
            }
            if i == b.len() {
                return Err(FilterError {
                    message: "the string has no closing quote".into(),
                    column: start + 1,
                });
            }
            t.push('"');
            i += 1;
            out.push((t, start));
            continue;
        }
        let two: String = b[i..(i + 2).min(b.len())].iter().collect();
        if ["&&", "||", "==", "!=", "<=", ">=", "^^"].contains(&two.as_str()) {
            out.push((two, start));
            i += 2;
        } else if "()!<>{},".contains(c) {
            out.push((c.to_string(), start));
            i += 1;
        } else {
            while i < b.len() && !b[i].is_whitespace() && !"()!<>=&|{},".contains(b[i]) {
                i += 1;
            }
            // IPv6 addresses in brackets keep their colons; `=` never starts a word.
            if i == start {
                out.push((c.to_string(), start));
                i += 1;
            } else {
                let word: String = b[start..i].iter().collect();
                // Wireshark's words for the operators.
                let word = match word.as_str() {
                    "and" => "&&".to_string(),
                    "or" => "||".to_string(),
                    "xor" => "^^".to_string(),
                    "not" => "!".to_string(),
                    _ => word,
                };
                out.push((word, start));
            }
        }
    }
    Ok(out)
}

impl<'a> Parser<'a> {
    fn err(&self, message: impl Into<String>) -> FilterError {
        let column = self.toks.get(self.pos).map(|t| t.1).unwrap_or(self.len) + 1;
        FilterError {
            message: message.into(),
            column,
        }
    }

    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|t| t.0.as_str())
    }

    fn or(&mut self) -> Result<Node, FilterError> {
        let mut l = self.and()?;
        while let Some(op @ ("||" | "^^")) = self.peek() {
            let xor = op == "^^";
            self.pos += 1;
            let r = self.and()?;
            l = if xor {
                // Exactly one of the two (Wireshark's `xor`).
                let one = Node::And(Box::new(l.clone()), Box::new(Node::Not(Box::new(r.clone()))));
                let other = Node::And(Box::new(Node::Not(Box::new(l))), Box::new(r));
                Node::Or(Box::new(one), Box::new(other))
            } else {
                Node::Or(Box::new(l), Box::new(r))
            };
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Node, FilterError> {
        let mut l = self.not()?;
        while self.peek() == Some("&&") {
            self.pos += 1;
            l = Node::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Node, FilterError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.err(format!("the filter nests more than {MAX_NESTING} levels deep")));
        }
        let r = self.not_inner();
        self.depth -= 1;
        r
    }

    fn not_inner(&mut self) -> Result<Node, FilterError> {
        if self.peek() == Some("!") {
            self.pos += 1;
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Node, FilterError> {
        let Some(word) = self.peek().map(str::to_string) else {
            return Err(self.err("expected a condition"));
        };
        self.pos += 1;
        if word == "(" {
            let e = self.or()?;
            if self.peek() != Some(")") {
                return Err(self.err("expected `)`"));
            }
            self.pos += 1;
            return Ok(e);
        }
        let compared = self.peek().is_some_and(|t| is_cmp(t) || t == "in");
        // `gap` alone is the flag, `gap > 3` the gap's size; `udp`, `ip` and `ipv6` are a
        // definition's own field when it has one of that name (netcode's address `ipv6`).
        let protocol_word = matches!(
            word.as_str(),
            "udp" | "ip" | "ipv6" | "retransmission" | "spurious" | "naked"
        );
        let own_field = protocol_word && self.names_a_field(&word);
        let flag_here = !(own_field || compared && word == "gap");
        if let Some(f) = flag_named(&word).filter(|_| flag_here) {
            if matches!(
                f,
                Flag::NeverAcked | Flag::Retransmission | Flag::Spurious | Flag::Naked
            ) {
                self.acks(&word)?;
            }
            return Ok(self.or_in_streams(Node::Flag(f)));
        }
        if let Some(end) = match word.as_str() {
            "flow" | "host" => Some(End::Either),
            "src" => Some(End::Src),
            "dst" => Some(End::Dst),
            _ => None,
        } {
            let (net, port) = self.address(&word)?;
            return Ok(Node::Addr(end, net, port));
        }
        if let Some(proto) = wire::HEADER_WORDS.iter().find(|w| **w == word)
            && !compared
            && !self.names_a_field(&word)
        {
            self.needs_engine = true;
            return Ok(Node::Proto(proto));
        }
        if let Some((name, holds)) = wire::header_field(&word)
            && !self.paths.iter().any(|e| e.path == word)
        {
            return self.header(name, holds);
        }
        if let Some(end) = match word.as_str() {
            "ip.src" | "ipv6.src" => Some(End::Src),
            "ip.dst" | "ipv6.dst" => Some(End::Dst),
            "ip.addr" | "ipv6.addr" => Some(End::Either),
            _ => None,
        } {
            return self.ip_address(&word, end);
        }
        let Some(field) = self.field_named(&word)? else {
            self.pos -= 1;
            return self.dissected();
        };
        if matches!(
            field,
            Field::Ack | Field::AckBits | Field::FrameLen | Field::CapLen
        ) {
            self.needs_engine = true;
        }
        if self.peek() == Some("in") {
            self.pos += 1;
            let mut ranges = Vec::new();
            for (lo, hi) in self.set(&word)? {
                let (f, a) = self.value_at(field, &lo)?;
                let (_, b) = self.value_at(field, &hi)?;
                if f != field {
                    return Err(self.err(format!("`{word} in {{…}}` takes values, not dates")));
                }
                ranges.push((a.min(b), a.max(b)));
            }
            return Ok(self.or_in_streams(Node::In(field, ranges)));
        }
        let cmp = self.cmp(&word)?;
        let Some(v) = self.peek().map(str::to_string) else {
            return Err(self.err("expected a value"));
        };
        let (field, value) = self.value(field, &v)?;
        self.pos += 1;
        if field == Field::Gap && cmp == Cmp::Ne {
            // As every field with several values: none equal.
            let eq = self.or_in_streams(Node::Compare(field, Cmp::Eq, value));
            return Ok(Node::Not(Box::new(eq)));
        }
        Ok(self.or_in_streams(Node::Compare(field, cmp, value)))
    }

    /// `late`, `dup`, `gap` (and `gap > N`) hold for a datagram whose own sequence has
    /// the verdict, or, when the definition declares message streams, any of its
    /// messages in its stream; the messages' verdicts are the engine's, not the index's.
    fn or_in_streams(&mut self, n: Node) -> Node {
        let streams = self.program.is_some_and(|p| !p.params.streams.is_empty());
        let stream = match &n {
            Node::Flag(Flag::Late) => Node::Flag(Flag::StreamLate),
            Node::Flag(Flag::Dup) => Node::Flag(Flag::StreamDup),
            Node::Flag(Flag::Gap) => Node::Flag(Flag::StreamGap),
            Node::Compare(Field::Gap, c, v) => Node::Compare(Field::StreamGap, *c, *v),
            Node::In(Field::Gap, r) => Node::In(Field::StreamGap, r.clone()),
            _ => return n,
        };
        if !streams {
            return n;
        }
        self.needs_engine = true;
        Node::Or(Box::new(n), Box::new(stream))
    }

    /// `{a b, c..d}` after `in`: its members as (low, high) texts, `a` as (a, a).
    fn set(&mut self, word: &str) -> Result<Vec<(String, String)>, FilterError> {
        if self.peek() != Some("{") {
            return Err(self.err(format!("`{word} in` needs a set, like {word} in {{1 2 5..9}}")));
        }
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                Some("}") => break,
                Some(",") => self.pos += 1,
                Some(t)
                    if !matches!(
                        t,
                        "(" | ")" | "{" | "!" | "<" | ">" | "&&" | "||" | "==" | "!=" | "<=" | ">=" | "^^"
                    ) =>
                {
                    let t = t.to_string();
                    let member = match t.split_once("..") {
                        Some((a, b)) if !a.is_empty() && !b.is_empty() => (a.to_string(), b.to_string()),
                        _ => (t.clone(), t),
                    };
                    out.push(member);
                    self.pos += 1;
                }
                _ => return Err(self.err("expected a value or `}` in the set")),
            }
        }
        if out.is_empty() {
            return Err(self.err("the set is empty"));
        }
        self.pos += 1;
        Ok(out)
    }

    /// [`Parser::value`] of a set member, the error at the set's member.
    fn value_at(&mut self, field: Field, v: &str) -> Result<(Field, i128), FilterError> {
        self.pos -= 1;
        let r = self.value(field, v);
        self.pos += 1;
        r
    }

    /// `ip.ttl > 3`, `eth.src == 02:00:00:00:00:01`, `vlan.id in {10 42}`, or the name
    /// alone (the frame has the field): a field of the frame's own headers.
    fn header(&mut self, name: &'static str, holds: wire::Holds) -> Result<Node, FilterError> {
        use wire::{HeaderTest, Holds};
        self.needs_engine = true;
        if self.peek() == Some("in") {
            self.pos += 1;
            let set = self.set(name)?;
            self.pos -= 1;
            let test = match holds {
                Holds::Num => {
                    let mut ranges = Vec::new();
                    for (a, b) in &set {
                        let (Some(a), Some(b)) = (parse_int(a), parse_int(b)) else {
                            return Err(self.err(format!("`{name} in {{…}}` takes numbers")));
                        };
                        ranges.push((a.min(b), a.max(b)));
                    }
                    HeaderTest::NumIn(ranges)
                }
                Holds::Mac => {
                    let macs: Option<Vec<[u8; 6]>> = set.iter().map(|(a, _)| wire::parse_mac(a)).collect();
                    let Some(macs) = macs else {
                        return Err(self.err(format!(
                            "`{name} in {{…}}` takes MAC addresses, like 02:00:00:00:00:01"
                        )));
                    };
                    HeaderTest::MacIn(macs)
                }
            };
            self.pos += 1;
            return Ok(Node::Header(name, test));
        }
        if !self.peek().is_some_and(is_cmp) {
            return Ok(Node::Header(name, HeaderTest::Exists));
        }
        let cmp = self.cmp(name)?;
        let Some(v) = self.peek().map(str::to_string) else {
            return Err(self.err("expected a value"));
        };
        let test = match holds {
            Holds::Num => match parse_int(&v) {
                Some(n) => HeaderTest::Num(cmp, n),
                None => return Err(self.err(format!("`{v}` is not a number"))),
            },
            Holds::Mac => match (wire::parse_mac(&v), cmp) {
                (Some(m), Cmp::Eq | Cmp::Ne) => HeaderTest::Mac(cmp, m),
                (Some(_), _) => return Err(self.err(format!("`{name}` compares with == or !="))),
                (None, _) => {
                    return Err(self.err(format!("`{v}` is not a MAC address (like 02:00:00:00:00:01)")));
                }
            },
        };
        self.pos += 1;
        Ok(Node::Header(name, test))
    }

    /// `ip.src == ADDR` and its kin: an address without a port, compared with == or !=.
    fn ip_address(&mut self, word: &str, end: End) -> Result<Node, FilterError> {
        if self.peek() == Some("in") {
            self.pos += 1;
            let set = self.set(word)?;
            let mut any: Option<Node> = None;
            for (a, b) in &set {
                let Some(net) = wire::parse_net(a).filter(|_| a == b) else {
                    self.pos -= 1;
                    return Err(self.err(format!(
                        "`{a}` is not an address or a network (ip or ip/bits) for `{word} in {{…}}`"
                    )));
                };
                let n = Node::Addr(end, net, None);
                any = Some(match any {
                    Some(prev) => Node::Or(Box::new(prev), Box::new(n)),
                    None => n,
                });
            }
            return Ok(any.unwrap_or(Node::True));
        }
        let cmp = self.cmp(word)?;
        if !matches!(cmp, Cmp::Eq | Cmp::Ne) {
            return Err(self.err(format!("`{word}` compares with == or !=")));
        }
        let (net, port) = self.address(word)?;
        if port.is_some() {
            return Err(self.err(format!(
                "`{word}` is an address without a port (ports: udp.srcport, udp.dstport)"
            )));
        }
        let node = Node::Addr(end, net, None);
        Ok(if cmp == Cmp::Ne {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }

    /// The packet field a word names, or None for a definition's own field.
    fn field_named(&mut self, word: &str) -> Result<Option<Field>, FilterError> {
        Ok(Some(match word {
            "type" => Field::Type,
            "seq" | "sequence" => Field::Seq,
            "size" | "len" => Field::Size,
            "frame" | "frame.number" => Field::Frame,
            "frame.len" => Field::FrameLen,
            "frame.cap_len" => Field::CapLen,
            "frag.id" => Field::FragId,
            "frag.count" => Field::FragCount,
            "udp.srcport" | "srcport" => Field::SrcPort,
            "udp.dstport" | "dstport" => Field::DstPort,
            "udp.port" | "port" => Field::Port,
            "time" | "frame.time_relative" => Field::Time,
            "frame.time_epoch" | "time.epoch" | "frame.time" => Field::Epoch,
            "gap" => Field::Gap,
            "rtt" if !self.paths.iter().any(|e| e.path == word) => {
                self.acks(word)?;
                Field::Rtt
            }
            // A definition's own field of that name (the shooter's `ack`) comes first.
            "ack" | "ack_bits" | "ack-bits" if self.paths.iter().any(|e| e.path == word) => return Ok(None),
            "ack" => Field::Ack,
            "ack_bits" | "ack-bits" => Field::AckBits,
            _ => return Ok(None),
        }))
    }

    /// The value `v` a field is compared with, as the field counts it: times in ns
    /// (seconds since the first frame, or a UTC date and time, which makes it an epoch),
    /// rtt in µs, a type by name or number.
    fn value(&mut self, field: Field, v: &str) -> Result<(Field, i128), FilterError> {
        // A time is seconds since the first frame, or a UTC date and time (the epoch).
        let (field, value) = match field {
            Field::Time => match parse_seconds(v) {
                Some(n) => (Field::Time, Some(n)),
                None => (Field::Epoch, parse_datetime(v)),
            },
            Field::Epoch => (Field::Epoch, parse_seconds(v).or_else(|| parse_datetime(v))),
            // Milliseconds, compared in µs.
            Field::Rtt => (
                Field::Rtt,
                parse_seconds(&format!("{}ms", v.trim_end_matches("ms"))).map(|ns| ns / 1000),
            ),
            f => (f, parse_int(v)),
        };
        let value = match value {
            Some(n) => n,
            None if field == Field::Type => match self.type_id(v) {
                Some(t) => t as i128,
                None => return Err(self.err(format!("no packet type is named `{v}`"))),
            },
            None if matches!(field, Field::Time | Field::Epoch) => {
                return Err(self.err(format!(
                    "`{v}` is not a time: seconds since the first packet (time > 5.5) or a UTC date and time (time >= 2026-11-22T10:00:05)"
                )));
            }
            None => return Err(self.err(format!("`{v}` is not a number"))),
        };
        Ok((field, value))
    }

    /// `rtt` and `never_acked` need the definition's ack roles, and the ack analysis' pass.
    fn acks(&mut self, word: &str) -> Result<(), FilterError> {
        use crate::dissect::program::Role;
        let has = self.program.is_some_and(|p| {
            p.has_role(Role::Ack) && p.has_role(Role::AckBits) || p.params.streams.iter().any(|d| d.acked)
        });
        if !has {
            self.pos -= 1;
            return Err(self.err(format!(
                "`{word}` needs a definition with ack and ack-bits roles (dissectors/reliable.kdl has them) or acks of message streams (dissectors/kcp.kdl)"
            )));
        }
        self.needs_acks = true;
        self.needs_engine = true;
        Ok(())
    }

    /// Whether the definition has a field `word` names, alone or as the last part of a
    /// path (`ipv6` for `…address.ipv6`).
    fn names_a_field(&self, word: &str) -> bool {
        let suffix = format!(".{word}");
        self.paths
            .iter()
            .any(|e| e.path == word || strip_indices(&e.path).ends_with(&suffix))
    }

    /// `ip`, `ip:port`, `[ipv6]:port` or a network `ip/bits` (as Wireshark's
    /// `ip.src == 10.0.0.0/24`) after `word`.
    fn address(&mut self, word: &str) -> Result<(Net, Option<u16>), FilterError> {
        let Some(addr) = self.peek().map(str::to_string) else {
            return Err(self.err(format!("`{word}` needs an address, like {word} 10.0.0.1:40000")));
        };
        if let Some((ip, bits)) = addr.split_once('/') {
            let ip = ip
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .unwrap_or(ip);
            let net = ip
                .parse::<IpAddr>()
                .ok()
                .and_then(|ip| Net::new(ip, bits.parse().ok()?));
            let Some(net) = net else {
                return Err(self.err(format!(
                    "`{addr}` is not a network (an address, `/`, and 0 to 32 bits for IPv4 or 0 to 128 for IPv6, without a port)"
                )));
            };
            self.pos += 1;
            return Ok((net, None));
        }
        let parsed = addr
            .parse::<SocketAddr>()
            .map(|s| (s.ip(), Some(s.port())))
            .or_else(|_| {
                // `[::1]` or `::1`, brackets paired (`[::1` is no address).
                let bare = addr
                    .strip_prefix('[')
                    .and_then(|a| a.strip_suffix(']'))
                    .unwrap_or(&addr);
                bare.parse::<IpAddr>().map(|ip| (ip, None))
            });
        let Ok((ip, port)) = parsed else {
            return Err(self.err(format!(
                "`{addr}` is not an address (ip, ip:port, [ipv6]:port, or a network ip/bits)"
            )));
        };
        self.pos += 1;
        Ok((Net::host(ip), port))
    }

    fn type_id(&self, name: &str) -> Option<u32> {
        let p = self.program?;
        p.packets
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.type_id)
            .or_else(|| (p.fragment.is_some() && name == "fragment").then_some(p.fragment_type))
    }

    fn cmp(&mut self, what: &str) -> Result<Cmp, FilterError> {
        let Some(cmp) = self.peek().and_then(cmp_of) else {
            return Err(self.err(format!(
                "`{what}` needs a comparison: == != < <= > >= (or eq ne lt le gt ge), or in {{…}}"
            )));
        };
        self.pos += 1;
        Ok(cmp)
    }

    /// `[any|all] PATH [OP VALUE | contains "TEXT"]`: a dissected field.
    fn dissected(&mut self) -> Result<Node, FilterError> {
        let quantifier = self
            .peek()
            .filter(|w| ["all", "any"].contains(w))
            .map(str::to_string);
        let all = quantifier.as_deref() == Some("all");
        if quantifier.is_some() {
            self.pos += 1;
        }
        let Some(word) = self.peek().map(str::to_string) else {
            return Err(self.err("expected a field after any/all"));
        };
        let word = self.own_protocol(word);
        if let Some(op) = operator_word(&word) {
            return Err(self.err(format!("expected a field or flag, found the operator {op}")));
        }
        if let Some(q) = &quantifier
            && FIELD_NAMES.contains(&word.as_str())
            && !self.paths.iter().any(|e| e.path == word)
        {
            return Err(self.err(format!(
                "`{q}` applies to dissected fields, and `{word}` is a built-in field: write `{word}` alone"
            )));
        }
        if let Some(n) = self.layered(&word, all)? {
            return Ok(n);
        }
        let Some(program) = self.program else {
            let hint = self
                .builtin_hint(&word)
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            return Err(self.err(format!(
                "unknown filter word `{word}`; {hint}(fields: {BUILTIN_FIELDS}; flags: {FLAGS}; src/dst/flow ADDR; dissected fields need a definition: -d)"
            )));
        };
        let (packet_type, path) = self.resolve(&word)?;
        let Some(info) = path else {
            // A packet type's name alone: `scene` is `type == scene`.
            self.pos += 1;
            let t = packet_type.unwrap_or(u32::MAX) as i128;
            return Ok(Node::Compare(Field::Type, Cmp::Eq, t));
        };
        if let Some(bad) = word.split('.').find(|part| {
            part.split_once('[')
                .is_some_and(|(_, rest)| rest.strip_suffix(']').is_none_or(|n| n.parse::<u32>().is_err()))
        }) {
            return Err(self.err(format!(
                "`{bad}`: an element index is a number in brackets, like objects[3]"
            )));
        }
        let segs = steps(program, &word, packet_type.is_some());
        if segs.iter().any(|s| s.index.is_some()) && !self.indexes_fit(&segs) {
            return Err(self.err(format!("`{word}`: only an array or list takes an index")));
        }
        self.pos += 1;
        self.needs_engine = true;
        let test = match self.peek() {
            Some("contains") => {
                self.pos += 1;
                if !matches!(info.holds, Holds::Text | Holds::Bytes) {
                    return Err(self.err(format!(
                        "`{word}` is not text or bytes: `contains` does not apply"
                    )));
                }
                match self.peek() {
                    Some(v) if v.starts_with('"') => {
                        let text = unquote(v).to_vec();
                        self.pos += 1;
                        Test::Contains(text)
                    }
                    _ => return Err(self.err("`contains` needs a quoted string, like \"gg\"")),
                }
            }
            Some("matches") => {
                self.pos += 1;
                if !matches!(info.holds, Holds::Text | Holds::Bytes) {
                    return Err(self.err(format!("`{word}` is not text or bytes: `matches` does not apply")));
                }
                match self.peek() {
                    Some(v) if v.starts_with('"') => {
                        let text = String::from_utf8_lossy(unquote(v)).into_owned();
                        let pattern = wire::Pattern::new(&text).map_err(|m| self.err(m))?;
                        self.pos += 1;
                        Test::Matches(pattern)
                    }
                    _ => return Err(self.err("`matches` needs a quoted regular expression, like \"^gg\"")),
                }
            }
            Some("in") => {
                self.pos += 1;
                let set = self.set(&word)?;
                self.pos -= 1;
                let mut members = Vec::new();
                for (a, b) in &set {
                    let lo = self.operand(program, &info, &word, a)?;
                    let hi = self.operand(program, &info, &word, b)?;
                    members.push((lo, hi));
                }
                self.pos += 1;
                Test::In(members)
            }
            Some(t) if cmp_of(t).is_some() => {
                let cmp = self.cmp(&word)?;
                let Some(v) = self.peek().map(str::to_string) else {
                    return Err(self.err("expected a value"));
                };
                let operand = self.operand(program, &info, &word, &v)?;
                if matches!(operand, Operand::Bytes(_) | Operand::Bool(_))
                    && !matches!(cmp, Cmp::Eq | Cmp::Ne)
                {
                    return Err(self.err(format!("`{v}` can only be compared with == or !=")));
                }
                self.pos += 1;
                Test::Compare(cmp, operand)
            }
            _ => Test::Exists,
        };
        Ok(Node::Dissected(Box::new(FieldTest {
            packet_type,
            segs,
            holds: info.holds,
            all,
            test,
        })))
    }

    /// `NAME.PATH`, NAME the definition's own protocol, is PATH: Wireshark's field names
    /// start with their protocol's, and `gpcap wireshark` names its fields so
    /// (`article.scene.objects.position.x`), so one filter reads the same in both.
    fn own_protocol(&mut self, word: String) -> String {
        let Some(p) = self.program else { return word };
        match word
            .strip_prefix(p.params.name.as_str())
            .and_then(|r| r.strip_prefix('.'))
        {
            Some(rest) if !rest.is_empty() && !self.paths.iter().any(|e| e.path == strip_indices(&word)) => {
                let rest = rest.to_string();
                self.toks[self.pos].0 = rest.clone();
                rest
            }
            _ => word,
        }
    }

    /// `LAYER.PATH`: the path read in datagrams of an inner layer, by the layer's name
    /// (`None`: the word does not name one, or the outer definition has that path).
    fn layered(&mut self, word: &str, all: bool) -> Result<Option<Node>, FilterError> {
        let (head, rest) = word.split_once('.').unwrap_or((word, ""));
        let Some(at) = self.layers.iter().position(|l| l.params.name == head) else {
            return Ok(None);
        };
        if self.paths.iter().any(|e| e.path == strip_indices(word)) {
            return Ok(None);
        }
        if rest.is_empty() {
            return Err(self.err(format!(
                "`{head}` is a layer: name one of its fields, like `{head}.FIELD`"
            )));
        }
        let layer: &'a Program = &self.layers[at];
        let saved = (self.program, std::mem::replace(&mut self.paths, catalog(layer)));
        self.program = Some(layer);
        let plain = strip_indices(rest);
        let first = plain.split('.').next().unwrap_or_default();
        if !self.paths.iter().any(|e| e.path == plain) && self.type_id(first).is_none() {
            // Only the layer's own fields: no built-in name is a hint here.
            let hint = nearest(&self.paths, &plain)
                .map(|n| format!("; did you mean `{head}.{n}`?"))
                .unwrap_or_default();
            let e = self.err(format!("layer {head} has no field `{rest}`{hint}"));
            self.program = saved.0;
            self.paths = saved.1;
            return Err(e);
        }
        self.toks[self.pos].0 = rest.to_string();
        // `all` is read again by the layer's parse.
        self.pos -= usize::from(all);
        let n = self.dissected();
        self.program = saved.0;
        self.paths = saved.1;
        let n = n.map_err(|mut e| {
            e.message = format!("layer {head}: {}", e.message);
            e
        })?;
        Ok(Some(Node::Layer(at, Box::new(n))))
    }

    /// The packet type a path starts with (if it does) and the path's entry; an unknown
    /// path is an error with the nearest known one.
    fn resolve(&self, word: &str) -> Result<(Option<u32>, Option<PathInfo>), FilterError> {
        let plain = strip_indices(word);
        if let Some(e) = self.paths.iter().find(|e| e.path == plain) {
            return Ok((None, Some(e.clone())));
        }
        let (head, rest) = plain.split_once('.').unwrap_or((plain.as_str(), ""));
        if let Some(t) = self.type_id(head) {
            if rest.is_empty() {
                return Ok((Some(t), None));
            }
            if let Some(e) = self
                .paths
                .iter()
                .find(|e| e.path == rest && (e.types.is_empty() || e.types.contains(&t)))
            {
                return Ok((Some(t), Some(e.clone())));
            }
            let of_type: Vec<PathInfo> = self
                .paths
                .iter()
                .filter(|e| e.types.contains(&t) || e.types.is_empty())
                .cloned()
                .collect();
            let hint = nearest(&of_type, rest)
                .map(|n| format!("; did you mean `{head}.{n}`?"))
                .unwrap_or_default();
            return Err(self.err(format!("packet type {head} has no field `{rest}`{hint}")));
        }
        // A built-in name of the same kind (a flag alone, a field before a comparison)
        // first, then the definition's packet types and paths and the headers' names,
        // then built-in names of the other kind — each only when it is near enough to be
        // a slip (`scen` is `scene`, never `seq`; nothing is `t` for `eth`).
        let hint = self
            .builtin_hint(&plain)
            .or_else(|| self.definition_hint(&plain))
            .or_else(|| self.other_kind_hint(&plain))
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_else(|| format!(" (fields: {BUILTIN_FIELDS}; flags: {FLAGS}; src/dst/flow ADDR)"));
        let what = if self.compared() { "field" } else { "field or flag" };
        Err(self.err(format!("unknown {what} `{word}`{hint}")))
    }

    /// The word at the cursor is followed by a comparison: it names a field, not a flag.
    fn compared(&self) -> bool {
        self.toks.get(self.pos + 1).is_some_and(|t| is_cmp(&t.0))
    }

    /// The nearest built-in name of the kind the word is used as (header fields among
    /// the fields, header protocols among the flags).
    fn builtin_hint(&self, word: &str) -> Option<String> {
        let headers = wire::HEADER_FIELDS.iter().map(|(n, _)| *n);
        let names: Vec<&'static str> = if self.compared() {
            FIELD_NAMES.iter().copied().chain(headers).collect()
        } else {
            FLAG_NAMES
                .iter()
                .copied()
                .chain(wire::HEADER_WORDS.iter().copied())
                .collect()
        };
        closest(&names, word).map(str::to_string)
    }

    fn other_kind_hint(&self, word: &str) -> Option<String> {
        let names = if self.compared() { FLAG_NAMES } else { FIELD_NAMES };
        closest(names, word).map(str::to_string)
    }

    /// The definition's nearest packet type (a word alone, or a path's first part) or
    /// path, when near enough.
    fn definition_hint(&self, word: &str) -> Option<String> {
        let types: Vec<&str> = self
            .program
            .map(|p| p.packets.iter().map(|d| d.name.as_str()).collect())
            .unwrap_or_default();
        let (head, rest) = word.split_once('.').unwrap_or((word, ""));
        let typed = types
            .iter()
            .map(|t| (crate::dissect::paths::distance(t, head), *t))
            .filter(|(_, t)| wire::plausible(head, t))
            .min_by_key(|(d, _)| *d)
            .map(|(d, t)| {
                (
                    d,
                    if rest.is_empty() {
                        t.to_string()
                    } else {
                        format!("{t}.{rest}")
                    },
                )
            });
        let path = nearest(&self.paths, word)
            .filter(|n| wire::plausible(word, n) || n.ends_with(&format!(".{word}")))
            .map(|n| (crate::dissect::paths::distance(n, word), n.to_string()));
        match (typed, path) {
            (Some(t), Some(p)) => Some(if t.0 <= p.0 { t.1 } else { p.1 }),
            (t, p) => t.or(p).map(|x| x.1),
        }
    }

    /// Every indexed segment names an array or list.
    fn indexes_fit(&self, segs: &[Step]) -> bool {
        let mut path = String::new();
        for s in segs {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&s.name);
            if s.index.is_some() && !self.paths.iter().any(|e| e.path == path && e.indexed) {
                return false;
            }
        }
        true
    }

    /// A value for a field that holds `info.holds`: a number, true/false, an enum's name,
    /// or a quoted string.
    fn operand(
        &self,
        program: &Program,
        info: &PathInfo,
        word: &str,
        v: &str,
    ) -> Result<Operand, FilterError> {
        if v.starts_with('"') {
            return match info.holds {
                Holds::Text | Holds::Bytes => Ok(Operand::Bytes(unquote(v).to_vec())),
                _ => Err(self.err(format!("`{word}` holds numbers, not text"))),
            };
        }
        if let Some(n) = parse_int(v) {
            return match info.holds {
                Holds::Bool if n == 0 || n == 1 => Ok(Operand::Bool(n == 1)),
                Holds::Float { .. } | Holds::Double => Ok(Operand::Float(n as f64)),
                Holds::Text | Holds::Bytes => {
                    Err(self.err(format!("`{word}` holds text or bytes: quote the value")))
                }
                _ => Ok(Operand::Int(n)),
            };
        }
        if let Ok(x) = v.parse::<f64>()
            && x.is_finite()
            && !v.chars().all(char::is_alphabetic)
        {
            return match info.holds {
                Holds::Float { .. } | Holds::Double | Holds::Int { .. } | Holds::Group => {
                    Ok(Operand::Float(x))
                }
                _ => Err(self.err(format!("`{word}` does not hold numbers with a fraction"))),
            };
        }
        match (v, info.holds) {
            ("true" | "True", Holds::Bool) => return Ok(Operand::Bool(true)),
            ("false" | "False", Holds::Bool) => return Ok(Operand::Bool(false)),
            _ => {}
        }
        if let Holds::Int { enum_id: Some(e) } = info.holds
            && let Some(def) = program.enums.get(e as usize)
        {
            if let Some((n, _)) = def.values.iter().find(|(_, name)| name == v) {
                return Ok(Operand::Int(*n as i128));
            }
            let names: Vec<&str> = def.values.iter().map(|(_, n)| n.as_str()).take(12).collect();
            return Err(self.err(format!(
                "`{v}` is not a value of {word} (enum {}: {})",
                def.name,
                names.join(" ")
            )));
        }
        let wants = match info.holds {
            Holds::Bool => "true or false",
            Holds::Text | Holds::Bytes => "a quoted string",
            _ => "a number",
        };
        Err(self.err(format!("`{v}` is not a value of {word}: it takes {wants}")))
    }
}

/// A field path compiled against a definition (`objects.at_rest`, `scene.objects[0].index`):
/// its occurrences in a field tree, for the Info column's templates.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPath {
    segs: Vec<Step>,
    packet_type: Option<u32>,
}

impl FieldPath {
    /// `paths` is the definition's catalog; the error says what is wrong and what is near.
    pub fn parse(program: &Program, paths: &[PathInfo], text: &str) -> Result<FieldPath, String> {
        let p = Parser {
            toks: Vec::new(),
            pos: 0,
            program: Some(program),
            paths: paths.to_vec(),
            layers: &[],
            needs_engine: false,
            needs_acks: false,
            len: 0,
            depth: 0,
        };
        match p.resolve(text) {
            Ok((packet_type, Some(_))) => Ok(FieldPath {
                segs: steps(program, text, packet_type.is_some()),
                packet_type,
            }),
            Ok((_, None)) => Err(format!("`{text}` is a packet type, not a field")),
            Err(e) => Err(e.message),
        }
    }

    /// The fields of `d` (a packet of type `packet_type`) that are occurrences of the path.
    pub fn occurrences<'d>(
        &'d self,
        d: &'d Dissection,
        packet_type: Option<u32>,
    ) -> impl Iterator<Item = usize> + 'd {
        let wrong_type = self.packet_type.is_some() && self.packet_type != packet_type;
        (0..d.fields.len()).filter(move |&i| !wrong_type && is_occurrence(&self.segs, d, i))
    }
}

const BUILTIN_FIELDS: &str = "type seq size frame time gap rtt frag.id frag.count ack ack_bits frame.len frame.cap_len udp.srcport udp.dstport udp.port udp.length ip.src ip.dst ip.addr ip.ttl ip.flags.df eth.src vlan.id (and Wireshark's other eth/vlan/ip/ipv6/udp header fields)";
const FLAGS: &str = "crc_ok crc_mismatch too_short crc.fail frag reassembled ip_fragmented malformed over_budget truncated game late dup gap replayed mac_failure eth vlan ip ipv6 udp";

/// Built-in names compared with a value, for "did you mean".
const FIELD_NAMES: &[&str] = &[
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
const FLAG_NAMES: &[&str] = &[
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
fn closest(names: &[&'static str], word: &str) -> Option<&'static str> {
    names
        .iter()
        .map(|n| (crate::dissect::paths::distance(n, word), *n))
        .filter(|(_, n)| wire::plausible(word, n))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// A comparison, as a symbol or Wireshark's word for it.
fn cmp_of(t: &str) -> Option<Cmp> {
    Some(match t {
        "==" | "eq" => Cmp::Eq,
        "!=" | "ne" => Cmp::Ne,
        "<" | "lt" => Cmp::Lt,
        "<=" | "le" => Cmp::Le,
        ">" | "gt" => Cmp::Gt,
        ">=" | "ge" => Cmp::Ge,
        _ => return None,
    })
}

fn is_cmp(t: &str) -> bool {
    cmp_of(t).is_some()
}

/// A flag by any of its names.
fn flag_named(word: &str) -> Option<Flag> {
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

/// Seconds (`5`, `0.25`, `-1`, `250ms`, `2s`) as nanoseconds.
fn parse_seconds(v: &str) -> Option<i128> {
    let (num, scale) = match v.strip_suffix("ms") {
        Some(n) => (n, 1e6),
        None => (v.strip_suffix('s').unwrap_or(v), 1e9),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-') {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let ns = (x * scale).round();
    (ns.is_finite() && ns.abs() < 1e30).then_some(ns as i128)
}

/// A UTC date and time, `2026-11-22T10:00:05.25` (a space instead of `T` when quoted, a
/// `Z` allowed), as nanoseconds since the epoch.
fn parse_datetime(v: &str) -> Option<i128> {
    let v = std::str::from_utf8(unquote(v)).ok()?.trim();
    let v = v.strip_suffix('Z').unwrap_or(v);
    let (date, time) = v.split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|x| x.parse::<i64>().ok());
    let (h, min, sec) = (t.next()??, t.next()??, t.next().unwrap_or(Some(0))?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || sec > 60 || y.abs() > 9999
    {
        return None;
    }
    // No 31 November, no 29 February but in a leap year.
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day > month_days[(m - 1) as usize] {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let frac_ns = format!("{frac:0<9}").parse::<i128>().ok()?;
    let days = days_from_civil(y, m, day) as i128;
    Some(((days * 86_400 + (h * 3600 + min * 60 + sec) as i128) * 1_000_000_000) + frac_ns)
}

/// An operator token as the user may have written it (`or` is read as `||`).
fn operator_word(token: &str) -> Option<&'static str> {
    Some(match token {
        "&&" => "`and` (`&&`)",
        "||" => "`or` (`||`)",
        "!" => "`not` (`!`)",
        _ => return None,
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A decimal, `0x` hexadecimal or negative integer.
fn parse_int(v: &str) -> Option<i128> {
    let (neg, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v),
    };
    let n = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(h) => i128::from_str_radix(h, 16).ok()?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => digits.parse().ok()?,
        None => return None,
    };
    Some(if neg { -n } else { n })
}

/// The text between a token's quotes.
fn unquote(v: &str) -> &[u8] {
    let inner = v.strip_prefix('"').unwrap_or(v);
    inner.strip_suffix('"').unwrap_or(inner).as_bytes()
}

impl Filter {
    /// Compiles `text` against the definition (type names, enums and field paths);
    /// without one, only the fields every packet has can be named.
    pub fn parse(text: &str, program: Option<&Program>) -> Result<Filter, FilterError> {
        Self::parse_in(text, program, &[])
    }

    /// As [`Filter::parse`], with the definitions stacked inside `program` (outermost
    /// first): `NAME.PATH` reads PATH in the datagrams of the layer named NAME.
    pub fn parse_stacked(
        text: &str,
        program: Option<&Arc<Program>>,
        layers: &[Arc<Program>],
    ) -> Result<Filter, FilterError> {
        let mut f = Self::parse_in(text, program.map(|p| &**p), layers)?;
        if let Some(outer) = program.filter(|_| f.root.names_layer()) {
            f.stacked = Some(Stacked {
                outer: outer.clone(),
                layers: layers.to_vec(),
            });
        }
        Ok(f)
    }

    fn parse_in(
        text: &str,
        program: Option<&Program>,
        layers: &[Arc<Program>],
    ) -> Result<Filter, FilterError> {
        if text.trim().is_empty() {
            return Ok(Filter::all());
        }
        let mut p = Parser {
            toks: tokenize(text)?,
            pos: 0,
            program,
            paths: program.map(catalog).unwrap_or_default(),
            layers: if program.is_some() { layers } else { &[] },
            needs_engine: false,
            needs_acks: false,
            len: text.chars().count(),
            depth: 0,
        };
        let root = p.or()?;
        if p.pos < p.toks.len() {
            return Err(p.err("unexpected text after the filter"));
        }
        Ok(Filter {
            root,
            text: text.to_string(),
            needs_engine: p.needs_engine,
            origin: None,
            needs_acks: p.needs_acks,
            acks: None,
            stacked: None,
        })
    }

    /// The filter reads `rtt` or `never_acked`, which the ack analysis settles only after
    /// later packets: give it [`Filter::set_acks`] from a pass of its own first
    /// ([`crate::run::scans::ack_facts`]).
    pub fn needs_acks(&self) -> bool {
        self.needs_acks
    }

    /// What the ack analysis' pass settled, when it was given.
    pub fn ack_facts(&self) -> Option<std::sync::Arc<AckFacts>> {
        self.acks.clone()
    }

    pub fn set_acks(&mut self, facts: std::sync::Arc<AckFacts>) {
        self.acks = Some(facts);
    }

    /// Sets the time `time` counts from: the first frame's, which every caller passes
    /// first (later calls change nothing).
    pub fn start(&mut self, first_ts_ns: i64) {
        self.origin.get_or_insert(first_ts_ns);
    }

    /// The filter reads dissected fields or acks: it needs the engine's field tree (the
    /// TUI's index holds neither).
    pub fn needs_engine(&self) -> bool {
        self.needs_engine
    }

    pub fn all() -> Filter {
        Filter {
            root: Node::True,
            text: String::new(),
            needs_engine: false,
            origin: None,
            needs_acks: false,
            acks: None,
            stacked: None,
        }
    }

    /// The verdict on `e` when no field tree or ack could change it (a field test of
    /// another packet type, a flag that settles an `&&`), `None` when it needs them: what
    /// spares a scan dissecting packets the filter cannot select. `e` is a game packet
    /// without its tree, whose packet type is known.
    pub fn decided(&self, e: &PacketEvent) -> Option<bool> {
        let cx = Context {
            origin: self.origin.unwrap_or(e.ts_ns),
            acks: self.acks.as_deref(),
            stacked: self.stacked.as_ref(),
        };
        decide(&self.root, e, &cx)
    }

    /// The filter reads an inner layer (`-d A -d B`, keys) somewhere.
    pub fn reads_layers(&self) -> bool {
        self.root.names_layer()
    }

    /// The filter reads the frame's own bytes (its headers, its lengths) somewhere.
    pub fn reads_frames(&self) -> bool {
        self.root.reads_frames()
    }

    pub fn is_all(&self) -> bool {
        self.root == Node::True
    }

    pub fn matches(&self, e: &PacketEvent) -> bool {
        let cx = Context {
            origin: self.origin.unwrap_or(e.ts_ns),
            acks: self.acks.as_deref(),
            stacked: self.stacked.as_ref(),
        };
        eval(&self.root, e, &cx)
    }
}

/// What a filter knows beyond the packet: when the run started, what the acks settled.
struct Context<'a> {
    origin: i64,
    acks: Option<&'a AckFacts>,
    stacked: Option<&'a Stacked>,
}

impl Context<'_> {
    /// The round trip (µs) or NEVER of the packet's sequence, when settled.
    fn settled(&self, f: &PacketEvent) -> Option<u32> {
        if !f.is_game() {
            return None;
        }
        self.acks?.of(f.flow?, f.sequence?, f.ts_ns)
    }

    /// The round trips (µs) or NEVER of the packet's messages in their acked streams,
    /// those settled.
    fn settled_messages<'b>(&'b self, f: &'b PacketEvent) -> impl Iterator<Item = u32> + 'b {
        let (acks, flow) = (self.acks.filter(|_| f.is_game()), f.flow);
        (f.stream_events().iter())
            .filter_map(move |s| acks?.of_stream(flow?, (s.stream, s.key), s.sequence, f.ts_ns))
    }

    /// The round trips (µs) of the packet's sequence and of its messages, those timed.
    fn rtts<'b>(&'b self, f: &'b PacketEvent) -> impl Iterator<Item = i128> + 'b {
        (self.settled(f).into_iter().chain(self.settled_messages(f)))
            .filter(|&us| Settled::is_rtt(us))
            .map(i128::from)
    }

    /// What the ack analysis said of the packet's sequence and of each of its messages'
    /// in their acked streams.
    fn verdicts<'b>(&'b self, f: &'b PacketEvent) -> impl Iterator<Item = CopyVerdict> + 'b {
        let acks = self.acks.filter(|_| f.is_game());
        let own = acks.and_then(|a| Some(a.verdict(f.flow?, f.sequence?, f.ts_ns)));
        own.into_iter()
            .chain((f.stream_events().iter()).filter_map(move |s| {
                Some(acks?.verdict_in_stream(f.flow?, (s.stream, s.key), s.sequence, f.ts_ns))
            }))
    }
}

fn eval(n: &Node, f: &PacketEvent, cx: &Context) -> bool {
    match n {
        Node::True => true,
        Node::Not(a) => !eval(a, f, cx),
        Node::And(a, b) => eval(a, f, cx) && eval(b, f, cx),
        Node::Or(a, b) => eval(a, f, cx) || eval(b, f, cx),
        Node::Flag(flag) => match flag {
            Flag::CrcFail => f.status.crc_failed(),
            Flag::CrcMismatch => f.status == crate::engine::Status::CrcMismatch,
            Flag::TooShort => f.status == crate::engine::Status::TooShort,
            Flag::CrcOk => f.crc_ok(),
            Flag::Frag => f.fragment.is_some(),
            Flag::IpFrag => f.ip_fragments > 1,
            Flag::Malformed => f.fault.is_some(),
            Flag::OverBudget => f.over_budget,
            Flag::Truncated => f.truncated || f.snaplen_cut(),
            Flag::Game => f.is_game(),
            Flag::Udp => f.flow.is_some(),
            Flag::Ipv4 => f.flow.is_some_and(|fl| fl.src.is_ipv4()),
            Flag::Ipv6 => f.flow.is_some_and(|fl| fl.src.is_ipv6()),
            Flag::Reassembled => f.kind == Kind::Reassembled,
            Flag::Late => f.seq_event == Some(SeqEvent::Late),
            Flag::Dup => f.seq_event == Some(SeqEvent::Duplicate),
            Flag::Gap => matches!(f.seq_event, Some(SeqEvent::New { gap }) if gap > 0),
            Flag::StreamLate => f.stream_events().iter().any(|s| s.event == SeqEvent::Late),
            Flag::StreamDup => (f.stream_events().iter()).any(|s| s.event == SeqEvent::Duplicate),
            Flag::StreamGap => {
                (f.stream_events().iter()).any(|s| matches!(s.event, SeqEvent::New { gap } if gap > 0))
            }
            Flag::NeverAcked => {
                cx.settled(f) == Some(Settled::NEVER) || cx.settled_messages(f).any(|us| us == Settled::NEVER)
            }
            Flag::Retransmission => cx.verdicts(f).any(|v| v.copy.is_some()),
            Flag::Spurious => cx.verdicts(f).any(|v| v.copy == Some(true)),
            Flag::Naked => cx.verdicts(f).any(|v| v.naked),
            Flag::Replayed => f.fault == Some(FaultKind::Replayed),
            Flag::MacFailure => f.fault == Some(FaultKind::Mac),
        },
        Node::Addr(end, net, port) => {
            let Some(fl) = f.flow else { return false };
            let at = |a: SocketAddr| net.holds(a.ip()) && port.is_none_or(|p| a.port() == p);
            match end {
                End::Src => at(fl.src),
                End::Dst => at(fl.dst),
                End::Either => at(fl.src) || at(fl.dst),
            }
        }
        Node::Proto(p) => crate::decode::headers::has(f.linktype, f.frame_data, p),
        Node::Header(name, t) => wire::eval(name, t, f),
        Node::In(Field::Port, ranges) => f.flow.is_some_and(|fl| {
            let inside = |p: u16| ranges.iter().any(|(a, b)| (*a..=*b).contains(&(p as i128)));
            inside(fl.src.port()) || inside(fl.dst.port())
        }),
        Node::In(Field::StreamGap, ranges) => {
            stream_gaps(f).any(|x| ranges.iter().any(|(a, b)| (*a..=*b).contains(&x)))
        }
        Node::In(Field::Rtt, ranges) => cx
            .rtts(f)
            .any(|x| ranges.iter().any(|(a, b)| (*a..=*b).contains(&x))),
        Node::Compare(Field::Rtt, Cmp::Ne, v) => !cx.rtts(f).any(|x| x == *v),
        Node::Compare(Field::Rtt, cmp, v) => cx.rtts(f).any(|x| ordered(*cmp, x.cmp(v))),
        Node::Compare(Field::StreamGap, cmp, v) => stream_gaps(f).any(|x| ordered(*cmp, x.cmp(v))),
        Node::In(field, ranges) => {
            field_value(*field, f, cx).is_some_and(|x| ranges.iter().any(|(a, b)| (*a..=*b).contains(&x)))
        }
        Node::Compare(Field::Port, cmp, v) => {
            // Either end: any satisfies; `!=` is `!(udp.port == v)`.
            let Some(fl) = f.flow else { return *cmp == Cmp::Ne };
            let test = |p: u16, c: Cmp| ordered(c, (p as i128).cmp(v));
            if *cmp == Cmp::Ne {
                !(test(fl.src.port(), Cmp::Eq) || test(fl.dst.port(), Cmp::Eq))
            } else {
                test(fl.src.port(), *cmp) || test(fl.dst.port(), *cmp)
            }
        }
        Node::Compare(field, cmp, v) => {
            let Some(x) = field_value(*field, f, cx) else {
                return *cmp == Cmp::Ne;
            };
            ordered(*cmp, x.cmp(v))
        }
        Node::Dissected(t) => field_test(t, f),
        Node::Layer(at, n) => cx
            .stacked
            .is_some_and(|s| layers::any_carried(s, *at, f, &|inner| eval(n, inner, cx))),
    }
}

/// The gaps before each message of the packet that is new in its stream.
fn stream_gaps<'a>(f: &PacketEvent<'a>) -> impl Iterator<Item = i128> + 'a {
    f.stream_events().iter().filter_map(|s| match s.event {
        SeqEvent::New { gap } => Some(gap as i128),
        _ => None,
    })
}

/// A built-in field's value in the packet (`None`: it has none).
fn field_value(field: Field, f: &PacketEvent, cx: &Context) -> Option<i128> {
    match field {
        Field::Type => f.packet_type.map(i128::from),
        Field::Seq => f.sequence.map(i128::from),
        Field::Size => f.flow.map(|_| f.size as i128),
        Field::Frame => Some(f.frame as i128),
        Field::FragId => f.fragment.map(|x| x.id as i128),
        Field::FragCount => f.fragment.map(|x| x.count as i128),
        Field::Ack => f.ack.map(i128::from),
        Field::AckBits => f.ack_bits.map(i128::from),
        Field::SrcPort => f.flow.map(|fl| fl.src.port() as i128),
        Field::DstPort => f.flow.map(|fl| fl.dst.port() as i128),
        Field::Port => None,
        Field::Time => Some(f.ts_ns as i128 - cx.origin as i128),
        Field::Rtt => cx.settled(f).filter(|&us| Settled::is_rtt(us)).map(i128::from),
        Field::StreamGap => stream_gaps(f).max(),
        Field::Epoch => Some(f.ts_ns as i128),
        Field::Gap => match f.seq_event {
            Some(SeqEvent::New { gap }) => Some(gap as i128),
            _ => None,
        },
        Field::FrameLen => Some(f.wire_len as i128),
        Field::CapLen => Some(f.frame_data.len() as i128),
    }
}

/// [`eval`] in three values: `None` where the field tree or the ack roles decide.
fn decide(n: &Node, f: &PacketEvent, cx: &Context) -> Option<bool> {
    match n {
        Node::Not(a) => decide(a, f, cx).map(|b| !b),
        Node::And(a, b) => match decide(a, f, cx) {
            Some(false) => Some(false),
            x => match (x, decide(b, f, cx)) {
                (_, Some(false)) => Some(false),
                (Some(true), y) => y,
                _ => None,
            },
        },
        Node::Or(a, b) => match decide(a, f, cx) {
            Some(true) => Some(true),
            x => match (x, decide(b, f, cx)) {
                (_, Some(true)) => Some(true),
                (Some(false), y) => y,
                _ => None,
            },
        },
        // Of another packet type: as when the packet has no tree (see `field_test`).
        Node::Dissected(t) if t.packet_type.is_some_and(|ty| f.packet_type != Some(ty)) => {
            Some(matches!(t.test, Test::Compare(Cmp::Ne, _)) && !t.all)
        }
        Node::Dissected(_)
        | Node::Layer(..)
        | Node::Header(..)
        | Node::Proto(_)
        | Node::Flag(
            Flag::StreamLate
            | Flag::StreamDup
            | Flag::StreamGap
            | Flag::NeverAcked
            | Flag::Retransmission
            | Flag::Spurious
            | Flag::Naked,
        )
        | Node::Compare(
            Field::Ack | Field::AckBits | Field::FrameLen | Field::CapLen | Field::StreamGap | Field::Rtt,
            ..,
        )
        | Node::In(
            Field::Ack | Field::AckBits | Field::FrameLen | Field::CapLen | Field::StreamGap | Field::Rtt,
            _,
        ) => None,
        n => Some(eval(n, f, cx)),
    }
}

impl Node {
    /// A header field, a header's protocol or a frame length is tested somewhere.
    fn reads_frames(&self) -> bool {
        match self {
            Node::Header(..) | Node::Proto(_) => true,
            Node::Compare(f, ..) | Node::In(f, _) => matches!(f, Field::FrameLen | Field::CapLen),
            Node::Not(a) | Node::Layer(_, a) => a.reads_frames(),
            Node::And(a, b) | Node::Or(a, b) => a.reads_frames() || b.reads_frames(),
            _ => false,
        }
    }

    /// The filter reads an inner layer somewhere.
    fn names_layer(&self) -> bool {
        match self {
            Node::Layer(..) => true,
            Node::Not(a) => a.names_layer(),
            Node::And(a, b) | Node::Or(a, b) => a.names_layer() || b.names_layer(),
            _ => false,
        }
    }
}

fn ordered(cmp: Cmp, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match cmp {
        Cmp::Eq => o == Equal,
        Cmp::Ne => o != Equal,
        Cmp::Lt => o == Less,
        Cmp::Le => o != Greater,
        Cmp::Gt => o == Greater,
        Cmp::Ge => o != Less,
    }
}

/// Wireshark's semantics: any occurrence satisfies, `!=` none is equal; `all`: every
/// occurrence, and at least one.
fn field_test(t: &FieldTest, e: &PacketEvent) -> bool {
    let negated = matches!(t.test, Test::Compare(Cmp::Ne, _));
    let Some(d) = e.dissection else {
        return negated && !t.all;
    };
    if t.packet_type.is_some_and(|ty| e.packet_type != Some(ty)) {
        return negated && !t.all;
    }
    let mut seen = false;
    for (i, field) in d.fields.iter().enumerate() {
        if !is_occurrence(&t.segs, d, i) {
            continue;
        }
        seen = true;
        let ok = occurrence(t, field.value, e.payload);
        match (t.all, negated) {
            // `!=`: true when no occurrence equals, i.e. every one differs.
            (_, true) if !ok => return false,
            (false, false) if ok => return true,
            (true, false) if !ok => return false,
            _ => {}
        }
    }
    if negated { true } else { t.all && seen }
}

/// One occurrence's value against the test (`!=` is tested as its `==` being false).
fn occurrence(t: &FieldTest, v: Value, payload: &[u8]) -> bool {
    match &t.test {
        Test::Exists => true,
        Test::Contains(needle) => bytes_of(v, payload).is_some_and(|b| contains(b, needle)),
        Test::Matches(p) => bytes_of(v, payload).is_some_and(|b| p.re.is_match(b)),
        Test::In(members) => members.iter().any(|(lo, hi)| {
            if lo == hi {
                compare(t.holds, v, Cmp::Eq, lo, payload) == Some(true)
            } else {
                compare(t.holds, v, Cmp::Ge, lo, payload) == Some(true)
                    && compare(t.holds, v, Cmp::Le, hi, payload) == Some(true)
            }
        }),
        Test::Compare(cmp, operand) => compare(t.holds, v, *cmp, operand, payload).unwrap_or(*cmp == Cmp::Ne),
    }
}

fn bytes_of(v: Value, payload: &[u8]) -> Option<&[u8]> {
    match v {
        Value::Bytes { offset, len } => payload.get(offset..offset.checked_add(len)?),
        _ => None,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// `value CMP operand`; `None` when the value is not of the operand's kind.
fn compare(holds: Holds, v: Value, cmp: Cmp, operand: &Operand, payload: &[u8]) -> Option<bool> {
    let int = match v {
        Value::Int(x) => Some(x as i128),
        Value::UInt(x) => Some(x as i128),
        Value::Bool(b) => Some(b as i128),
        _ => None,
    };
    let float = match v {
        Value::Float(x) => Some(x as f64),
        Value::Double(x) => Some(x),
        _ => int.map(|i| i as f64),
    };
    Some(match operand {
        Operand::Int(n) => ordered(cmp, int?.cmp(n)),
        Operand::Bool(b) => ordered(cmp, (int? != 0).cmp(b)),
        Operand::Bytes(want) => ordered(cmp, bytes_of(v, payload)?.cmp(want.as_slice())),
        Operand::Float(want) => {
            let x = float?;
            let order = match (holds, v) {
                // Equal within half the step of a compressed float.
                (Holds::Float { step }, _)
                    if step > 0.0 && (x - want).abs() <= step / 2.0 + 1e-9 * want.abs() =>
                {
                    std::cmp::Ordering::Equal
                }
                // An f32 as read equals the value rounded to f32.
                (_, Value::Float(f)) => f.partial_cmp(&(*want as f32))?,
                _ => x.partial_cmp(want)?,
            };
            ordered(cmp, order)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The article's definition: types `A` (1) and `scene` (4).
    fn article() -> Program {
        crate::dissect::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl"))
            .unwrap()
    }

    fn parse(s: &str) -> Result<Filter, FilterError> {
        Filter::parse(s, Some(&article()))
    }

    fn facts() -> PacketEvent<'static> {
        PacketEvent {
            kind: Kind::Game,
            frame: 10,
            flow: Some(crate::engine::FlowId {
                src: "10.0.0.1:40000".parse().unwrap(),
                dst: "10.0.0.2:50000".parse().unwrap(),
            }),
            sequence: Some(150),
            packet_type: Some(4),
            size: 1300,
            status: crate::engine::Status::Ok,
            crc: Some(crate::validate::CrcStatus::Ok),
            over_budget: true,
            ..PacketEvent::empty()
        }
    }

    fn m(s: &str) -> bool {
        parse(s).unwrap().matches(&facts())
    }

    #[test]
    fn examples() {
        assert!(m("type == scene"));
        assert!(!m("type == A"));
        assert!(m("seq > 100"));
        assert!(!m("crc.fail"));
        assert!(!m("frag"));
        assert!(m("size > 1200"));
        assert!(m("flow 10.0.0.1:40000"));
        assert!(m("flow 10.0.0.2"));
        assert!(!m("flow 10.0.0.1:40001"));
        assert!(m("type == scene && seq > 100 && !frag"));
        assert!(m("crc.fail || size > 1200"));
        assert!(m("!(crc.fail || frag)"));
        assert!(m(""));
    }

    #[test]
    fn errors_have_columns() {
        let e = parse("type == bogus").unwrap_err();
        assert_eq!(
            (e.column, e.message.as_str()),
            (9, "no packet type is named `bogus`")
        );
        let e = parse("seq >").unwrap_err();
        assert_eq!(e.column, 6);
        let e = parse("sze > 3").unwrap_err();
        assert_eq!(e.column, 1);
        assert!(parse("(frag").is_err());
        assert!(parse("flow nowhere").is_err());
        // Hostile nesting is refused, not a stack overflow.
        let deep = format!("{}frag", "!".repeat(100_000));
        assert!(parse(&deep).unwrap_err().message.contains("nests more than"));
        let deep = format!("{}frag{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn field_paths_compile_or_say_what_is_near() {
        let f = parse("scene.objects.at_rest == true").unwrap();
        assert!(f.needs_engine());
        assert!(!parse("type == scene && seq > 3").unwrap().needs_engine());
        assert!(parse("objects[2].position.x >= -1.5 && all objects.at_rest == false").is_ok());
        assert!(parse("misc.name contains \"g\\\"g\"").is_ok());
        let e = parse("scene.objects.at_rst == true").unwrap_err();
        assert_eq!(
            (e.column, e.message.as_str()),
            (
                1,
                "packet type scene has no field `objects.at_rst`; did you mean `scene.objects.at_rest`?"
            )
        );
        let e = parse("type == A && objets.at_rest").unwrap_err();
        assert_eq!(e.column, 14);
        assert!(
            e.message.contains("did you mean `objects.at_rest`"),
            "{}",
            e.message
        );
        let e = parse("objects.at_rest == maybe").unwrap_err();
        assert_eq!(
            (e.column, e.message.as_str()),
            (
                20,
                "`maybe` is not a value of objects.at_rest: it takes true or false"
            )
        );
        for bad in [
            "objects[x].at_rest",
            "objects[1.at_rest",
            "objects[99999999999].at_rest",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.message.contains("an element index is a number"),
                "{bad}: {}",
                e.message
            );
        }
        let e = parse("objects.position[1].x == 3").unwrap_err();
        assert!(
            e.message.contains("only an array or list takes an index"),
            "{}",
            e.message
        );
        let e = parse("misc.name == \"gg").unwrap_err();
        assert_eq!(
            (e.column, e.message.as_str()),
            (14, "the string has no closing quote")
        );
        let e = parse("a contains \"x\"").unwrap_err();
        assert!(e.message.contains("not text or bytes"), "{}", e.message);
        // Without a definition only the built-in words exist.
        let e = Filter::parse("objects.at_rest", None).unwrap_err();
        assert!(e.message.contains("need a definition"), "{}", e.message);
    }

    #[test]
    fn directions_aliases_and_words() {
        for yes in [
            "src 10.0.0.1",
            "src 10.0.0.1:40000 and dst 10.0.0.2:50000",
            "ip.src == 10.0.0.1 && ip.dst == 10.0.0.2",
            "ip.addr == 10.0.0.2",
            "ip.src != 10.0.0.2",
            "udp.srcport == 40000 && udp.dstport == 50000",
            "udp.port == 50000 && udp.port > 45000",
            "frame.number == 10 or not frame == 10",
            "not (dst 10.0.0.1) and host 10.0.0.2",
            "over_budget",
            // Networks, as Wireshark writes them (a new user's trial typed one).
            "ip.src == 10.0.0.0/24 && ip.dst == 10.0.0.0/30",
            "ip.addr == 10.0.0.0/8 && src 10.0.0.1/32 && host 0.0.0.0/0",
            "ip.src != 10.0.1.0/24 && not ip.src == ::/0",
            "udp && ip && not ipv6",
        ] {
            assert!(m(yes), "{yes}");
        }
        for no in [
            "dst 10.0.0.1",
            "src 10.0.0.1:50000",
            "ip.src == 10.0.0.2",
            "udp.port != 50000",
            "udp.srcport > 40000",
            "late or dup or gap",
            "ip.src == 10.0.0.2/32",
            "ip.dst == 10.0.0.4/31",
            "ipv6",
            "not udp",
        ] {
            assert!(!m(no), "{no}");
        }
        assert!(
            parse("ip.src == 10.0.0.1:40000")
                .unwrap_err()
                .message
                .contains("without a port")
        );
        assert!(parse("ip.src > 10.0.0.1").is_err());
        for bad in [
            "ip.src == 10.0.0.0/33",
            "host ::/129",
            "src 10.0.0.0/x",
            "ip.src == 10.0.0.0/24:5",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.message.contains("is not a network"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn sequence_verdicts_and_time() {
        let mut e = facts();
        e.ts_ns = 7_500_000_000;
        e.seq_event = Some(SeqEvent::New { gap: 3 });
        let mut f = parse("gap && gap == 3 && gap > 2 && time > 2 && time < 2.6s").unwrap();
        f.start(5_000_000_000);
        assert!(f.matches(&e));
        let mut f = parse("frame.time_relative >= 2500ms && !late && !dup").unwrap();
        f.start(5_000_000_000);
        assert!(f.matches(&e));
        e.seq_event = Some(SeqEvent::Late);
        assert!(parse("late").unwrap().matches(&e) && !parse("gap || gap >= 0").unwrap().matches(&e));
        e.seq_event = Some(SeqEvent::Duplicate);
        assert!(parse("dup").unwrap().matches(&e));
        e.seq_event = Some(SeqEvent::New { gap: 0 });
        assert!(!parse("gap").unwrap().matches(&e) && parse("gap == 0").unwrap().matches(&e));
        // Absolute times compare with the epoch (UTC).
        e.ts_ns = 1_795_312_554_777_485_000; // 2026-11-22T01:55:54.777485Z
        assert!(
            parse("time >= 2026-11-22T01:55:54.5 && time < \"2026-11-22 01:55:55\"")
                .unwrap()
                .matches(&e)
        );
        assert!(parse("frame.time_epoch > 1795312554.7").unwrap().matches(&e));
        assert!(!parse("time > 2026-11-23T00:00:00Z").unwrap().matches(&e));
        assert!(
            parse("time > yesterday")
                .unwrap_err()
                .message
                .contains("is not a time")
        );
    }

    #[test]
    fn did_you_mean_prefers_names_of_the_same_kind() {
        let hint = |s: &str| parse(s).unwrap_err().message;
        assert!(hint("lat").contains("did you mean `late`?"), "{}", hint("lat"));
        assert!(
            hint("tme > 5").contains("did you mean `time`?"),
            "{}",
            hint("tme > 5")
        );
        assert!(hint("gpa").contains("did you mean `gap`?"), "{}", hint("gpa"));
        assert!(hint("dupe").contains("did you mean `dup`?"), "{}", hint("dupe"));
        assert!(
            hint("udp.srcprt == 4").contains("`udp.srcport`"),
            "{}",
            hint("udp.srcprt == 4")
        );
        let e = Filter::parse("lat", None).unwrap_err();
        assert!(e.message.contains("did you mean `late`?"), "{}", e.message);
    }

    proptest::proptest! {
        /// Any arrangement of the filter's words, values and junk compiles or is refused
        /// with a column inside the text; none panics.
        #[test]
        fn any_filter_text_is_parsed_or_refused(words in proptest::collection::vec(
            proptest::sample::select(vec![
                "src", "dst", "flow", "host", "ip.src", "udp.port", "udp.srcport", "time",
                "frame.time_epoch", "gap", "late", "dup", "rtt", "never_acked", "and", "or", "udp", "ip",
                "not", "(", ")", "==", "!=", ">", "<=", "10.0.0.1", "10.0.0.1:40000",
                "[::1]:5", "5", "-1", "2.5s", "250ms", "2026-11-22T10:00:05", "\"2026-02-30 1:2\"",
                "9999-12-31T23:59:60.999999999Z", "-", ".", "objects.at_rest", "lat", "x",
            ]),
            0..12,
        )) {
            let text = words.join(" ");
            match parse(&text) {
                Ok(f) => {
                    let _ = f.matches(&facts());
                }
                Err(e) => proptest::prop_assert!(e.column >= 1 && e.column <= text.chars().count() + 1),
            }
        }
    }

    #[test]
    fn enum_names_are_values() {
        // The article's header `type` is an enum: a packet type's name alone is its test.
        assert_eq!(parse("scene").unwrap().root, parse("type == scene").unwrap().root);
        assert!(parse("type == 4").unwrap().matches(&facts()));
    }
}
