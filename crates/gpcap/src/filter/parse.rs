//! The parser: `or`, `and`, `not`, parentheses and the built-in tests; dissected
//! fields are in `fields.rs`.

use super::*;

pub(super) struct Parser<'a> {
    pub(super) toks: Vec<(String, usize)>,
    pub(super) pos: usize,
    pub(super) program: Option<&'a Program>,
    pub(super) paths: Vec<PathInfo>,
    /// Definitions inside `program`, outermost first (their names prefix paths).
    pub(super) layers: &'a [Arc<Program>],
    pub(super) needs_engine: bool,
    pub(super) needs_acks: bool,
    pub(super) len: usize,
    /// Nesting of `!` and parentheses, bounded so no filter can exhaust the stack.
    pub(super) depth: u32,
}

pub(super) const MAX_NESTING: u32 = 64;

impl<'a> Parser<'a> {
    pub(super) fn err(&self, message: impl Into<String>) -> FilterError {
        let column = self.toks.get(self.pos).map(|t| t.1).unwrap_or(self.len) + 1;
        FilterError {
            message: message.into(),
            column,
        }
    }

    pub(super) fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|t| t.0.as_str())
    }

    pub(super) fn or(&mut self) -> Result<Node, FilterError> {
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

    pub(super) fn and(&mut self) -> Result<Node, FilterError> {
        let mut l = self.not()?;
        while self.peek() == Some("&&") {
            self.pos += 1;
            l = Node::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }

    pub(super) fn not(&mut self) -> Result<Node, FilterError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.err(format!("the filter nests more than {MAX_NESTING} levels deep")));
        }
        let r = self.not_inner();
        self.depth -= 1;
        r
    }

    pub(super) fn not_inner(&mut self) -> Result<Node, FilterError> {
        if self.peek() == Some("!") {
            self.pos += 1;
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    pub(super) fn atom(&mut self) -> Result<Node, FilterError> {
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
    pub(super) fn or_in_streams(&mut self, n: Node) -> Node {
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
    pub(super) fn set(&mut self, word: &str) -> Result<Vec<(String, String)>, FilterError> {
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
    pub(super) fn value_at(&mut self, field: Field, v: &str) -> Result<(Field, i128), FilterError> {
        self.pos -= 1;
        let r = self.value(field, v);
        self.pos += 1;
        r
    }

    /// `ip.ttl > 3`, `eth.src == 02:00:00:00:00:01`, `vlan.id in {10 42}`, or the name
    /// alone (the frame has the field): a field of the frame's own headers.
    pub(super) fn header(&mut self, name: &'static str, holds: wire::Holds) -> Result<Node, FilterError> {
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
    pub(super) fn ip_address(&mut self, word: &str, end: End) -> Result<Node, FilterError> {
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
    pub(super) fn field_named(&mut self, word: &str) -> Result<Option<Field>, FilterError> {
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
    pub(super) fn value(&mut self, field: Field, v: &str) -> Result<(Field, i128), FilterError> {
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
    pub(super) fn acks(&mut self, word: &str) -> Result<(), FilterError> {
        use gpcap_dissect::program::Role;
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
    pub(super) fn names_a_field(&self, word: &str) -> bool {
        let suffix = format!(".{word}");
        self.paths
            .iter()
            .any(|e| e.path == word || strip_indices(&e.path).ends_with(&suffix))
    }

    /// `ip`, `ip:port`, `[ipv6]:port` or a network `ip/bits` (as Wireshark's
    /// `ip.src == 10.0.0.0/24`) after `word`.
    pub(super) fn address(&mut self, word: &str) -> Result<(Net, Option<u16>), FilterError> {
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

    pub(super) fn type_id(&self, name: &str) -> Option<u32> {
        let p = self.program?;
        p.packets
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.type_id)
            .or_else(|| (p.fragment.is_some() && name == "fragment").then_some(p.fragment_type))
    }

    pub(super) fn cmp(&mut self, what: &str) -> Result<Cmp, FilterError> {
        let Some(cmp) = self.peek().and_then(cmp_of) else {
            return Err(self.err(format!(
                "`{what}` needs a comparison: == != < <= > >= (or eq ne lt le gt ge), or in {{…}}"
            )));
        };
        self.pos += 1;
        Ok(cmp)
    }
}
