//! What a dissection produces: a flat pre-order field tree (`Field`, `Value`, `Label`),
//! the datagram's messages and fragments, the role values read and the `Fault` that
//! stopped it. The interpreter writes it; filters, printers, export and the TUI read it.

use super::program::NodeId;
use crate::bits::ErrorKind;
use serde::Serialize;

/// Parent index of root fields.
pub const ROOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Value {
    None,
    Int(i64),
    UInt(u64),
    Bool(bool),
    Float(f32),
    Double(f64),
    /// A byte range of the datagram (zero-copy).
    Bytes {
        offset: usize,
        len: usize,
    },
    Vec3([f32; 3]),
    Quat([f32; 4]),
}

/// What a field is called: its definition node, an element index, or a fixed part name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Node(NodeId),
    Index(u32),
    Part(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field {
    /// The definition node this field belongs to (`u32::MAX` for the end check).
    pub node: NodeId,
    pub label: Label,
    pub kind: &'static str,
    pub parent: u32,
    pub depth: u16,
    pub bit_offset: u64,
    pub bit_len: u64,
    /// The bits as read (for ≤ 64-bit leaves).
    pub raw: u64,
    pub value: Value,
}

impl Field {
    /// Fields that hold other fields (their value, if any, summarises the children).
    pub fn is_group(&self) -> bool {
        matches!(
            self.kind,
            "array"
                | "list"
                | "relative-list"
                | "struct"
                | "vector"
                | "quaternion"
                | "compressed-vector"
                | "smallest-three"
                | "string"
                | "element"
                | "relative-index"
                | "sentinel"
        )
    }
}

/// Why a dissection stopped. Serialized by [`FaultKind::code`], the one spelling used in
/// every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    PastEnd,
    OutOfRange,
    NonZeroPadding,
    Check,
    UnknownType,
    TrailingBytes,
    Limit,
    /// An expression of the definition could not be evaluated (division by zero).
    Expression,
    /// An encrypted body's MAC failed under its connection's key (a wrong key,
    /// tampering).
    Mac,
    /// An encrypted packet that opened, but repeats a sequence its direction of the
    /// connection received already, or is older than the receiver's replay window.
    Replayed,
}

impl FaultKind {
    pub fn from_error(e: &ErrorKind) -> FaultKind {
        match e {
            ErrorKind::PastEnd { .. } => FaultKind::PastEnd,
            ErrorKind::OutOfRange { .. } => FaultKind::OutOfRange,
            ErrorKind::NonZeroPadding { .. } => FaultKind::NonZeroPadding,
            ErrorKind::CheckMismatch { .. } => FaultKind::Check,
            ErrorKind::Invalid { .. } => FaultKind::Limit,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            FaultKind::PastEnd => "past_end",
            FaultKind::OutOfRange => "out_of_range",
            FaultKind::NonZeroPadding => "nonzero_padding",
            FaultKind::Check => "check",
            FaultKind::UnknownType => "unknown_type",
            FaultKind::TrailingBytes => "trailing_bytes",
            FaultKind::Limit => "limit",
            FaultKind::Expression => "expression",
            FaultKind::Mac => "mac_failure",
            FaultKind::Replayed => "replayed",
        }
    }

    pub const ALL: [FaultKind; 10] = [
        FaultKind::PastEnd,
        FaultKind::OutOfRange,
        FaultKind::NonZeroPadding,
        FaultKind::Check,
        FaultKind::UnknownType,
        FaultKind::TrailingBytes,
        FaultKind::Limit,
        FaultKind::Expression,
        FaultKind::Mac,
        FaultKind::Replayed,
    ];
}

impl Serialize for FaultKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

/// Where and why a dissection stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fault {
    pub kind: FaultKind,
    /// Path of the field being read, e.g. `objects[3].position.x`.
    pub field: String,
    pub bit: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FragmentInfo {
    pub id: u32,
    pub count: u32,
    pub data_offset: usize,
    pub data_len: usize,
    /// Bytes at the start of the data that the fragment's `rest { … }` describes (the
    /// packet header fragment 0 carries): part of the reassembled packet, but not
    /// counted against `fragment-size`.
    pub lead: usize,
}

/// One message of a datagram that carries several: its type and where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MessageInfo {
    /// `None`: the message's header could not be read.
    pub type_id: Option<u32>,
    pub bit_offset: u64,
    pub bit_len: u64,
    /// The message's sequences in the streams it counts in (a reliable number and an
    /// ordering index per channel: several), in the order read.
    pub streams: [Option<StreamSeq>; MAX_MESSAGE_STREAMS],
    /// The fragment of a bigger message it carries, when its type carries one.
    pub fragment: Option<MessageFragment>,
    /// The datagram's send time (`role=send-time`), on messages with a stream sequence.
    pub send_time: Option<u32>,
    /// The stream sequence it acks (`role=ack stream=…`), and the send time it echoes.
    pub ack: Option<StreamSeq>,
    pub echo: Option<u32>,
}

/// A fragment carried in a message: its group's key, number, count, where its data
/// lies in the datagram, and its byte offset in the whole message with the message's
/// length (placed by number × `fragment-size` without them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MessageFragment {
    pub key: [i64; 3],
    pub id: u32,
    pub count: u32,
    pub offset: Option<u32>,
    pub total: Option<u32>,
    /// Byte offset and length of the data in the datagram.
    pub data_at: u32,
    pub data_len: u32,
    /// Count-down or flagged: where the fragment lies in its stream.
    pub run: Option<RunPart>,
}

