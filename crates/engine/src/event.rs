//! The one packet model: what the engine says about each frame and each reassembled
//! game packet. Every sink, the display filter and every printer read these.

use crate::carried::Carried;
use crate::seq::SeqEvent;
use gpcap_dissect::{Dissection, FaultKind, FragmentInfo, MessageInfo};
pub use gpcap_wire::decode::FlowId;
use gpcap_wire::decode::{IcmpTooBig, IpInfo};
use gpcap_wire::validate::CrcStatus;
use serde::Serialize;

use std::net::IpAddr;

/// An address as one integer, IPv4 as its mapped IPv6 form.
#[inline]
pub fn ip_bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped().to_bits(),
        IpAddr::V6(a) => a.to_bits(),
    }
}

/// [`FlowId`] as integers: the flow table's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PackedFlow {
    src: u128,
    dst: u128,
    ports: u32,
    v6: u8,
}

impl PackedFlow {
    /// Straight from the addresses and ports, without building socket addresses first.
    #[inline]
    pub fn new(src: IpAddr, dst: IpAddr, sport: u16, dport: u16) -> Self {
        PackedFlow {
            src: ip_bits(src),
            dst: ip_bits(dst),
            ports: (sport as u32) << 16 | dport as u32,
            // An IPv4 address and its mapped IPv6 form are different flows.
            v6: (src.is_ipv6() as u8) << 1 | dst.is_ipv6() as u8,
        }
    }
}

/// What an event stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A frame that is not UDP (TCP, ARP, other ICMP…).
    #[default]
    NotUdp,
    /// A frame whose link or IP header could not be read.
    BadFrame,
    /// ICMP "fragmentation needed" or ICMPv6 "packet too big".
    Icmp,
    /// An IP fragment that did not (yet) complete a datagram.
    IpPiece,
    /// A UDP datagram off the protocol's ports.
    OtherUdp,
    /// A UDP datagram on the protocol's ports.
    Game,
    /// A game packet put back together from its game-level fragments.
    Reassembled,
}

/// The verdict on a game datagram or reassembled packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// Not a game datagram: nothing was validated.
    #[default]
    None,
    /// Valid: checksum (if any) and header fine, body read as the definition says.
    Ok,
    /// Cut by the snaplen or shorter than its UDP length: not validated.
    Truncated,
    CrcMismatch,
    /// Too short to hold a checksum.
    TooShort,
    /// Checksum fine, header unreadable (see `fault`).
    BadHeader,
    /// Header fine, body not as the definition says (see `fault`).
    Malformed,
    /// The checksum needs a value the conversation has not shown (ENet's connectID
    /// before its CONNECT): neither valid nor corrupt, not counted as either.
    Unverified,
}

impl Status {
    pub fn crc_failed(self) -> bool {
        matches!(self, Status::CrcMismatch | Status::TooShort)
    }

    /// The word used in every output.
    pub fn code(self) -> &'static str {
        match self {
            Status::None => "none",
            Status::Ok => "ok",
            Status::Truncated => "truncated",
            Status::CrcMismatch => "crc_mismatch",
            Status::TooShort => "too_short",
            Status::BadHeader => "bad_header",
            Status::Unverified => "crc_unverified",
            Status::Malformed => "malformed",
        }
    }
}

/// What decoding found in the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer<'a> {
    /// The frame carried a whole UDP datagram.
    Udp,
    /// The frame carried an IP fragment; when the event is a datagram, this piece
    /// completed it.
    IpPiece {
        protocol: u8,
    },
    Icmp(IcmpTooBig),
    Other(&'static str),
    Malformed {
        layer: &'static str,
        reason: &'a gpcap_wire::decode::Malformation,
    },
    UnsupportedLink(i32),
    /// An IP fragment completed a datagram that is not UDP.
    RebuiltNotUdp,
    /// A rebuilt IP datagram whose UDP header could not be read.
    RebuiltBadUdp,
}

/// One event: a frame, or a game packet reassembled from fragments (then `frame` is the
/// frame that completed it and `fragment_frames` lists them all).
#[derive(Debug, Clone, Copy)]
pub struct PacketEvent<'a> {
    pub kind: Kind,
    /// Index of the input file (several captures in one run).
    pub file: u32,
    /// 1-based, as tshark numbers frames.
    pub frame: u64,
    pub ts_ns: i64,
    /// Where the frame's record starts in its (decompressed) file.
    pub offset: u64,
    pub linktype: i32,
    /// The captured frame.
    pub frame_data: &'a [u8],
    /// Bytes on the wire.
    pub wire_len: u32,
    pub layer: Layer<'a>,
    pub ip: Option<IpInfo>,
    pub flow: Option<FlowId>,
    /// Position of the flow in the engine's flow table (tracked flows only).
    pub flow_index: Option<u32>,
    /// IP fragments the datagram arrived in (1: sent whole).
    pub ip_fragments: u32,
    /// The UDP payload, or the reassembled packet (empty when the event was rebuilt from
    /// an index row).
    pub payload: &'a [u8],
    /// Its size in bytes.
    pub size: u32,
    /// Payload cut by the snaplen or shorter than the UDP length says.
    pub truncated: bool,
    pub over_budget: bool,
    pub status: Status,
    /// None when the protocol declares no checksum or the datagram was not validated.
    pub crc: Option<CrcStatus>,
    pub sequence: Option<u64>,
    pub packet_type: Option<u32>,
    /// The ack roles of the packet (or of the header a fragment carries).
    pub ack: Option<u32>,
    pub ack_bits: Option<u32>,
    pub fragment: Option<FragmentInfo>,
    pub fault: Option<FaultKind>,
    /// The sequence analysis of this datagram (game datagrams of tracked flows).
    pub seq_event: Option<SeqEvent>,
    /// This fragment completed a packet of that many fragments (its event follows).
    pub completes: Option<u32>,
    /// This fragment was the first received of its packet: the packet counts as seen in
    /// the reassembly table's row for its fragment count.
    pub opens: bool,
    /// Reassembled packets: the frames of its fragments, by fragment id.
    pub fragment_frames: &'a [u64],
    /// The field tree, when the engine records fields (dissect, TUI detail).
    pub dissection: Option<&'a Dissection>,
    /// The datagram's messages, for protocols that carry several (empty otherwise).
    pub messages: &'a [MessageInfo],
    /// Its cumulative acks, ack ranges and NAKs, and its stream verdicts (definitions
    /// with those roles; one pointer, so an event of the others stays as small).
    pub reliability: Option<&'a Reliability<'a>>,
    /// What inner layers read in it, when the engine records fields (empty otherwise).
    pub carried: &'a [Carried],
}

