//! The display filter shared by the TUI's `/` bar and `gpcap dissect --filter`:
//! `type == scene`, `seq > 100`, `crc.fail`, `frag`, `reassembled`, `size > 1200`,
//! `flow 10.0.0.1:40000`, combined with `&&`, `||`, `!` and parentheses. It reads the
//! engine's [`PacketEvent`], the one packet model.

use crate::engine::{Kind, PacketEvent};
use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Type,
    Seq,
    Size,
    Frame,
    FragId,
    FragCount,
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
    CrcFail,
    CrcOk,
    Frag,
    IpFrag,
    Malformed,
    OverBudget,
    Truncated,
    Game,
    Reassembled,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Compare(Field, Cmp, i64),
    Flag(Flag),
    Flow(IpAddr, Option<u16>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    True,
}

/// A compiled filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    root: Node,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at column {column}")]
pub struct FilterError {
    pub message: String,
    /// 1-based.
    pub column: usize,
}

struct Parser<'a> {
    toks: Vec<(String, usize)>,
    pos: usize,
    type_names: &'a dyn Fn(&str) -> Option<u32>,
    len: usize,
    /// Nesting of `!` and parentheses, bounded so no filter can exhaust the stack.
    depth: u32,
}

const MAX_NESTING: u32 = 64;

fn tokenize(s: &str) -> Vec<(String, usize)> {
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
        let two: String = b[i..(i + 2).min(b.len())].iter().collect();
        if ["&&", "||", "==", "!=", "<=", ">="].contains(&two.as_str()) {
            out.push((two, start));
            i += 2;
        } else if "()!<>".contains(c) {
            out.push((c.to_string(), start));
            i += 1;
        } else {
            while i < b.len() && !b[i].is_whitespace() && !"()!<>=&|".contains(b[i]) {
                i += 1;
            }
            // IPv6 addresses in brackets keep their colons; `=` never starts a word.
            if i == start {
                out.push((c.to_string(), start));
                i += 1;
            } else {
                out.push((b[start..i].iter().collect(), start));
            }
        }
    }
    out
}

impl Parser<'_> {
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
        while self.peek() == Some("||") {
            self.pos += 1;
            l = Node::Or(Box::new(l), Box::new(self.and()?));
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
        let flag = match word.as_str() {
            "(" => {
                let e = self.or()?;
                if self.peek() != Some(")") {
                    return Err(self.err("expected `)`"));
                }
                self.pos += 1;
                return Ok(e);
            }
            "crc.fail" | "crc.bad" => Some(Flag::CrcFail),
            "crc.ok" | "ok" => Some(Flag::CrcOk),
            "frag" | "fragment" => Some(Flag::Frag),
            "ipfrag" | "ip.frag" => Some(Flag::IpFrag),
            "malformed" => Some(Flag::Malformed),
            "over-budget" | "oversize" => Some(Flag::OverBudget),
            "truncated" => Some(Flag::Truncated),
            "game" => Some(Flag::Game),
            "reassembled" => Some(Flag::Reassembled),
            _ => None,
        };
        if let Some(f) = flag {
            return Ok(Node::Flag(f));
        }
        if word == "flow" {
            let Some(addr) = self.peek().map(str::to_string) else {
                return Err(self.err("`flow` needs an address, like flow 10.0.0.1:40000"));
            };
            let parsed = addr
                .parse::<SocketAddr>()
                .map(|s| (s.ip(), Some(s.port())))
                .or_else(|_| {
                    addr.trim_matches(['[', ']'])
                        .parse::<IpAddr>()
                        .map(|ip| (ip, None))
                });
            let Ok((ip, port)) = parsed else {
                return Err(self.err(format!("`{addr}` is not an address (ip, ip:port or [ipv6]:port)")));
            };
            self.pos += 1;
            return Ok(Node::Flow(ip, port));
        }
        let field = match word.as_str() {
            "type" => Field::Type,
            "seq" | "sequence" => Field::Seq,
            "size" | "len" => Field::Size,
            "frame" => Field::Frame,
            "frag.id" => Field::FragId,
            "frag.count" => Field::FragCount,
            other => {
                self.pos -= 1;
                return Err(self.err(format!(
                    "unknown filter word `{other}` (fields: type seq size frame frag.id frag.count; flags: crc.fail crc.ok frag reassembled ipfrag malformed over-budget truncated game; flow ADDR)"
                )));
            }
        };
        let cmp = match self.peek() {
            Some("==") => Cmp::Eq,
            Some("!=") => Cmp::Ne,
            Some("<") => Cmp::Lt,
            Some("<=") => Cmp::Le,
            Some(">") => Cmp::Gt,
            Some(">=") => Cmp::Ge,
            _ => return Err(self.err(format!("`{word}` needs a comparison: == != < <= > >="))),
        };
        self.pos += 1;
        let Some(v) = self.peek().map(str::to_string) else {
            return Err(self.err("expected a value"));
        };
        let value = match v.parse::<i64>() {
            Ok(n) => n,
            Err(_) if field == Field::Type => match (self.type_names)(&v) {
                Some(t) => t as i64,
                None => return Err(self.err(format!("no packet type is named `{v}`"))),
            },
            Err(_) => return Err(self.err(format!("`{v}` is not a number"))),
        };
        self.pos += 1;
        Ok(Node::Compare(field, cmp, value))
    }
}

