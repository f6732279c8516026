//! Frames as a capture would hold them: IPv4/IPv6 + UDP (with checksums), IP
//! fragmentation, ICMP "fragmentation needed" / "packet too big", and the link layer
//! (Ethernet with an optional VLAN tag, Linux SLL2, or raw IP).

use gpcap_wire::decode::linktype;
use gpcap_wire::decode::wire::{eth, ethertype, ipproto, ipv4, ipv6, ipv6_fragment, sll2, udp, vlan};
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
        let ethertype = if v6 { ethertype::IPV6 } else { ethertype::IPV4 } as u64;
        match self {
            Link::Ethernet { vlan: tag } => {
                let mut h = [0u8; eth::LEN];
                eth::DST.set_bytes(&mut h, &[0x02, 0, 0, 0, 0, 0x02]);
                eth::SRC.set_bytes(&mut h, &[0x02, 0, 0, 0, 0, 0x01]);
                match tag {
                    Some(id) => {
                        eth::TYPE.set(&mut h, ethertype::VLAN as u64);
                        let mut t = [0u8; vlan::LEN];
                        vlan::ID.set(&mut t, *id as u64);
                        vlan::TYPE.set(&mut t, ethertype);
                        f.extend_from_slice(&h);
                        f.extend_from_slice(&t);
                    }
                    None => {
                        eth::TYPE.set(&mut h, ethertype);
                        f.extend_from_slice(&h);
                    }
                }
            }
            Link::Sll2 => {
                let mut h = [0u8; sll2::LEN];
                sll2::TYPE.set(&mut h, ethertype);
                sll2::IFINDEX.set(&mut h, 2);
                sll2::HATYPE.set(&mut h, 1); // ARPHRD_ETHER
                sll2::PKTTYPE.set(&mut h, 0); // to us
                sll2::HALEN.set(&mut h, 6);
                sll2::ADDRESS.set_bytes(&mut h, &[0x02, 0, 0, 0, 0, 0x01, 0, 0]);
                f.extend_from_slice(&h);
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
    let len = (payload.len() + udp::LEN) as u16;
    let mut u = vec![0u8; udp::LEN];
    udp::SRC_PORT.set(&mut u, src.port() as u64);
    udp::DST_PORT.set(&mut u, dst.port() as u64);
    udp::LENGTH.set(&mut u, len as u64);
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
    udp::CHECKSUM.set(&mut u, c as u64);
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
    let mut h = vec![0u8; ipv4::LEN];
    ipv4::VERSION.set(&mut h, 4);
    ipv4::HEADER_LEN.set(&mut h, (ipv4::LEN / 4) as u64);
    ipv4::TOTAL_LEN.set(&mut h, (ipv4::LEN + payload.len()) as u64);
    ipv4::ID.set(&mut h, id as u64);
    ipv4::DONT_FRAGMENT.set(&mut h, df as u64);
    ipv4::MORE_FRAGMENTS.set(&mut h, more as u64);
    ipv4::FRAGMENT_OFFSET.set(&mut h, (offset / 8) as u64);
    ipv4::TTL.set(&mut h, 64);
    ipv4::PROTOCOL.set(&mut h, protocol as u64);
    ipv4::SRC.set_bytes(&mut h, &ip_bytes(src));
    ipv4::DST.set_bytes(&mut h, &ip_bytes(dst));
    let c = checksum(&[&h]);
    ipv4::CHECKSUM.set(&mut h, c as u64);
    h.extend_from_slice(payload);
    h
}

fn ipv6(src: IpAddr, dst: IpAddr, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; ipv6::LEN];
    ipv6::VERSION.set(&mut h, 6);
    ipv6::PAYLOAD_LEN.set(&mut h, payload.len() as u64);
    ipv6::NEXT.set(&mut h, next as u64);
    ipv6::HOP_LIMIT.set(&mut h, 64);
    ipv6::SRC.set_bytes(&mut h, &ip_bytes(src));
    ipv6::DST.set_bytes(&mut h, &ip_bytes(dst));
    h.extend_from_slice(payload);
    h
}

/// IPv6's fragment header for the piece at `offset` bytes, followed by the piece.
fn ipv6_fragment(id: u32, offset: usize, more: bool, piece: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; ipv6_fragment::LEN];
    ipv6_fragment::NEXT.set(&mut h, ipproto::UDP as u64);
    ipv6_fragment::OFFSET.set(&mut h, (offset / 8) as u64);
    ipv6_fragment::MORE.set(&mut h, more as u64);
    ipv6_fragment::ID.set(&mut h, id as u64);
    h.extend_from_slice(piece);
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
    let header = if v6 { ipv6::LEN } else { ipv4::LEN };
    if header + u.len() <= link_mtu || (df && !v6) {
        return vec![if v6 {
            ipv6(src.ip(), dst.ip(), ipproto::UDP, &u)
        } else {
            ipv4(src.ip(), dst.ip(), ipproto::UDP, id as u16, df, false, 0, &u)
        }];
    }
    // Fragment: every piece but the last a multiple of 8 bytes.
    let room = if v6 {
        link_mtu.saturating_sub(header + ipv6_fragment::LEN)
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
                let fh = ipv6_fragment(id, offset, i < last, p);
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
