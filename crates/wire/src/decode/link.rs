//! Link → IP → UDP/ICMP decoding with etherparse's lax slicer: every layer it could
//! parse is kept, and where it stopped is said.

use super::Malformation;
use etherparse::{
    EtherType, Icmpv4Type, Icmpv6Type, IpNumber, LaxNetSlice, LaxSlicedPacket, TransportSlice, UdpSlice,
    icmpv4::DestUnreachableHeader,
};
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};

/// Link types gpcap decodes (pcap LINKTYPE_* values).
pub mod linktype {
    pub const NULL: i32 = 0;
    pub const ETHERNET: i32 = 1;
    pub const RAW_OLD_12: i32 = 12;
    pub const RAW_OLD_14: i32 = 14;
    pub const RAW: i32 = 101;
    pub const LOOP: i32 = 108;
    pub const LINUX_SLL: i32 = 113;
    pub const IPV4: i32 = 228;
    pub const IPV6: i32 = 229;
    pub const LINUX_SLL2: i32 = 276;

    pub fn name(t: i32) -> String {
        match t {
            NULL => "null/loopback".into(),
            ETHERNET => "ethernet".into(),
            RAW | RAW_OLD_12 | RAW_OLD_14 => "raw ip".into(),
            LOOP => "openbsd loopback".into(),
            LINUX_SLL => "linux sll".into(),
            IPV4 => "raw ipv4".into(),
            IPV6 => "raw ipv6".into(),
            LINUX_SLL2 => "linux sll2".into(),
            other => format!("linktype {other}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IpInfo {
    pub version: u8,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Length of this IP packet (header + payload) as its header says.
    pub total_len: u32,
    pub header_len: u32,
    pub dont_fragment: bool,
    pub id: u32,
    /// Fragment offset in bytes.
    pub frag_offset: u32,
    pub more_fragments: bool,
    pub vlan: Option<u16>,
}

impl IpInfo {
    pub fn is_fragment(&self) -> bool {
        self.more_fragments || self.frag_offset > 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QuotedDatagram {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The quoted IP datagram's total length: the size that did not fit.
    pub ip_len: u32,
}

/// ICMP "fragmentation needed" or ICMPv6 "packet too big".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IcmpTooBig {
    pub from: IpAddr,
    pub to: IpAddr,
    pub v6: bool,
    pub mtu: u32,
    pub quoted: Option<QuotedDatagram>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<'a> {
    Udp {
        ip: IpInfo,
        src_port: u16,
        dst_port: u16,
        payload: &'a [u8],
        /// The UDP header's length is more than was captured.
        truncated: bool,
    },
    /// One piece of an IP-fragmented datagram.
    IpFragment {
        ip: IpInfo,
        protocol: u8,
        payload: &'a [u8],
    },
    Icmp(IcmpTooBig),
    /// Parsed fine but not UDP (TCP, ARP, other ICMP, …).
    Other(&'static str),
    /// The link or network layer could not be parsed.
    Malformed {
        layer: &'static str,
        reason: Malformation,
    },
    UnsupportedLink(i32),
}

fn ip_info(net: &LaxNetSlice, vlan: Option<u16>) -> Option<(IpInfo, IpNumber)> {
    match net {
        LaxNetSlice::Ipv4(v4) => {
            let h = v4.header();
            Some((
                IpInfo {
                    version: 4,
                    src: IpAddr::V4(h.source_addr()),
                    dst: IpAddr::V4(h.destination_addr()),
                    total_len: h.total_len() as u32,
                    header_len: h.ihl() as u32 * 4,
                    dont_fragment: h.dont_fragment(),
                    id: h.identification() as u32,
                    frag_offset: h.fragments_offset().byte_offset() as u32,
                    more_fragments: h.more_fragments(),
                    vlan,
                },
                v4.payload().ip_number,
            ))
        }
        LaxNetSlice::Ipv6(v6) => {
            let h = v6.header();
            let exts = v6.extensions();
            let (frag_offset, more, id) =
                ipv6_fragment(exts.first_header().map(|n| n.0), exts.slice()).unwrap_or((0, false, 0));
            Some((
                IpInfo {
                    version: 6,
                    src: IpAddr::V6(h.source_addr()),
                    dst: IpAddr::V6(h.destination_addr()),
                    total_len: h.payload_length() as u32 + 40,
                    header_len: 40,
                    dont_fragment: true,
                    id,
                    frag_offset,
                    more_fragments: more,
                    vlan,
                },
                v6.payload().ip_number,
            ))
        }
        LaxNetSlice::Arp(_) => None,
    }
}

/// The fragment header's offset (bytes), more-fragments flag and id, when the IPv6
/// extension chain has one. (etherparse's extension iterator trusts lengths a lax parse
/// did not check: a truncated hop-by-hop header in the tcpdump corpus made it read out
/// of bounds; the chain checks each.)
fn ipv6_fragment(first: Option<u8>, exts: &[u8]) -> Option<(u32, bool, u32)> {
    use super::wire::{ipproto, ipv6_chain, ipv6_fragment as frag};
    let (_, at) = ipv6_chain(first?, exts).find(|&(kind, _)| kind == ipproto::IPV6_FRAGMENT)?;
    let f = &exts[at..];
    let offset = frag::OFFSET.get(f)? as u32 * 8;
    Some((offset, frag::MORE.get(f)? == 1, frag::ID.get(f)? as u32))
}

/// The flow a quoted datagram (inside an ICMP error) belonged to.
fn quoted(payload: &[u8]) -> Option<QuotedDatagram> {
    let p = LaxSlicedPacket::from_ip(payload).ok()?;
    let (ip, _) = ip_info(p.net.as_ref()?, None)?;
    let ip_payload = match p.net.as_ref()? {
        LaxNetSlice::Ipv4(v4) => v4.payload().payload,
        LaxNetSlice::Ipv6(v6) => v6.payload().payload,
        LaxNetSlice::Arp(_) => return None,
    };
    let ports = ip_payload.get(..4)?;
    Some(QuotedDatagram {
        src: SocketAddr::new(ip.src, u16::from_be_bytes([ports[0], ports[1]])),
        dst: SocketAddr::new(ip.dst, u16::from_be_bytes([ports[2], ports[3]])),
        ip_len: ip.total_len,
    })
}

/// A whole UDP datagram over Ethernet (with at most one VLAN tag) or raw IP, IPv4
/// without fragmentation or IPv6 without extension headers, every length consistent:
/// decoded directly with one bounds check per layer (the common case, about five times
/// cheaper than the general slicer). Anything else — truncated, fragmented, odd — is
/// left to [`decode`]'s general path, which gives the same answer for what this accepts
/// (a property test holds them equal).
#[inline(always)]
pub fn decode_fast(linktype: i32, data: &[u8]) -> Option<Decoded<'_>> {
    use super::wire::*;
    use linktype::*;
    let is_ip = |t: u64| t == ethertype::IPV4 as u64 || t == ethertype::IPV6 as u64;
    let (ip, vlan) = match linktype {
        ETHERNET => {
            let header = data.get(..eth::LEN)?;
            match eth::TYPE.get(header)? {
                t if is_ip(t) => (&data[eth::LEN..], None),
                t if t == ethertype::VLAN as u64 => {
                    let tag = data.get(eth::LEN..eth::LEN + vlan::LEN)?;
                    if !is_ip(vlan::TYPE.get(tag)?) {
                        return None;
                    }
                    (&data[eth::LEN + vlan::LEN..], Some(vlan::ID.get(tag)? as u16))
                }
                _ => return None,
            }
        }
        RAW | IPV4 | IPV6 => (data, None),
        _ => return None,
    };
    let (info, transport) = match ipv4::VERSION.get(ip)? {
        4 => {
            let h = ip.get(..ipv4::LEN)?;
            let header_len = ipv4::HEADER_LEN.get(h)? as usize * 4;
            let total_len = ipv4::TOTAL_LEN.get(h)? as usize;
            if header_len < ipv4::LEN
                || total_len < header_len + udp::LEN
                || total_len > ip.len()
                || ipv4::PROTOCOL.get(h)? != ipproto::UDP as u64
            {
                return None;
            }
            // Fragments (MF or an offset) go the general way.
            if ipv4::MORE_FRAGMENTS.get(h)? != 0 || ipv4::FRAGMENT_OFFSET.get(h)? != 0 {
                return None;
            }
            let src: [u8; 4] = ipv4::SRC.slice(h)?.try_into().ok()?;
            let dst: [u8; 4] = ipv4::DST.slice(h)?.try_into().ok()?;
            let info = IpInfo {
                version: 4,
                src: IpAddr::from(src),
                dst: IpAddr::from(dst),
                total_len: total_len as u32,
                header_len: header_len as u32,
                dont_fragment: ipv4::DONT_FRAGMENT.get(h)? != 0,
                id: ipv4::ID.get(h)? as u32,
                frag_offset: 0,
                more_fragments: false,
                vlan,
            };
            (info, &ip[header_len..total_len])
        }
        6 => {
            let h = ip.get(..ipv6::LEN)?;
            let payload_len = ipv6::PAYLOAD_LEN.get(h)? as usize;
            if ipv6::NEXT.get(h)? != ipproto::UDP as u64
                || payload_len < udp::LEN
                || ipv6::LEN + payload_len > ip.len()
            {
                return None;
            }
            let src: [u8; 16] = ipv6::SRC.slice(h)?.try_into().ok()?;
            let dst: [u8; 16] = ipv6::DST.slice(h)?.try_into().ok()?;
            let info = IpInfo {
                version: 6,
                src: IpAddr::from(src),
                dst: IpAddr::from(dst),
                total_len: (payload_len + ipv6::LEN) as u32,
                header_len: ipv6::LEN as u32,
                dont_fragment: true,
                id: 0,
                frag_offset: 0,
                more_fragments: false,
                vlan,
            };
            (info, &ip[ipv6::LEN..ipv6::LEN + payload_len])
        }
        _ => return None,
    };
    let udp_len = udp::LENGTH.get(transport)? as usize;
    if udp_len < udp::LEN || udp_len > transport.len() {
        return None;
    }
    Some(Decoded::Udp {
        ip: info,
        src_port: udp::SRC_PORT.get(transport)? as u16,
        dst_port: udp::DST_PORT.get(transport)? as u16,
        payload: &transport[udp::LEN..udp_len],
        truncated: false,
    })
}

/// Slices one frame by its link type.
/// Inlined with its fast path, so the decoding reaches the caller in registers rather
/// than through memory read back before it landed; the general path stays out of line.
#[inline]
pub fn decode(linktype: i32, data: &[u8]) -> Decoded<'_> {
    if let Some(d) = decode_fast(linktype, data) {
        return d;
    }
    decode_general(linktype, data)
}

/// The general path: etherparse's lax slicer, which keeps every layer it could parse.
#[inline(never)]
pub fn decode_general(linktype: i32, data: &[u8]) -> Decoded<'_> {
    use linktype::*;
    let sliced = match linktype {
        ETHERNET => LaxSlicedPacket::from_ethernet(data).map_err(|e| ("ethernet", Malformation::Len(e))),
        RAW | RAW_OLD_12 | RAW_OLD_14 | IPV4 | IPV6 => {
            LaxSlicedPacket::from_ip(data).map_err(|e| ("ip", Malformation::Ip(e)))
        }
        NULL | LOOP => {
            let Some(fam) = data.first_chunk::<4>() else {
                return Decoded::Malformed {
                    layer: "loopback",
                    reason: Malformation::Short {
                        have: data.len(),
                        need: 4,
                    },
                };
            };
            let family = if linktype == LOOP {
                u32::from_be_bytes(*fam)
            } else {
                // Host byte order of the capturing machine: accept either.
                let le = u32::from_le_bytes(*fam);
                if le < 256 { le } else { u32::from_be_bytes(*fam) }
            };
            match family {
                2 | 24 | 28 | 30 => {
                    LaxSlicedPacket::from_ip(&data[4..]).map_err(|e| ("ip", Malformation::Ip(e)))
                }
                _ => return Decoded::Other("non-ip loopback family"),
            }
        }
        LINUX_SLL | LINUX_SLL2 => {
            let (hl, proto_at) = if linktype == LINUX_SLL { (16, 14) } else { (20, 0) };
            let Some(rest) = data.get(hl..) else {
                return Decoded::Malformed {
                    layer: if linktype == LINUX_SLL {
                        "linux sll"
                    } else {
                        "linux sll2"
                    },
                    reason: Malformation::Short {
                        have: data.len(),
                        need: hl,
                    },
                };
            };
            let proto = u16::from_be_bytes([data[proto_at], data[proto_at + 1]]);
            Ok(LaxSlicedPacket::from_ether_type(EtherType(proto), rest))
        }
        other => return Decoded::UnsupportedLink(other),
    };
    let p = match sliced {
        Ok(p) => p,
        Err((layer, reason)) => return Decoded::Malformed { layer, reason },
    };
    let vlan = p.link_exts.iter().find_map(|e| match e {
        etherparse::LaxLinkExtSlice::Vlan(v) => Some(v.vlan_identifier().value()),
        _ => None,
    });
    let Some(net) = p.net.as_ref() else {
        if let Some((e, layer)) = &p.stop_err {
            return Decoded::Malformed {
                layer: layer_name(*layer),
                reason: Malformation::Slice(e.clone()),
            };
        }
        return Decoded::Other("not ip");
    };
    let Some((ip, proto)) = ip_info(net, vlan) else {
        return Decoded::Other("arp");
    };
    if ip.is_fragment() {
        let payload = match net {
            LaxNetSlice::Ipv4(v4) => v4.payload().payload,
            LaxNetSlice::Ipv6(v6) => v6.payload().payload,
            LaxNetSlice::Arp(_) => &[],
        };
        return Decoded::IpFragment {
            ip,
            protocol: proto.0,
            payload,
        };
    }
    match &p.transport {
        Some(TransportSlice::Udp(udp)) => udp_datagram(ip, udp),
        Some(TransportSlice::Icmpv4(icmp)) => match icmp.icmp_type() {
            Icmpv4Type::DestinationUnreachable(DestUnreachableHeader::FragmentationNeeded {
                next_hop_mtu,
            }) => Decoded::Icmp(IcmpTooBig {
                from: ip.src,
                to: ip.dst,
                v6: false,
                mtu: next_hop_mtu as u32,
                quoted: quoted(icmp.payload()),
            }),
            _ => Decoded::Other("icmp"),
        },
        Some(TransportSlice::Icmpv6(icmp)) => match icmp.icmp_type() {
            Icmpv6Type::PacketTooBig { mtu } => Decoded::Icmp(IcmpTooBig {
                from: ip.src,
                to: ip.dst,
                v6: true,
                mtu,
                quoted: quoted(icmp.payload()),
            }),
            _ => Decoded::Other("icmpv6"),
        },
        Some(TransportSlice::Tcp(_)) => Decoded::Other("tcp"),
        Some(_) => Decoded::Other("other transport"),
        None => match &p.stop_err {
            Some((e, layer)) if proto == IpNumber::UDP => Decoded::Malformed {
                layer: layer_name(*layer),
                reason: Malformation::Slice(e.clone()),
            },
            _ if proto == IpNumber::UDP => Decoded::Malformed {
                layer: "udp",
                reason: Malformation::UdpMissing,
            },
            _ => Decoded::Other("other ip protocol"),
        },
    }
}

fn udp_datagram<'a>(ip: IpInfo, udp: &UdpSlice<'a>) -> Decoded<'a> {
    let declared = (udp.length() as usize).saturating_sub(8);
    let payload = udp.payload();
    Decoded::Udp {
        ip,
        src_port: udp.source_port(),
        dst_port: udp.destination_port(),
        truncated: payload.len() < declared,
        payload,
    }
}

/// Parses a UDP header + payload reassembled from IP fragments.
pub fn udp_from_reassembled(ip: IpInfo, data: &[u8]) -> Decoded<'_> {
    match UdpSlice::from_slice_lax(data) {
        Ok(udp) => udp_datagram(ip, &udp),
        Err(e) => Decoded::Malformed {
            layer: "udp",
            reason: Malformation::Len(e),
        },
    }
}

fn layer_name(l: etherparse::err::Layer) -> &'static str {
    use etherparse::err::Layer::*;
    match l {
        Ethernet2Header => "ethernet",
        VlanHeader => "vlan",
        Ipv4Header | Ipv4Packet => "ipv4",
        Ipv6Header | Ipv6Packet => "ipv6",
        UdpHeader | UdpPayload => "udp",
        _ => "network",
    }
}
