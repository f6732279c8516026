//! The link, IP and UDP headers described once, field by field: where each field lies
//! in its header (bit offset, bits), its Wireshark name and label, and how its value is
//! shown. The fast decoder reads through these descriptions, the header walk
//! (`headers.rs`) shows them, and the generator (`crates/generate/src/net.rs`) writes
//! through them, so a frame written is the frame read and shown. The general decoder
//! is etherparse's.

use std::ops::Range;

/// How a field's value is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Num,
    Mac,
    /// An IPv4 (32 bits) or IPv6 (128 bits) address.
    Ip,
    /// A count of units of this many bytes, shown in bytes (IPv4's header length in
    /// 4-byte words, its fragment offset in 8-byte units).
    Bytes(u64),
}

/// One field of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The display filter's name (`ip.ttl`).
    pub name: &'static str,
    /// What Wireshark's tree calls it (`Time to Live`).
    pub label: &'static str,
    /// Bit offset from the header's first byte's high bit, as the wire sends it.
    pub bit: usize,
    pub bits: u32,
    pub shown: Shown,
}

impl Field {
    const fn num(name: &'static str, label: &'static str, bit: usize, bits: u32) -> Field {
        Field {
            name,
            label,
            bit,
            bits,
            shown: Shown::Num,
        }
    }

    const fn shown(self, shown: Shown) -> Field {
        Field { shown, ..self }
    }

    /// The bytes of its header it lies in.
    #[inline(always)]
    pub const fn bytes(&self) -> Range<usize> {
        self.bit / 8..(self.bit + self.bits as usize).div_ceil(8)
    }

    /// Its value (a field of at most 64 bits), when `header` holds it.
    #[inline(always)]
    pub fn get(&self, header: &[u8]) -> Option<u64> {
        let span = self.bytes();
        let tail = span.end * 8 - (self.bit + self.bits as usize);
        let mut v: u128 = 0;
        for &b in header.get(span)? {
            v = v << 8 | b as u128;
        }
        Some(((v >> tail) & mask(self.bits)) as u64)
    }

    /// Its bytes (a field of whole bytes: an address), when `header` holds them.
    #[inline(always)]
    pub fn slice<'a>(&self, header: &'a [u8]) -> Option<&'a [u8]> {
        header.get(self.bytes())
    }

    /// Writes `v` (its low `bits`) into `header`, which holds the field; the other bits
    /// of the bytes it shares are kept.
    pub fn set(&self, header: &mut [u8], v: u64) {
        let span = self.bytes();
        let tail = span.end * 8 - (self.bit + self.bits as usize);
        let Some(bytes) = header.get_mut(span) else {
            debug_assert!(false, "{} is past its header's end", self.name);
            return;
        };
        let mut old: u128 = 0;
        for &b in bytes.iter() {
            old = old << 8 | b as u128;
        }
        let m = mask(self.bits) << tail;
        let mut new = (old & !m) | ((v as u128) << tail & m);
        for b in bytes.iter_mut().rev() {
            *b = new as u8;
            new >>= 8;
        }
    }

    /// Writes an address (or any field of whole bytes) into `header`.
    pub fn set_bytes(&self, header: &mut [u8], value: &[u8]) {
        match header.get_mut(self.bytes()) {
            Some(b) if b.len() == value.len() => b.copy_from_slice(value),
            _ => debug_assert!(false, "{} does not hold {} bytes", self.name, value.len()),
        }
    }
}

fn mask(bits: u32) -> u128 {
    if bits >= 64 {
        u64::MAX as u128
    } else {
        (1u128 << bits) - 1
    }
}

/// EtherType values (Ethernet, VLAN and Linux SLL headers).
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const IPV6: u16 = 0x86dd;
    /// An 802.1Q tag follows.
    pub const VLAN: u16 = 0x8100;
    /// An 802.1ad (QinQ) service tag follows.
    pub const QINQ: u16 = 0x88a8;
}