/// What a datagram says of the reliability layer beyond its messages.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reliability<'a> {
    /// Cumulative acks, ack ranges and NAKs, in the order read.
    pub acks: &'a [gpcap_dissect::AckItem],
    /// What the stream analysis said of each stream sequence of its messages (late,
    /// duplicate, a gap before it), in the order of the messages.
    pub stream_events: &'a [super::streams::StreamEvent],
}

impl<'a> PacketEvent<'a> {
    /// The datagram's cumulative acks, ranges and NAKs.
    pub fn acks(&self) -> &'a [gpcap_dissect::AckItem] {
        self.reliability.map_or(&[], |r| r.acks)
    }

    /// What the stream analysis said of its messages' stream sequences.
    pub fn stream_events(&self) -> &'a [super::streams::StreamEvent] {
        self.reliability.map_or(&[], |r| r.stream_events)
    }

    /// An event for `frame` that says nothing yet.
    pub fn new(frame: &gpcap_wire::capture::Frame<'a>, file: u32) -> Self {
        PacketEvent {
            file,
            frame: frame.number,
            ts_ns: frame.ts_ns,
            offset: frame.offset,
            linktype: frame.linktype,
            frame_data: frame.data,
            wire_len: frame.origlen,
            ..PacketEvent::empty()
        }
    }

    /// An event that says nothing.
    pub fn empty() -> Self {
        PacketEvent {
            kind: Kind::NotUdp,
            file: 0,
            frame: 0,
            ts_ns: 0,
            offset: 0,
            linktype: 0,
            frame_data: &[],
            wire_len: 0,
            layer: Layer::Other(""),
            ip: None,
            flow: None,
            flow_index: None,
            ip_fragments: 0,
            payload: &[],
            size: 0,
            truncated: false,
            over_budget: false,
            status: Status::None,
            crc: None,
            sequence: None,
            ack: None,
            ack_bits: None,
            packet_type: None,
            fragment: None,
            fault: None,
            seq_event: None,
            completes: None,
            opens: false,
            fragment_frames: &[],
            dissection: None,
            messages: &[],
            reliability: None,
            carried: &[],
        }
    }

    /// The event without what it borrows (frame, payload, tree, fragments' frames).
    pub fn detached(&self) -> PacketEvent<'static> {
        // Game packets are read from UDP: no layer of theirs borrows the frame.
        let layer = match self.layer {
            Layer::Malformed { layer, .. } => Layer::Other(layer),
            Layer::Udp => Layer::Udp,
            Layer::IpPiece { protocol } => Layer::IpPiece { protocol },
            Layer::Icmp(i) => Layer::Icmp(i),
            Layer::Other(o) => Layer::Other(o),
            Layer::UnsupportedLink(l) => Layer::UnsupportedLink(l),
            Layer::RebuiltNotUdp => Layer::RebuiltNotUdp,
            Layer::RebuiltBadUdp => Layer::RebuiltBadUdp,
        };
        let e = self;
        PacketEvent {
            kind: e.kind,
            file: e.file,
            frame: e.frame,
            ts_ns: e.ts_ns,
            offset: e.offset,
            linktype: e.linktype,
            wire_len: e.wire_len,
            ip: e.ip,
            flow: e.flow,
            flow_index: e.flow_index,
            ip_fragments: e.ip_fragments,
            size: e.size,
            truncated: e.truncated,
            over_budget: e.over_budget,
            status: e.status,
            crc: e.crc,
            sequence: e.sequence,
            packet_type: e.packet_type,
            ack: e.ack,
            ack_bits: e.ack_bits,
            fragment: e.fragment,
            fault: e.fault,
            seq_event: e.seq_event,
            completes: e.completes,
            opens: e.opens,
            frame_data: &[],
            layer,
            payload: &[],
            fragment_frames: &[],
            dissection: None,
            messages: &[],
            reliability: None,
            carried: &[],
        }
    }

    /// A UDP datagram on the protocol's ports, or a reassembled packet.
    pub fn is_game(&self) -> bool {
        matches!(self.kind, Kind::Game | Kind::Reassembled)
    }

    pub fn snaplen_cut(&self) -> bool {
        self.wire_len as usize > self.frame_data.len()
    }

    pub fn crc_ok(&self) -> bool {
        self.crc == Some(CrcStatus::Ok)
    }
}
