//! Roles: what a field means to the analysis (sequence, ack, type, fragment parts,
//! checksum…), and the slots they are read into.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Crc,
    Sequence,
    Type,
    FragmentId,
    FragmentCount,
    FragmentData,
    /// The newest sequence of the other direction that this packet acknowledges.
    Ack,
    /// Bit i set: sequence `ack - i` of the other direction was received too.
    AckBits,
    /// A protocol id sent in the clear (netcode's connection request): a datagram whose
    /// id differs from the definition's is not the protocol's.
    ProtocolId,
    /// A message fragment's byte offset in its message (ENet's fragmentOffset).
    FragmentOffset,
    /// The length of the whole message a fragment belongs to (ENet's totalLength).
    FragmentTotal,
    /// The sender's clock in a datagram's header (ENet's sentTime), which acks echo.
    SendTime,
    /// In an ack message, the acked datagram's send time echoed (ENet's
    /// receivedSentTime): the round trip is timed from that datagram.
    AckTime,
    /// Every sequence below this one received (a cumulative ack: KCP's `una`).
    AckBelow,
    /// Every sequence up to and including this one received (TCP-like).
    AckUpTo,
    /// The first and last sequences of a range received (RakNet's ACK records, QUIC's
    /// ack ranges, SCTP's gap blocks); a start without an end is one sequence.
    AckRangeStart,
    AckRangeEnd,
    /// The same, for a range not received (a negative acknowledgement).
    NakRangeStart,
    NakRangeEnd,
    /// A message's fragments still to come (KCP's `frg`, counting down to 0 over
    /// consecutive sequences of its stream; the first tells the count).
    FragmentRemaining,
    /// The fragment begins, or ends, its message (SCTP's B and E bits), over
    /// consecutive sequences of its stream.
    FragmentFirst,
    FragmentLast,
}

/// Slots 0..ROLE_SLOTS hold the role values: every field with a role, wherever it is
/// (inside an `if`, a fragment header, a re-read header), writes its role's slot, so a
/// role may come from a different field on each path.
pub const ROLE_SLOTS: usize = 8;

impl Role {
    pub const ALL: [Role; 22] = [
        Role::Crc,
        Role::Sequence,
        Role::Type,
        Role::FragmentId,
        Role::FragmentCount,
        Role::FragmentData,
        Role::Ack,
        Role::AckBits,
        Role::ProtocolId,
        Role::FragmentOffset,
        Role::FragmentTotal,
        Role::SendTime,
        Role::AckTime,
        Role::AckBelow,
        Role::AckUpTo,
        Role::AckRangeStart,
        Role::AckRangeEnd,
        Role::NakRangeStart,
        Role::NakRangeEnd,
        Role::FragmentRemaining,
        Role::FragmentFirst,
        Role::FragmentLast,
    ];

    /// The acks beyond one sequence: cumulative, ranges and NAK ranges.
    pub const fn acks_more(self) -> bool {
        matches!(
            self,
            Role::AckBelow
                | Role::AckUpTo
                | Role::AckRangeStart
                | Role::AckRangeEnd
                | Role::NakRangeStart
                | Role::NakRangeEnd
        )
    }

    /// The slot of an integer role (fragment data has none).
    pub const fn slot(self) -> Option<u16> {
        Some(match self {
            Role::Crc => 0,
            Role::Sequence => 1,
            Role::Type => 2,
            Role::FragmentId => 3,
            Role::FragmentCount => 4,
            Role::Ack => 5,
            Role::AckBits => 6,
            Role::ProtocolId => 7,
            Role::FragmentData
            | Role::FragmentOffset
            | Role::FragmentTotal
            | Role::SendTime
            | Role::AckTime
            | Role::AckBelow
            | Role::AckUpTo
            | Role::AckRangeStart
            | Role::AckRangeEnd
            | Role::NakRangeStart
            | Role::NakRangeEnd
            | Role::FragmentRemaining
            | Role::FragmentFirst
            | Role::FragmentLast => {
                return None;
            }
        })
    }

    /// The spelling in definitions (`role=fragment-id`).
    pub fn name(self) -> &'static str {
        match self {
            Role::Crc => "crc",
            Role::Sequence => "sequence",
            Role::Type => "type",
            Role::FragmentId => "fragment-id",
            Role::FragmentCount => "fragment-count",
            Role::FragmentData => "fragment-data",
            Role::Ack => "ack",
            Role::AckBits => "ack-bits",
            Role::ProtocolId => "protocol-id",
            Role::FragmentOffset => "fragment-offset",
            Role::FragmentTotal => "fragment-total",
            Role::SendTime => "send-time",
            Role::AckTime => "ack-time",
            Role::AckBelow => "ack-below",
            Role::AckUpTo => "ack-upto",
            Role::AckRangeStart => "ack-range-start",
            Role::AckRangeEnd => "ack-range-end",
            Role::NakRangeStart => "nak-range-start",
            Role::NakRangeEnd => "nak-range-end",
            Role::FragmentRemaining => "fragment-remaining",
            Role::FragmentFirst => "fragment-first",
            Role::FragmentLast => "fragment-last",
        }
    }

    pub(super) const fn bit(self) -> u32 {
        1 << self as u32
    }
}