/// IP protocol numbers (IPv4 `protocol`, IPv6 `next header`).
pub mod ipproto {
    pub const HOP_BY_HOP: u8 = 0;
    pub const ICMP: u8 = 1;
    pub const UDP: u8 = 17;
    pub const IPV6_ROUTING: u8 = 43;
    /// IPv6's fragment extension header.
    pub const IPV6_FRAGMENT: u8 = 44;
    pub const AUTHENTICATION: u8 = 51;
    pub const ICMPV6: u8 = 58;
    pub const IPV6_DESTINATION: u8 = 60;
}

/// Ethernet II.
pub mod eth {
    use super::{Field, Shown};
    pub const LEN: usize = 14;
    pub const DST: Field = Field::num("eth.dst", "Destination", 0, 48).shown(Shown::Mac);
    pub const SRC: Field = Field::num("eth.src", "Source", 48, 48).shown(Shown::Mac);
    pub const TYPE: Field = Field::num("eth.type", "Type", 96, 16);
    pub const SHOWN: [Field; 3] = [DST, SRC, TYPE];
}

/// An 802.1Q / 802.1ad tag: TCI and the inner EtherType.
pub mod vlan {
    use super::Field;
    pub const LEN: usize = 4;
    pub const PRIORITY: Field = Field::num("vlan.priority", "Priority", 0, 3);
    pub const DEI: Field = Field::num("vlan.dei", "DEI", 3, 1);
    pub const ID: Field = Field::num("vlan.id", "ID", 4, 12);
    pub const TYPE: Field = Field::num("vlan.etype", "Type", 16, 16);
    pub const SHOWN: [Field; 4] = [PRIORITY, DEI, ID, TYPE];
}

/// Linux cooked capture, version 1.
pub mod sll {
    use super::Field;
    pub const LEN: usize = 16;
    pub const PKTTYPE: Field = Field::num("sll.pkttype", "Packet type", 0, 16);
    pub const HATYPE: Field = Field::num("sll.hatype", "Link-layer address type", 16, 16);
    pub const HALEN: Field = Field::num("sll.halen", "Link-layer address length", 32, 16);
    pub const TYPE: Field = Field::num("sll.etype", "Protocol", 112, 16);
    pub const SHOWN: [Field; 4] = [PKTTYPE, HATYPE, HALEN, TYPE];
}

/// Linux cooked capture, version 2 (`tcpdump -i any`).
pub mod sll2 {
    use super::Field;
    pub const LEN: usize = 20;
    pub const TYPE: Field = Field::num("sll.etype", "Protocol", 0, 16);
    pub const IFINDEX: Field = Field::num("sll.ifindex", "Interface index", 32, 32);
    pub const HATYPE: Field = Field::num("sll.hatype", "Link-layer address type", 64, 16);
    pub const PKTTYPE: Field = Field::num("sll.pkttype", "Packet type", 80, 8);
    pub const HALEN: Field = Field::num("sll.halen", "Link-layer address length", 88, 8);
    /// The sender's link-layer address, padded to 8 bytes (not shown).
    pub const ADDRESS: Field = Field::num("sll.src", "Source", 96, 64);
    pub const SHOWN: [Field; 5] = [TYPE, IFINDEX, HATYPE, PKTTYPE, HALEN];
}

/// BSD loopback: the address family, in the capturing host's byte order (`NULL`) or
/// big-endian (`LOOP`).
pub mod null {
    use super::Field;
    pub const LEN: usize = 4;
    pub const FAMILY: Field = Field::num("null.family", "Family", 0, 32);
}

