//! A frame's headers below the game protocol — link, VLAN, IP, UDP — with the fields
//! Wireshark names (`eth.src`, `vlan.id`, `ip.ttl`, `ip.flags.df`, `ipv6.hlim`,
//! `udp.length`), each with its place in the frame: what the display filter compares,
//! and the first layers of `dissect`'s and the TUI's field trees. Read on demand from
//! the captured bytes, nothing kept per packet; a header cut short ends the walk there.

use super::linktype::*;
use super::wire::{
    Field, Shown, eth, ethertype, ipproto, ipv4, ipv6, ipv6_chain, ipv6_fragment, null, sll, sll2, udp, vlan,
};
use std::net::IpAddr;

/// A header field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderValue {
    Num(u64),
    Mac([u8; 6]),
    Ip(IpAddr),
}

/// One field of a header: its Wireshark name, its label, and where it is in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderField {
    /// The display filter's name (`ip.ttl`).
    pub name: &'static str,
    /// What Wireshark's tree calls it (`Time to Live`).
    pub label: &'static str,
    /// Bit offset in the frame (from the first byte's high bit, as the wire sends it).
    pub bit: usize,
    pub bits: u32,
    pub value: HeaderValue,
}

/// What the walk meets, in frame order: a header starting, then its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    /// A header of `len` bytes at byte `at`: `eth`, `vlan`, `sll`, `null`, `ip`, `ipv6`, `udp`.
    Layer {
        proto: &'static str,
        at: usize,
        len: usize,
    },
    Field(HeaderField),
}

/// One header with its fields (what [`layers`] collects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderLayer {
    pub proto: &'static str,
    pub at: usize,
    pub len: usize,
    pub fields: Vec<HeaderField>,
}

impl HeaderLayer {
    /// The value of the field named `name`.
    pub fn get(&self, name: &str) -> Option<HeaderValue> {
        self.fields.iter().find(|f| f.name == name).map(|f| f.value)
    }
}

/// Every header of the frame, in order.
pub fn layers(linktype: i32, frame: &[u8]) -> Vec<HeaderLayer> {
    let mut out: Vec<HeaderLayer> = Vec::new();
    walk(linktype, frame, &mut |m| {
        match m {
            Met::Layer { proto, at, len } => out.push(HeaderLayer {
                proto,
                at,
                len,
                fields: Vec::new(),
            }),
            Met::Field(f) => {
                if let Some(l) = out.last_mut() {
                    l.fields.push(f);
                }
            }
        }
        true
    });
    out
}

/// The value of the first field named `name` in the frame (allocates nothing).
pub fn value(linktype: i32, frame: &[u8], name: &str) -> Option<HeaderValue> {
    let mut found = None;
    walk(linktype, frame, &mut |m| match m {
        Met::Field(f) if f.name == name => {
            found = Some(f.value);
            false
        }
        _ => true,
    });
    found
}

/// Whether the frame has a header of protocol `proto` (`eth`, `vlan`, `ip`, `ipv6`, `udp`).
pub fn has(linktype: i32, frame: &[u8], proto: &str) -> bool {
    let mut found = false;
    walk(linktype, frame, &mut |m| {
        found |= matches!(m, Met::Layer { proto: p, .. } if p == proto);
        !found
    });
    found
}

/// The walk's cursor over the frame; `go` is false once the visitor has what it wants.
struct Walk<'a, 'f> {
    data: &'a [u8],
    visit: &'f mut dyn FnMut(Met) -> bool,
    go: bool,
}

impl Walk<'_, '_> {
    /// Bits `bit..bit + n` (n ≤ 64) as a big-endian number, when the frame holds them.
    fn bits(&self, bit: usize, n: u32) -> Option<u64> {
        let last = (bit + n as usize).div_ceil(8);
        let bytes = self.data.get(bit / 8..last)?;
        let mut v: u128 = 0;
        for &b in bytes {
            v = v << 8 | b as u128;
        }
        let tail = last * 8 - (bit + n as usize);
        let mask = if n >= 64 {
            u64::MAX as u128
        } else {
            (1u128 << n) - 1
        };
        Some(((v >> tail) & mask) as u64)
    }

    fn layer(&mut self, proto: &'static str, at: usize, len: usize) -> bool {
        if self.go && self.data.len() >= at + len {
            self.go = (self.visit)(Met::Layer { proto, at, len });
            return self.go;
        }
        false
    }

    fn emit(&mut self, name: &'static str, label: &'static str, bit: usize, bits: u32, value: HeaderValue) {
        if self.go {
            self.go = (self.visit)(Met::Field(HeaderField {
                name,
                label,
                bit,
                bits,
                value,
            }));
        }
    }

    /// A header's field, its header starting at byte `at`, shown as it says.
    fn field(&mut self, at: usize, f: &Field) {
        let bit = at * 8 + f.bit;
        let span = at + f.bytes().start..at + f.bytes().end;
        let value = match f.shown {
            Shown::Num => self.bits(bit, f.bits).map(HeaderValue::Num),
            Shown::Bytes(unit) => self.bits(bit, f.bits).map(|v| HeaderValue::Num(v * unit)),
            Shown::Mac => self
                .data
                .get(span)
                .and_then(|b| <[u8; 6]>::try_from(b).ok())
                .map(HeaderValue::Mac),
            Shown::Ip => self.data.get(span).and_then(|b| match b.len() {
                4 => <[u8; 4]>::try_from(b)
                    .ok()
                    .map(|a| HeaderValue::Ip(IpAddr::from(a))),
                _ => <[u8; 16]>::try_from(b)
                    .ok()
                    .map(|a| HeaderValue::Ip(IpAddr::from(a))),
            }),
        };
        if let Some(v) = value {
            self.emit(f.name, f.label, bit, f.bits, v);
        }
    }