impl Filter {
    /// Parses `text`; `type_names` maps a packet type name to its id.
    pub fn parse(text: &str, type_names: &dyn Fn(&str) -> Option<u32>) -> Result<Filter, FilterError> {
        if text.trim().is_empty() {
            return Ok(Filter::all());
        }
        let mut p = Parser {
            toks: tokenize(text),
            pos: 0,
            type_names,
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
        })
    }

    pub fn all() -> Filter {
        Filter {
            root: Node::True,
            text: String::new(),
        }
    }

    pub fn is_all(&self) -> bool {
        self.root == Node::True
    }

    pub fn matches(&self, e: &PacketEvent) -> bool {
        eval(&self.root, e)
    }
}

fn eval(n: &Node, f: &PacketEvent) -> bool {
    match n {
        Node::True => true,
        Node::Not(a) => !eval(a, f),
        Node::And(a, b) => eval(a, f) && eval(b, f),
        Node::Or(a, b) => eval(a, f) || eval(b, f),
        Node::Flag(flag) => match flag {
            Flag::CrcFail => f.status.crc_failed(),
            Flag::CrcOk => f.crc_ok(),
            Flag::Frag => f.fragment.is_some(),
            Flag::IpFrag => f.ip_fragments > 1,
            Flag::Malformed => f.fault.is_some(),
            Flag::OverBudget => f.over_budget,
            Flag::Truncated => f.truncated || f.snaplen_cut(),
            Flag::Game => f.is_game(),
            Flag::Reassembled => f.kind == Kind::Reassembled,
        },
        Node::Flow(ip, port) => f
            .flow
            .iter()
            .flat_map(|fl| [fl.src, fl.dst])
            .any(|a| a.ip() == *ip && port.is_none_or(|p| a.port() == p)),
        Node::Compare(field, cmp, v) => {
            let x = match field {
                Field::Type => f.packet_type.map(|t| t as i64),
                Field::Seq => f.sequence.map(|s| s as i64),
                Field::Size => f.flow.map(|_| f.size as i64),
                Field::Frame => Some(f.frame as i64),
                Field::FragId => f.fragment.map(|x| x.id as i64),
                Field::FragCount => f.fragment.map(|x| x.count as i64),
            };
            let Some(x) = x else { return *cmp == Cmp::Ne };
            match cmp {
                Cmp::Eq => x == *v,
                Cmp::Ne => x != *v,
                Cmp::Lt => x < *v,
                Cmp::Le => x <= *v,
                Cmp::Gt => x > *v,
                Cmp::Ge => x >= *v,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Option<u32> {
        match s {
            "scene" => Some(4),
            "A" => Some(1),
            _ => None,
        }
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
        Filter::parse(s, &names).unwrap().matches(&facts())
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
        let e = Filter::parse("type == bogus", &names).unwrap_err();
        assert_eq!(
            (e.column, e.message.as_str()),
            (9, "no packet type is named `bogus`")
        );
        let e = Filter::parse("seq >", &names).unwrap_err();
        assert_eq!(e.column, 6);
        let e = Filter::parse("sze > 3", &names).unwrap_err();
        assert_eq!(e.column, 1);
        assert!(Filter::parse("(frag", &names).is_err());
        assert!(Filter::parse("flow nowhere", &names).is_err());
        // Hostile nesting is refused, not a stack overflow.
        let deep = format!("{}frag", "!".repeat(100_000));
        assert!(
            Filter::parse(&deep, &names)
                .unwrap_err()
                .message
                .contains("nests more than")
        );
        let deep = format!("{}frag{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(Filter::parse(&deep, &names).is_err());
    }
}