/// IPv4 (options pass over as part of the header's length).
pub mod ipv4 {
    use super::{Field, Shown};
    /// Without options.
    pub const LEN: usize = 20;
    pub const VERSION: Field = Field::num("ip.version", "Version", 0, 4);
    pub const HEADER_LEN: Field = Field::num("ip.hdr_len", "Header Length", 4, 4).shown(Shown::Bytes(4));
    pub const DSFIELD: Field = Field::num("ip.dsfield", "Differentiated Services Field", 8, 8);
    pub const DSCP: Field = Field::num("ip.dsfield.dscp", "Differentiated Services Codepoint", 8, 6);
    pub const ECN: Field = Field::num("ip.dsfield.ecn", "Explicit Congestion Notification", 14, 2);
    pub const TOTAL_LEN: Field = Field::num("ip.len", "Total Length", 16, 16);
    pub const ID: Field = Field::num("ip.id", "Identification", 32, 16);
    pub const FLAGS: Field = Field::num("ip.flags", "Flags", 48, 3);
    pub const RESERVED: Field = Field::num("ip.flags.rb", "Reserved bit", 48, 1);
    pub const DONT_FRAGMENT: Field = Field::num("ip.flags.df", "Don't fragment", 49, 1);
    pub const MORE_FRAGMENTS: Field = Field::num("ip.flags.mf", "More fragments", 50, 1);
    pub const FRAGMENT_OFFSET: Field =
        Field::num("ip.frag_offset", "Fragment Offset", 51, 13).shown(Shown::Bytes(8));
    pub const TTL: Field = Field::num("ip.ttl", "Time to Live", 64, 8);
    pub const PROTOCOL: Field = Field::num("ip.proto", "Protocol", 72, 8);
    pub const CHECKSUM: Field = Field::num("ip.checksum", "Header Checksum", 80, 16);
    pub const SRC: Field = Field::num("ip.src", "Source Address", 96, 32).shown(Shown::Ip);
    pub const DST: Field = Field::num("ip.dst", "Destination Address", 128, 32).shown(Shown::Ip);
    pub const SHOWN: [Field; 17] = [
        VERSION,
        HEADER_LEN,
        DSFIELD,
        DSCP,
        ECN,
        TOTAL_LEN,
        ID,
        FLAGS,
        RESERVED,
        DONT_FRAGMENT,
        MORE_FRAGMENTS,
        FRAGMENT_OFFSET,
        TTL,
        PROTOCOL,
        CHECKSUM,
        SRC,
        DST,
    ];
}

/// IPv6's fixed header.
pub mod ipv6 {
    use super::{Field, Shown};
    pub const LEN: usize = 40;
    pub const VERSION: Field = Field::num("ipv6.version", "Version", 0, 4);
    pub const TCLASS: Field = Field::num("ipv6.tclass", "Traffic Class", 4, 8);
    pub const FLOW: Field = Field::num("ipv6.flow", "Flow Label", 12, 20);
    pub const PAYLOAD_LEN: Field = Field::num("ipv6.plen", "Payload Length", 32, 16);
    pub const NEXT: Field = Field::num("ipv6.nxt", "Next Header", 48, 8);
    pub const HOP_LIMIT: Field = Field::num("ipv6.hlim", "Hop Limit", 56, 8);
    pub const SRC: Field = Field::num("ipv6.src", "Source Address", 64, 128).shown(Shown::Ip);
    pub const DST: Field = Field::num("ipv6.dst", "Destination Address", 192, 128).shown(Shown::Ip);
    pub const SHOWN: [Field; 8] = [VERSION, TCLASS, FLOW, PAYLOAD_LEN, NEXT, HOP_LIMIT, SRC, DST];
}

/// IPv6's fragment extension header (not shown: the walk passes over extensions).
pub mod ipv6_fragment {
    use super::{Field, Shown};
    pub const LEN: usize = 8;
    pub const NEXT: Field = Field::num("ipv6.fraghdr.nxt", "Next header", 0, 8);
    pub const OFFSET: Field = Field::num("ipv6.fraghdr.offset", "Offset", 16, 13).shown(Shown::Bytes(8));
    pub const MORE: Field = Field::num("ipv6.fraghdr.more", "More Fragments", 31, 1);
    pub const ID: Field = Field::num("ipv6.fraghdr.ident", "Identification", 32, 32);
}

/// UDP.
pub mod udp {
    use super::Field;
    pub const LEN: usize = 8;
    pub const SRC_PORT: Field = Field::num("udp.srcport", "Source Port", 0, 16);
    pub const DST_PORT: Field = Field::num("udp.dstport", "Destination Port", 16, 16);
    pub const LENGTH: Field = Field::num("udp.length", "Length", 32, 16);
    pub const CHECKSUM: Field = Field::num("udp.checksum", "Checksum", 48, 16);
    pub const SHOWN: [Field; 4] = [SRC_PORT, DST_PORT, LENGTH, CHECKSUM];
}