/// A fragment placed by its message's stream sequence (count-down or flagged): the
/// stream, its key values, the sequence, and what it says of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunPart {
    pub stream: u8,
    pub key: [i64; 2],
    pub sequence: u64,
    /// Fragments still to come (count-down), or None (flagged).
    pub remaining: Option<u32>,
    /// It begins its message (flagged; a count-down fragment tells it otherwise).
    pub first: bool,
    /// It ends its message (flagged; count-down: remaining 0).
    pub last: bool,
}

/// Streams one message may count in at once (`check` refuses more on one path).
pub const MAX_MESSAGE_STREAMS: usize = 3;

impl MessageInfo {
    /// The stream sequences it carries, in the order read.
    pub fn streams(&self) -> impl Iterator<Item = StreamSeq> + '_ {
        self.streams.iter().map_while(|s| *s)
    }
}

/// What an ack item says of the sequences it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AckKind {
    /// Every sequence below `first` (KCP's `una`).
    Below,
    /// Every sequence up to and including `first`.
    UpTo,
    /// `first..=last` received.
    Range,
    /// `first..=last` not received (a negative acknowledgement).
    Nak,
}

/// An acknowledgement beyond one sequence: cumulative, a range, or a NAK range, of a
/// message stream of the other direction or of its datagram sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AckItem {
    /// The stream and its key values; None: the other direction's datagram sequence.
    pub stream: Option<(u8, [i64; 2])>,
    pub kind: AckKind,
    pub first: u64,
    /// The range's last sequence (`first` for a cumulative ack or a single one).
    pub last: u64,
    /// The send time echoed with it (`role=ack-time`).
    pub echo: Option<u32>,
}

/// Ack items a datagram keeps at most; one more is a `limit` fault at its field (the
/// datagram malformed, the items before it used): a list of a million ranges costs
/// what this many do.
pub const MAX_ACK_ITEMS: usize = 1024;

/// A message's place in a sequence stream: which stream, its key's values, its sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamSeq {
    pub stream: u8,
    pub key: [i64; 2],
    pub sequence: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dissection {
    pub fields: Vec<Field>,
    /// The datagram's messages in order (protocols with `messages`), read or not.
    pub messages: Vec<MessageInfo>,
    /// Where the checksum field starts (a checksum declared with `field=`).
    pub crc_at: Option<u64>,
    /// The checksum is computed with a remembered value in its field (its `stand-in`
    /// and `stand-in-when` held).
    pub crc_stand_in: bool,
    /// Fields the conversation remembers: (value, bit offset, bit length).
    pub learnt: Vec<(u8, u64, u64)>,
    /// The header's `role=send-time` value, when read.
    pub send_time: Option<u32>,
    pub crc: Option<u32>,
    pub sequence: Option<u64>,
    pub packet_type: Option<u32>,
    pub fragment: Option<FragmentInfo>,
    /// The ack roles, when the packet's path read them.
    pub ack: Option<u32>,
    pub ack_bits: Option<u32>,
    /// Cumulative acks, ranges and NAKs, in the order read (at most [`MAX_ACK_ITEMS`]:
    /// one more is a `limit` fault there, those before it kept).
    pub ack_items: Vec<AckItem>,
    pub fault: Option<Fault>,
    pub bits_read: u64,
}

impl Dissection {
    pub fn is_ok(&self) -> bool {
        self.fault.is_none()
    }

    /// Where each field's subtree ends: fields are in pre-order, so field `i`'s
    /// descendants are `i + 1 .. end[i]`, and its next sibling starts at `end[i]`.
    pub fn subtree_ends(&self, end: &mut Vec<u32>) {
        // Backwards, each field's end raises its parent's: no stack to keep.
        end.clear();
        end.extend((1..=self.fields.len()).map(|i| i as u32));
        for (i, f) in self.fields.iter().enumerate().rev() {
            let p = f.parent as usize;
            if p < i {
                end[p] = end[p].max(end[i]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The ends as the stack of open fields finds them (the form this replaced).
    fn ends_by_stack(d: &Dissection) -> Vec<u32> {
        let n = d.fields.len();
        let (mut end, mut open) = (vec![n as u32; n], Vec::<u32>::new());
        for (i, f) in d.fields.iter().enumerate() {
            while let Some(&top) = open.last() {
                if f.parent == top {
                    break;
                }
                end[top as usize] = i as u32;
                open.pop();
            }
            open.push(i as u32);
        }
        end
    }

    proptest! {
        /// Any tree in pre-order: each field's parent is the root or one of the fields
        /// still open (`ups`: how many levels each field climbs before it is placed).
        #[test]
        fn backward_ends_are_the_stack_ends(ups in prop::collection::vec(0usize..4, 0..200)) {
            let mut path: Vec<u32> = Vec::new();
            let mut fields = Vec::new();
            for (i, up) in ups.into_iter().enumerate() {
                path.truncate(path.len().saturating_sub(up));
                fields.push(Field {
                    node: 0,
                    label: Label::Node(0),
                    kind: "bits",
                    parent: path.last().copied().unwrap_or(ROOT),
                    depth: path.len() as u16,
                    bit_offset: 0,
                    bit_len: 1,
                    raw: 0,
                    value: Value::UInt(0),
                });
                path.push(i as u32);
            }
            let d = Dissection { fields, ..Dissection::default() };
            let mut end = vec![7];
            d.subtree_ends(&mut end);
            prop_assert_eq!(end, ends_by_stack(&d));
        }
    }
}