    /// Every shown field of a header starting at byte `at`.
    fn fields(&mut self, at: usize, fields: &[Field]) {
        for f in fields {
            self.field(at, f);
        }
    }

    /// A field's value in a header starting at byte `at`.
    fn get(&self, at: usize, f: &Field) -> Option<u64> {
        f.get(self.data.get(at..)?)
    }
}

/// Walks the frame's headers in order, handing each header and field to `visit` until it
/// returns false or a header is cut short.
pub fn walk(linktype: i32, data: &[u8], visit: &mut dyn FnMut(Met) -> bool) {
    let mut w = Walk {
        data,
        visit,
        go: true,
    };
    let Some((at, next)) = link(&mut w, linktype) else {
        return;
    };
    let at = vlans(&mut w, at, next);
    let Some((at, next)) = at else { return };
    let udp_at = match next {
        Next::V4 => ipv4(&mut w, at),
        Next::V6 => ipv6(&mut w, at),
    };
    if let Some(at) = udp_at {
        udp(&mut w, at);
    }
}

/// What follows the link header.
#[derive(Clone, Copy)]
enum Next {
    V4,
    V6,
}

/// An EtherType (or a link's family): IP, a VLAN tag (`Err`), or something else (`None`).
fn ethertype(t: u64) -> Option<Result<Next, ()>> {
    match t as u16 {
        ethertype::IPV4 => Some(Ok(Next::V4)),
        ethertype::IPV6 => Some(Ok(Next::V6)),
        ethertype::VLAN | ethertype::QINQ => Some(Err(())),
        _ => None,
    }
}

/// The link header's fields; where the network header starts and its EtherType.
fn link(w: &mut Walk, linktype: i32) -> Option<(usize, u64)> {
    match linktype {
        ETHERNET => {
            if !w.layer("eth", 0, eth::LEN) {
                return None;
            }
            w.fields(0, &eth::SHOWN);
            Some((eth::LEN, w.get(0, &eth::TYPE)?))
        }
        LINUX_SLL => {
            if !w.layer("sll", 0, sll::LEN) {
                return None;
            }
            w.fields(0, &sll::SHOWN);
            Some((sll::LEN, w.get(0, &sll::TYPE)?))
        }
        LINUX_SLL2 => {
            if !w.layer("sll", 0, sll2::LEN) {
                return None;
            }
            w.fields(0, &sll2::SHOWN);
            Some((sll2::LEN, w.get(0, &sll2::TYPE)?))
        }
        NULL | LOOP => {
            if !w.layer("null", 0, null::LEN) {
                return None;
            }
            let raw = w.get(0, &null::FAMILY)? as u32;
            // BSD loopback's family is in the capturing host's byte order.
            let family = if linktype == NULL && raw.swap_bytes() < 256 {
                raw.swap_bytes()
            } else {
                raw
            };
            let f = null::FAMILY;
            w.emit(f.name, f.label, f.bit, f.bits, HeaderValue::Num(family as u64));
            let t = match family {
                2 => ethertype::IPV4,
                24 | 28 | 30 => ethertype::IPV6,
                _ => return None,
            };
            Some((null::LEN, t as u64))
        }
        RAW | RAW_OLD_12 | RAW_OLD_14 | IPV4 | IPV6 => {
            let t = match w.get(0, &ipv4::VERSION)? {
                4 => ethertype::IPV4,
                6 => ethertype::IPV6,
                _ => return None,
            };
            Some((0, t as u64))
        }
        _ => None,
    }
}

/// 802.1Q / 802.1ad tags, each a header of its own; the network header and its kind.
fn vlans(w: &mut Walk, mut at: usize, mut t: u64) -> Option<(usize, Next)> {
    for _ in 0..8 {
        match ethertype(t)? {
            Ok(next) => return Some((at, next)),
            Err(()) => {
                if !w.layer("vlan", at, vlan::LEN) {
                    return None;
                }
                w.fields(at, &vlan::SHOWN);
                t = w.get(at, &vlan::TYPE)?;
                at += vlan::LEN;
            }
        }
    }
    None
}

/// The IPv4 header's fields; where UDP starts, when it is UDP in the frame (not a
/// fragment past the first).
fn ipv4(w: &mut Walk, at: usize) -> Option<usize> {
    let ihl = w.get(at, &ipv4::HEADER_LEN)? as usize * 4;
    if ihl < ipv4::LEN || !w.layer("ip", at, ihl) {
        return None;
    }
    w.fields(at, &ipv4::SHOWN);
    let udp = w.get(at, &ipv4::PROTOCOL)? == ipproto::UDP as u64;
    (udp && w.get(at, &ipv4::FRAGMENT_OFFSET)? == 0).then_some(at + ihl)
}

/// The IPv6 header's fields (extension headers passed over); where UDP starts.
fn ipv6(w: &mut Walk, at: usize) -> Option<usize> {
    if !w.layer("ipv6", at, ipv6::LEN) {
        return None;
    }
    w.fields(at, &ipv6::SHOWN);
    let first = w.get(at, &ipv6::NEXT)? as u8;
    let after = at + ipv6::LEN;
    let rest = w.data.get(after..)?;
    for (kind, h) in ipv6_chain(first, rest) {
        match kind {
            ipproto::UDP => return Some(after + h),
            // UDP is in the frame only in the first fragment.
            ipproto::IPV6_FRAGMENT if ipv6_fragment::OFFSET.get(&rest[h..])? != 0 => return None,
            _ => {}
        }
    }
    None
}

fn udp(w: &mut Walk, at: usize) {
    if w.layer("udp", at, udp::LEN) {
        w.fields(at, &udp::SHOWN);
    }
}
