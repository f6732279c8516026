//! A frame's headers below the game protocol — link, VLAN, IP, UDP — with the fields
//! Wireshark names (`eth.src`, `vlan.id`, `ip.ttl`, `ip.flags.df`, `ipv6.hlim`,
//! `udp.length`), each with its place in the frame: what the display filter compares,
//! and the first layers of `dissect`'s and the TUI's field trees. Read on demand from
//! the captured bytes, nothing kept per packet; a header cut short ends the walk there.

use super::linktype::*;
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

    /// A number field of `n` bits at `bit`.
    fn num(&mut self, name: &'static str, label: &'static str, bit: usize, n: u32) {
        if let Some(v) = self.bits(bit, n) {
            self.emit(name, label, bit, n, HeaderValue::Num(v));
        }
    }

    fn mac(&mut self, name: &'static str, label: &'static str, at: usize) {
        if let Some(b) = self.data.get(at..at + 6) {
            let mut m = [0u8; 6];
            m.copy_from_slice(b);
            self.emit(name, label, at * 8, 48, HeaderValue::Mac(m));
        }
    }

    fn ip(&mut self, name: &'static str, label: &'static str, at: usize, v6: bool) {
        let ip = if v6 {
            self.data
                .get(at..at + 16)
                .and_then(|b| <[u8; 16]>::try_from(b).ok())
                .map(IpAddr::from)
        } else {
            self.data
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(IpAddr::from)
        };
        if let Some(ip) = ip {
            self.emit(
                name,
                label,
                at * 8,
                if v6 { 128 } else { 32 },
                HeaderValue::Ip(ip),
            );
        }
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
    match t {
        0x0800 => Some(Ok(Next::V4)),
        0x86dd => Some(Ok(Next::V6)),
        0x8100 | 0x88a8 => Some(Err(())),
        _ => None,
    }
}

/// The link header's fields; where the network header starts and its EtherType.
fn link(w: &mut Walk, linktype: i32) -> Option<(usize, u64)> {
    match linktype {
        ETHERNET => {
            if !w.layer("eth", 0, 14) {
                return None;
            }
            w.mac("eth.dst", "Destination", 0);
            w.mac("eth.src", "Source", 6);
            w.num("eth.type", "Type", 96, 16);
            Some((14, w.bits(96, 16)?))
        }
        LINUX_SLL => {
            if !w.layer("sll", 0, 16) {
                return None;
            }
            w.num("sll.pkttype", "Packet type", 0, 16);
            w.num("sll.hatype", "Link-layer address type", 16, 16);
            w.num("sll.halen", "Link-layer address length", 32, 16);
            w.num("sll.etype", "Protocol", 112, 16);
            Some((16, w.bits(112, 16)?))
        }
        LINUX_SLL2 => {
            if !w.layer("sll", 0, 20) {
                return None;
            }
            w.num("sll.etype", "Protocol", 0, 16);
            w.num("sll.ifindex", "Interface index", 32, 32);
            w.num("sll.hatype", "Link-layer address type", 64, 16);
            w.num("sll.pkttype", "Packet type", 80, 8);
            w.num("sll.halen", "Link-layer address length", 88, 8);
            Some((20, w.bits(0, 16)?))
        }
        NULL | LOOP => {
            if !w.layer("null", 0, 4) {
                return None;
            }
            let raw = w.bits(0, 32)? as u32;
            // BSD loopback's family is in the capturing host's byte order.
            let family = if linktype == NULL && raw.swap_bytes() < 256 {
                raw.swap_bytes()
            } else {
                raw
            };
            w.emit("null.family", "Family", 0, 32, HeaderValue::Num(family as u64));
            let t = match family {
                2 => 0x0800,
                24 | 28 | 30 => 0x86dd,
                _ => return None,
            };
            Some((4, t))
        }
        RAW | RAW_OLD_12 | RAW_OLD_14 | IPV4 | IPV6 => {
            let t = match w.data.first()? >> 4 {
                4 => 0x0800,
                6 => 0x86dd,
                _ => return None,
            };
            Some((0, t))
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
                if !w.layer("vlan", at, 4) {
                    return None;
                }
                let b = at * 8;
                w.num("vlan.priority", "Priority", b, 3);
                w.num("vlan.dei", "DEI", b + 3, 1);
                w.num("vlan.id", "ID", b + 4, 12);
                w.num("vlan.etype", "Type", b + 16, 16);
                t = w.bits(b + 16, 16)?;
                at += 4;
            }
        }
    }
    None
}

