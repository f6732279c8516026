//! Frames as a capture would hold them: IPv4/IPv6 + UDP (with checksums), IP
//! fragmentation, ICMP "fragmentation needed" / "packet too big", and the link layer
//! (Ethernet with an optional VLAN tag, Linux SLL2, or raw IP).

use gpcap_wire::decode::linktype;
use gpcap_wire::decode::wire::{
    IPV4_HEADER, IPV6_FRAGMENT_HEADER, IPV6_HEADER, UDP_HEADER, VLAN_ID_MASK, ethertype, ipproto,
};
use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Ethernet { vlan: Option<u16> },
    Sll2,
    Raw,
}

impl Link {
    /// The pcap LINKTYPE_* value.
    pub fn linktype(&self) -> u32 {
        match self {
            Link::Ethernet { .. } => linktype::ETHERNET as u32,
            Link::Sll2 => linktype::LINUX_SLL2 as u32,
            Link::Raw => linktype::RAW as u32,
        }
    }

    pub fn frame(&self, ip_packet: &[u8], v6: bool) -> Vec<u8> {
        let mut f = Vec::with_capacity(ip_packet.len() + 24);
        self.frame_into(&mut f, ip_packet, v6);
        f
    }

    /// [`Link::frame`] appended to `f` (a sender's batch buffer).
    pub fn frame_into(&self, f: &mut Vec<u8>, ip_packet: &[u8], v6: bool) {
        let ethertype: u16 = if v6 { ethertype::IPV6 } else { ethertype::IPV4 };
        match self {
            Link::Ethernet { vlan } => {
                f.extend([0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01]);
                if let Some(id) = vlan {
                    f.extend(ethertype::VLAN.to_be_bytes());
                    f.extend((id & VLAN_ID_MASK).to_be_bytes());
                }
                f.extend(ethertype.to_be_bytes());
            }
            Link::Sll2 => {
                f.extend(ethertype.to_be_bytes());
                f.extend([0, 0]); // reserved
                f.extend(2u32.to_be_bytes()); // interface index
                f.extend(1u16.to_be_bytes()); // ARPHRD_ETHER
                f.push(0); // to us
                f.push(6);
                f.extend([0x02, 0, 0, 0, 0, 0x01, 0, 0]);
            }
            Link::Raw => {}
        }
        f.extend_from_slice(ip_packet);
    }
}

fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    let mut odd: Option<u8> = None;
    for part in parts {
        for &b in *part {
            match odd.take() {
                Some(hi) => sum += u16::from_be_bytes([hi, b]) as u32,
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u16::from_be_bytes([hi, 0]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ip_bytes(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    }
}

/// UDP header + payload, checksummed for its addresses.
pub fn udp(src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() + UDP_HEADER) as u16;
    let mut u = Vec::with_capacity(payload.len() + UDP_HEADER);
    u.extend(src.port().to_be_bytes());
    u.extend(dst.port().to_be_bytes());
    u.extend(len.to_be_bytes());
    u.extend([0, 0]);
    u.extend_from_slice(payload);
    let (s, d) = (ip_bytes(src.ip()), ip_bytes(dst.ip()));
    let pseudo: Vec<u8> = if src.is_ipv6() {
        let mut p = Vec::new();
        p.extend(&s);
        p.extend(&d);
        p.extend((u.len() as u32).to_be_bytes());
        p.extend([0, 0, 0, ipproto::UDP]);
        p
    } else {
        let mut p = Vec::new();
        p.extend(&s);
        p.extend(&d);
        p.extend([0, ipproto::UDP]);
        p.extend(len.to_be_bytes());
        p
    };
    let mut c = checksum(&[&pseudo, &u]);
    if c == 0 {
        c = 0xffff;
    }
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// An IPv4 header for `payload_len` bytes of `protocol` at fragment offset `offset`.
#[allow(clippy::too_many_arguments)]
fn ipv4(
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    id: u16,
    df: bool,
    more: bool,
    offset: usize,
    payload: &[u8],
) -> Vec<u8> {
    let mut h = vec![0x45, 0];
    h.extend(((IPV4_HEADER + payload.len()) as u16).to_be_bytes());
    h.extend(id.to_be_bytes());
    let flags = (df as u16) << 14 | (more as u16) << 13 | (offset / 8) as u16;
    h.extend(flags.to_be_bytes());
    h.extend([64, protocol, 0, 0]);
    h.extend(ip_bytes(src));
    h.extend(ip_bytes(dst));
    let c = checksum(&[&h]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn ipv6(src: IpAddr, dst: IpAddr, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend((payload.len() as u16).to_be_bytes());
    h.extend([next, 64]);
    h.extend(ip_bytes(src));
    h.extend(ip_bytes(dst));
    h.extend_from_slice(payload);
    h
}

/// The IP packets carrying one UDP datagram: one, or several IP fragments when the
/// packet exceeds `link_mtu` (IPv4 with DF clear, or IPv6 fragmented by the sender).
pub fn ip_packets(
    src: SocketAddr,
    dst: SocketAddr,
    payload: &[u8],
    id: u32,
    df: bool,
    link_mtu: usize,
) -> Vec<Vec<u8>> {
    let u = udp(src, dst, payload);
    let v6 = src.is_ipv6();
    let header = if v6 { IPV6_HEADER } else { IPV4_HEADER };
    if header + u.len() <= link_mtu || (df && !v6) {
        return vec![if v6 {
            ipv6(src.ip(), dst.ip(), ipproto::UDP, &u)
        } else {
            ipv4(src.ip(), dst.ip(), ipproto::UDP, id as u16, df, false, 0, &u)
        }];
    }
    // Fragment: every piece but the last a multiple of 8 bytes.
    let room = if v6 {
        link_mtu.saturating_sub(header + IPV6_FRAGMENT_HEADER)
    } else {
        link_mtu.saturating_sub(header)
    };
    let chunk = (room / 8).max(1) * 8;
    let pieces: Vec<&[u8]> = u.chunks(chunk).collect();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let offset = i * chunk;
            if v6 {
                let mut fh = vec![ipproto::UDP, 0];
                fh.extend((((offset / 8) as u16) << 3 | (i < last) as u16).to_be_bytes());
                fh.extend(id.to_be_bytes());
                fh.extend_from_slice(p);
                ipv6(src.ip(), dst.ip(), ipproto::IPV6_FRAGMENT, &fh)
            } else {
                ipv4(
                    src.ip(),
                    dst.ip(),
                    ipproto::UDP,
                    id as u16,
                    false,
                    i < last,
                    offset,
                    p,
                )
            }
        })
        .collect()
}

/// The router's answer to a datagram too big for `mtu`: ICMP type 3 code 4 (v4) or
/// ICMPv6 type 2 (v6), quoting the start of the datagram.
pub fn icmp_too_big(router: IpAddr, datagram: &[u8], to: IpAddr, mtu: u32) -> Vec<u8> {
    let v6 = router.is_ipv6();
    let quote = &datagram[..datagram.len().min(if v6 { 1232 - 48 } else { 28 })];
    let mut m = if v6 {
        let mut m = vec![2, 0, 0, 0];
        m.extend(mtu.to_be_bytes());
        m
    } else {
        let mut m = vec![3, 4, 0, 0, 0, 0];
        m.extend((mtu as u16).to_be_bytes());
        m
    };
    m.extend_from_slice(quote);
    let c = if v6 {
        let mut pseudo = Vec::new();
        pseudo.extend(ip_bytes(router));
        pseudo.extend(ip_bytes(to));
        pseudo.extend((m.len() as u32).to_be_bytes());
        pseudo.extend([0, 0, 0, ipproto::ICMPV6]);
        checksum(&[&pseudo, &m])
    } else {
        checksum(&[&m])
    };
    m[2..4].copy_from_slice(&c.to_be_bytes());
    if v6 {
        ipv6(router, to, ipproto::ICMPV6, &m)
    } else {
        ipv4(router, to, ipproto::ICMP, 0, false, false, 0, &m)
    }
}
