//! What a filter compiles to: the fields and flags it reads, and its tree of tests.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
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
pub(super) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flag {
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
pub(super) struct Net {
    pub(super) ip: IpAddr,
    pub(super) prefix: u8,
}

impl Net {
    pub(super) fn host(ip: IpAddr) -> Net {
        let prefix = if ip.is_ipv4() { 32 } else { 128 };
        Net { ip, prefix }
    }

    /// `ip/prefix`, when the prefix fits the address's family.
    pub(super) fn new(ip: IpAddr, prefix: u8) -> Option<Net> {
        (prefix <= Net::host(ip).prefix).then_some(Net { ip, prefix })
    }

    /// Whether `a` is this address, or in this network (same family).
    pub(super) fn holds(&self, a: IpAddr) -> bool {
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
pub(super) enum End {
    Src,
    Dst,
    Either,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
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
pub(super) enum Operand {
    Int(i128),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Test {
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
pub(super) struct FieldTest {
    /// The packet type the path was prefixed with (`scene.objects…`).
    pub(super) packet_type: Option<u32>,
    pub(super) segs: Vec<Step>,
    pub(super) holds: Holds,
    pub(super) all: bool,
    pub(super) test: Test,
}