/// IPv6's chain of headers after the fixed one: each header's kind (a next-header
/// value) and where it starts in `data` (what follows the fixed header), extensions
/// first and then the upper layer's, which ends the chain. A header cut short, or a
/// 16th extension, ends it too; every length is checked against `data`.
pub fn ipv6_chain(first: u8, data: &[u8]) -> impl Iterator<Item = (u8, usize)> + '_ {
    let mut next = Some((first, 0usize));
    std::iter::from_fn(move || {
        let (kind, at) = next.take()?;
        let h = data.get(at..)?;
        next = extension_len(kind, h).and_then(|len| Some((*h.first()?, at + len)));
        Some((kind, at))
    })
    .take(16)
}

/// The length of an extension header of kind `kind` starting `h`; `None` for an
/// upper layer (or a header too short to say).
fn extension_len(kind: u8, h: &[u8]) -> Option<usize> {
    use ipproto::*;
    match kind {
        HOP_BY_HOP | IPV6_ROUTING | IPV6_DESTINATION => Some((*h.get(1)? as usize + 1) * 8),
        IPV6_FRAGMENT => Some(ipv6_fragment::LEN),
        AUTHENTICATION => Some((*h.get(1)? as usize + 2) * 4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_what_they_wrote_and_keep_their_neighbours() {
        let mut h = [0xffu8; ipv4::LEN];
        ipv4::FRAGMENT_OFFSET.set(&mut h, 0x0123);
        assert_eq!(ipv4::FRAGMENT_OFFSET.get(&h), Some(0x0123));
        assert_eq!(ipv4::FLAGS.get(&h), Some(0b111));
        assert_eq!(&h[6..8], &[0xe1, 0x23]);
        vlan::ID.set(&mut h[..4], 42);
        assert_eq!(&h[..2], &[0xf0, 42]);
        ipv4::SRC.set_bytes(&mut h, &[10, 0, 0, 1]);
        assert_eq!(ipv4::SRC.slice(&h), Some(&[10u8, 0, 0, 1][..]));
        assert_eq!(udp::CHECKSUM.get(&h[..7]), None);
    }

    /// Every number field of every header.
    fn numbers() -> Vec<Field> {
        [
            &eth::SHOWN[..],
            &vlan::SHOWN,
            &sll::SHOWN,
            &sll2::SHOWN,
            &ipv4::SHOWN,
            &ipv6::SHOWN,
            &udp::SHOWN,
        ]
        .concat()
        .into_iter()
        .chain([
            null::FAMILY,
            ipv6_fragment::NEXT,
            ipv6_fragment::OFFSET,
            ipv6_fragment::MORE,
            ipv6_fragment::ID,
        ])
        .filter(|f| f.bits <= 64)
        .collect()
    }

    proptest::proptest! {
        /// What is written is read back, and no other bit of the header changes.
        #[test]
        fn set_then_get_round_trips(pick in 0usize..64, v: u64, background: [u8; 40]) {
            let fields = numbers();
            let f = fields[pick % fields.len()];
            let mut h = background;
            f.set(&mut h, v);
            proptest::prop_assert_eq!(f.get(&h), Some(v & mask(f.bits) as u64));
            f.set(&mut h, f.get(&background).unwrap());
            proptest::prop_assert_eq!(h, background);
        }
    }

    #[test]
    fn the_chain_stops_at_the_upper_layer_a_cut_or_sixteen_extensions() {
        // Hop-by-hop (8 bytes), a fragment header, then UDP.
        let mut d = vec![ipproto::IPV6_FRAGMENT, 0, 0, 0, 0, 0, 0, 0];
        d.extend([ipproto::UDP, 0, 0, 0, 0, 0, 0, 1]);
        let chain: Vec<_> = ipv6_chain(ipproto::HOP_BY_HOP, &d).collect();
        assert_eq!(chain, [(0, 0), (44, 8), (17, 16)]);
        assert_eq!(ipv6_chain(ipproto::HOP_BY_HOP, &d[..1]).count(), 1);
        let looped = [ipproto::HOP_BY_HOP, 0, 0, 0, 0, 0, 0, 0].repeat(40);
        assert_eq!(ipv6_chain(ipproto::HOP_BY_HOP, &looped).count(), 16);
    }
}