/// The IPv4 header's fields; where UDP starts, when it is UDP in the frame (not a
/// fragment past the first).
fn ipv4(w: &mut Walk, at: usize) -> Option<usize> {
    let ihl = (*w.data.get(at)? & 0x0f) as usize * 4;
    if ihl < 20 || !w.layer("ip", at, ihl) {
        return None;
    }
    let b = at * 8;
    w.num("ip.version", "Version", b, 4);
    w.emit(
        "ip.hdr_len",
        "Header Length",
        b + 4,
        4,
        HeaderValue::Num(ihl as u64),
    );
    w.num("ip.dsfield", "Differentiated Services Field", b + 8, 8);
    w.num("ip.dsfield.dscp", "Differentiated Services Codepoint", b + 8, 6);
    w.num("ip.dsfield.ecn", "Explicit Congestion Notification", b + 14, 2);
    w.num("ip.len", "Total Length", b + 16, 16);
    w.num("ip.id", "Identification", b + 32, 16);
    w.num("ip.flags", "Flags", b + 48, 3);
    w.num("ip.flags.rb", "Reserved bit", b + 48, 1);
    w.num("ip.flags.df", "Don't fragment", b + 49, 1);
    w.num("ip.flags.mf", "More fragments", b + 50, 1);
    // In bytes, as Wireshark shows it (the header counts 8-byte units).
    let offset = w.bits(b + 51, 13)? * 8;
    w.emit(
        "ip.frag_offset",
        "Fragment Offset",
        b + 51,
        13,
        HeaderValue::Num(offset),
    );
    w.num("ip.ttl", "Time to Live", b + 64, 8);
    w.num("ip.proto", "Protocol", b + 72, 8);
    w.num("ip.checksum", "Header Checksum", b + 80, 16);
    w.ip("ip.src", "Source Address", at + 12, false);
    w.ip("ip.dst", "Destination Address", at + 16, false);
    (w.bits(b + 72, 8)? == 17 && offset == 0).then_some(at + ihl)
}

/// The IPv6 header's fields (extension headers passed over); where UDP starts.
fn ipv6(w: &mut Walk, at: usize) -> Option<usize> {
    if !w.layer("ipv6", at, 40) {
        return None;
    }
    let b = at * 8;
    w.num("ipv6.version", "Version", b, 4);
    w.num("ipv6.tclass", "Traffic Class", b + 4, 8);
    w.num("ipv6.flow", "Flow Label", b + 12, 20);
    w.num("ipv6.plen", "Payload Length", b + 32, 16);
    w.num("ipv6.nxt", "Next Header", b + 48, 8);
    w.num("ipv6.hlim", "Hop Limit", b + 56, 8);
    w.ip("ipv6.src", "Source Address", at + 8, true);
    w.ip("ipv6.dst", "Destination Address", at + 24, true);
    let mut next = w.bits(b + 48, 8)?;
    let mut at = at + 40;
    for _ in 0..16 {
        let h = w.data.get(at..)?;
        match next {
            17 => return Some(at),
            // Hop-by-hop, routing, destination options: (length + 1) × 8 bytes.
            0 | 43 | 60 => {
                next = *h.first()? as u64;
                at += (*h.get(1)? as usize + 1) * 8;
            }
            // A fragment header: UDP is in the frame only in the first fragment.
            44 => {
                let f = h.get(..8)?;
                if u16::from_be_bytes([f[2], f[3]]) >> 3 != 0 {
                    return None;
                }
                next = f[0] as u64;
                at += 8;
            }
            51 => {
                next = *h.first()? as u64;
                at += (*h.get(1)? as usize + 2) * 4;
            }
            _ => return None,
        }
    }
    None
}

fn udp(w: &mut Walk, at: usize) {
    if !w.layer("udp", at, 8) {
        return;
    }
    let b = at * 8;
    w.num("udp.srcport", "Source Port", b, 16);
    w.num("udp.dstport", "Destination Port", b + 16, 16);
    w.num("udp.length", "Length", b + 32, 16);
    w.num("udp.checksum", "Checksum", b + 48, 16);
}
