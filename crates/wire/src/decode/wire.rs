//! The link, IP and UDP layout as numbers, written once: what the fast decoder reads
//! and what the generator writes (`crates/generate/src/net.rs`) name the same constants, so a
//! frame written is the frame read. The general decoder is etherparse's.

/// EtherType values (Ethernet, VLAN and Linux SLL2 headers).
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const IPV6: u16 = 0x86dd;
    /// An 802.1Q tag follows.
    pub const VLAN: u16 = 0x8100;
}

/// IP protocol numbers (IPv4 `protocol`, IPv6 `next header`).
pub mod ipproto {
    pub const ICMP: u8 = 1;
    pub const UDP: u8 = 17;
    /// IPv6's fragment extension header.
    pub const IPV6_FRAGMENT: u8 = 44;
    pub const ICMPV6: u8 = 58;
}

/// Ethernet: destination, source, EtherType.
pub const ETHERNET_HEADER: usize = 14;
/// Where the EtherType lies in an Ethernet header.
pub const ETHERTYPE_AT: usize = 12;
/// An 802.1Q tag: TCI and the inner EtherType.
pub const VLAN_TAG: usize = 4;
/// The VLAN id's bits in the tag's TCI.
pub const VLAN_ID_MASK: u16 = 0x0fff;
/// An IPv4 header without options.
pub const IPV4_HEADER: usize = 20;
/// IPv4's flags and fragment offset: DF, MF and the offset in 8-byte units.
pub const IPV4_DONT_FRAGMENT: u16 = 0x4000;
pub const IPV4_FRAGMENT_BITS: u16 = 0x3fff;
/// The fixed IPv6 header.
pub const IPV6_HEADER: usize = 40;
/// IPv6's fragment extension header: next header, offset and flags, id.
pub const IPV6_FRAGMENT_HEADER: usize = 8;
/// The UDP header: ports, length, checksum.
pub const UDP_HEADER: usize = 8;
