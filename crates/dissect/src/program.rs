//! A compiled dissector: the protocol's parameters and a compact tree of nodes that the
//! shared bit reader executes.

use super::expr;
use crate::bits::CompressedFloat;
use crate::validate::{CountEncoding, HeaderFormat, ProtocolId};
use serde::Serialize;

mod role;
pub use role::*;

/// Index of a node in [`Program::nodes`].
pub type NodeId = u32;

/// A run of child node ids in [`Program::children`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Block {
    pub start: u32,
    pub len: u32,
}

/// A range of [`Program::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expr {
    pub start: u32,
    pub len: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Const(u64),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Bits(u32),
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Uint64,
    Float,
    Double,
    CompressedFloat(CompressedFloat),
    Vector,
    CompressedVector(CompressedFloat),
    Quaternion,
    SmallestThree(u32),
    Align,
    Bytes(Count),
    String {
        max: u32,
    },
    Check {
        magic: u32,
    },
    /// `check magic="00ffff00…"`: whole bytes, after `align`, that must be these (a
    /// magic of any length, compared whole: RakNet's 16-byte offline magic).
    Magic(Box<[u8]>),
    /// The rest of the datagram as bytes (fragment data); `body` describes what the
    /// bytes start with (reliable's fragment 0 carries the packet header).
    Rest {
        body: Block,
    },
    /// A value computed from earlier fields, reading no bits (Wireshark's generated
    /// fields): `derived ack "(sequence - ack_delta) & 0xffff"`.
    Derived(Expr),
    /// An unsigned little-endian integer of 1 to 8 whole bytes, the count fixed or read
    /// from earlier fields (netcode's sequence: `le-uint sequence "sequence_bytes"`).
    LeUint(Count),
    /// A value read most significant bit first (`bit-order "msb"`, or `order="msb"` on
    /// the field): a byte-aligned multiple of 8 bits is big-endian, network order.
    Msb(Msb),
    /// A whole-byte integer of 1 to 8 bytes in a stated byte order, signed or not
    /// (`be-uint`, `be-int`, `le-int`; `le-uint` is [`Kind::LeUint`]).
    ByteInt {
        count: Count,
        big: bool,
        signed: bool,
    },
    /// LEB128: 7 bits a byte, the low group first, the top bit set while more follow;
    /// `zigzag` maps 0, 1, 2, 3… back to 0, -1, 1, -2….
    Varint {
        zigzag: bool,
    },
    /// `len` bytes of text, shown as text (NULs at the end are padding).
    Text {
        len: Count,
    },
    /// Text up to and including a NUL, at most `max` bytes with it.
    CString {
        max: u32,
    },
    Struct {
        body: Block,
    },
    /// A struct used without a field name: its fields join the enclosing group.
    Inline {
        body: Block,
    },
    Array {
        count: Count,
        body: Block,
    },
    /// Elements until `end` is true after the element's first field (sentinel list).
    List {
        end: Expr,
        body: Block,
    },
    /// The article's relative-index list: indices ascend, the list ends at `max`.
    RelativeList {
        max: i64,
        body: Block,
    },
    If {
        cond: Expr,
        then: Block,
        otherwise: Block,
    },
    /// The datagram's messages (the `messages` block, made into a node for the field
    /// tree): each message is `header` and then its type's body, one after another to
    /// the end of the datagram.
    Messages {
        header: Block,
    },
}

impl Kind {
    /// The blocks a node holds (branches, bodies, a message's header).
    pub fn blocks(&self) -> Vec<Block> {
        match self {
            Kind::If { then, otherwise, .. } => vec![*then, *otherwise],
            Kind::Struct { body }
            | Kind::Inline { body }
            | Kind::Rest { body }
            | Kind::Array { body, .. }
            | Kind::List { body, .. }
            | Kind::RelativeList { body, .. }
            | Kind::Messages { header: body } => vec![*body],
            _ => Vec::new(),
        }
    }

    /// The articles' kind this one reads the same values as, for what roles and ranges
    /// ask of a field: MSB-first `bits` are `bits`, a `be-uint` is a `le-uint`.
    pub fn plain(&self) -> Kind {
        match self {
            Kind::Msb(Msb::Bits(b)) => Kind::Bits(*b),
            Kind::Msb(Msb::Bool) => Kind::Bool,
            Kind::Msb(Msb::Int { min, max }) => Kind::Int { min: *min, max: *max },
            Kind::Msb(Msb::Uint64) => Kind::Uint64,
            Kind::Msb(Msb::Float) => Kind::Float,
            Kind::Msb(Msb::Double) => Kind::Double,
            Kind::ByteInt {
                count, signed: false, ..
            } => Kind::LeUint(*count),
            Kind::Varint { zigzag: false } => Kind::Uint64,
            k => k.clone(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Kind::Bits(_) => "bits",
            Kind::Bool => "bool",
            Kind::Int { .. } => "int",
            Kind::Uint64 => "uint64",
            Kind::Float => "float",
            Kind::Double => "double",
            Kind::CompressedFloat(_) => "compressed-float",
            Kind::Vector => "vector",
            Kind::CompressedVector(_) => "compressed-vector",
            Kind::Quaternion => "quaternion",
            Kind::SmallestThree(_) => "smallest-three",
            Kind::Align => "align",
            Kind::Bytes(_) => "bytes",
            Kind::String { .. } => "string",
            Kind::Check { .. } | Kind::Magic(_) => "check",
            Kind::Rest { .. } => "rest",
            Kind::Derived(_) => "derived",
            Kind::LeUint(_) => "le-uint",
            Kind::Msb(m) => m.name(),
            Kind::ByteInt { big, signed, .. } => match (big, signed) {
                (true, false) => "be-uint",
                (true, true) => "be-int",
                (false, true) => "le-int",
                (false, false) => "le-uint",
            },
            Kind::Varint { zigzag: false } => "varint",
            Kind::Varint { zigzag: true } => "zigzag",
            Kind::Text { .. } => "text",
            Kind::CString { .. } => "cstring",
            Kind::Struct { .. } => "struct",
            Kind::Inline { .. } => "inline",
            Kind::Array { .. } => "array",
            Kind::List { .. } => "list",
            Kind::RelativeList { .. } => "relative-list",
            Kind::If { .. } => "if",
            Kind::Messages { .. } => "messages",
        }
    }
}

/// The primitives that read most significant bit first (RakNet's BitStream, ENet's
/// big-endian words with bit fields inside them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msb {
    Bits(u32),
    Bool,
    Int { min: i64, max: i64 },
    Float,
    Double,
    Uint64,
}

impl Msb {
    /// Bits on the wire (`int`: its range's width).
    pub fn width(self) -> u32 {
        match self {
            Msb::Bits(n) => n,
            Msb::Bool => 1,
            Msb::Int { min, max } => crate::bits::int_width(min, max).unwrap_or(64),
            Msb::Float => 32,
            Msb::Double | Msb::Uint64 => 64,
        }
    }

    /// The name shown for the field: the primitive's own.
    pub fn name(self) -> &'static str {
        match self {
            Msb::Bits(_) => "bits",
            Msb::Bool => "bool",
            Msb::Int { .. } => "int",
            Msb::Float => "float",
            Msb::Double => "double",
            Msb::Uint64 => "uint64",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub kind: Kind,
    pub doc: Option<String>,
    /// Integer slot that expressions read this field's value from.
    pub slot: Option<u16>,
    pub enum_id: Option<u16>,
    pub role: Option<Role>,
    /// Name of the struct type for struct references.
    pub type_name: Option<String>,
    /// The definition line it was declared on (1-based), for the TUI's field tree.
    pub line: u32,
    /// `remember="NAME"`: the field's bytes are kept for later datagrams of the same
    /// conversation, as value `NAME` (index in `Params::remembered`).
    pub remember: Option<u8>,
    /// A message's `role=sequence stream="NAME"`: the stream (index in
    /// `Params::streams`) this sequence counts in.
    pub stream: Option<u8>,
}

/// A sequence space of messages, one counter per flow and value of its key fields
/// (ENet's reliable commands: per flow and channel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamDef {
    pub name: String,
    /// A message's `role=ack stream=` acks this stream's sequences.
    pub acked: bool,
    /// The key fields' names and slots (at most two).
    pub key: Vec<(String, u16)>,
    /// Width of the sequence in bits, where it wraps.
    pub bits: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnumDef {
    pub name: String,
    pub values: Vec<(i64, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PacketDef {
    pub type_id: u32,
    pub name: String,
    pub doc: Option<String>,
    /// The side that sends this packet type, when the definition says (`from=client`).
    pub from: Option<Side>,
    /// The sequence counter this packet type draws from (index in `Program::spaces`;
    /// 0: the flow's own).
    pub space: u8,
    pub body: Block,
    /// The Info column's summary of a packet of this type, `{path}` standing for a
    /// field's value and `{#path}` for how many it has — a list or array, its elements
    /// (`info="{#objects} objects"`).
    pub info: Option<String>,
    /// A message type (`message N`, or any type of a definition with `messages` and no
    /// datagram kinds), not a datagram's.
    pub message: bool,
}

/// A sequence counter that some packet types draw from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SequenceSpace {
    pub name: String,
    /// One counter per sending address (shared by all its flows) instead of per flow.
    pub per_sender: bool,
}

/// An end of a game session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Server,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// The protocol's parameters (SPEC §1 defaults, overridden by the definition).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    pub name: String,
    pub protocol_id: Option<ProtocolId>,
    pub ports: Vec<u16>,
    /// How a datagram is recognised as the protocol's.
    pub checksum: Checksum,
    pub end_check: Option<u32>,
    pub format: HeaderFormat,
    /// `bit-order "msb"`: fields read most significant bit first by default, and a
    /// byte's pad bits are its low ones.
    pub msb: bool,
    /// A checksum declared field by field (`checksum "crc32" field=… stand-in=…`).
    pub rule: Option<ChecksumRule>,
    /// Values a conversation remembers (`remember="NAME"` on a field).
    pub remembered: Vec<String>,
    /// Sequence streams of messages (`role=sequence stream=…`).
    pub streams: Vec<StreamDef>,
    /// Message types that carry fragments (`role=fragment-id` in a message).
    pub message_fragments: Vec<MessageFragmentDef>,
    /// `max-message-size`: the largest message reassembled from fragments.
    pub max_message_size: u32,
    /// A header field has `role=send-time` (acks per message echo it).
    pub send_time: bool,
    /// A datagram's header or body acks beyond one sequence (cumulative, ranges, NAKs):
    /// those fields are read one by one, and the datagram's ack analysis takes them.
    pub datagram_acks: bool,
    /// Bits of a datagram's `role=ack` (a derived one's: the field it copies or the mask
    /// it ends with; at most 32), where the acked sequence is extended.
    pub ack_width: u32,
    /// An expression reads `remaining` or `remaining_bits`: the interpreter reads every
    /// block (the validation plan knows no position).
    pub remaining: bool,
    /// Where the datagram's messages end when not at its end: a count of messages or a
    /// length in bytes, from header fields.
    #[serde(skip)]
    pub messages_end: Option<MessagesEnd>,
    /// `encryption "netcode-1.02"`: bodies are encrypted so (see `crate::decrypt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption: Option<String>,
    /// Fields whose bytes another definition dissects (`dissect-as="NAME"`).
    #[serde(skip)]
    pub dissect_as: Vec<(NodeId, String)>,
    /// The same definition with each `plaintext` block in place of its `packet`: how a
    /// decrypted datagram reads.
    #[serde(skip)]
    pub plaintext: Option<std::sync::Arc<Program>>,
}

/// `messages count="EXPR"` or `messages length="EXPR"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MessagesEnd {
    Count(Expr),
    Length(Expr),
}

/// How a message type carries a fragment of a bigger message: the fields that group
/// its fragments (with the message type), and where its number, count, offset and
/// total are read from (slots).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageFragmentDef {
    /// The message type; [`MessageFragmentDef::ANY`] for fragment roles of the messages
    /// block, which any type without a def of its own carries.
    pub type_id: u32,
    /// The key fields' names and slots (at most three).
    pub key: Vec<(String, u16)>,
    pub offset: Option<u16>,
    pub total: Option<u16>,
    /// Count-down (`fragment-remaining`) or flagged (`fragment-first`/`-last`)
    /// fragments: the slots of those fields; the message's first stream sequence
    /// orders them.
    pub remaining: Option<u16>,
    pub first: Option<u16>,
    pub last: Option<u16>,
    /// `reassembled-as="TYPE"`: the message type a reassembled message is read as
    /// (without it, the application's bytes).
    pub reassembled_as: Option<u32>,
}

impl MessageFragmentDef {
    pub const ANY: u32 = u32::MAX;
}

impl Params {
    /// How messages of type `ty` carry a fragment, if they do.
    pub fn message_fragment(&self, ty: u32) -> Option<&MessageFragmentDef> {
        let defs = &self.message_fragments;
        (defs.iter().find(|d| d.type_id == ty))
            .or_else(|| defs.iter().find(|d| d.type_id == MessageFragmentDef::ANY))
    }
}

/// The default `max-message-size`: 1 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: u32 = 1 << 20;

pub use crate::validate::declared::ChecksumAlgorithm;

/// How a protocol computes its checksum, where the articles' scheme is not it: the
/// algorithm, over the whole datagram with the checksum field's bytes replaced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChecksumRule {
    pub algorithm: ChecksumAlgorithm,
    /// The articles' hidden prefix: the protocol id hashed first, never sent.
    pub prefix: bool,
    /// A remembered value (index in `Params::remembered`) stands in the field while
    /// computing, when `when` holds (always without it); zeros otherwise.
    pub stand_in: Option<u8>,
    #[serde(skip)]
    pub when: Option<Expr>,
}

/// The validation a protocol declares (`checksum` in the protocol block).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Checksum {
    /// A CRC32 in the first four bytes over the protocol id (never sent) and the packet
    /// with those bytes zeroed: the articles' scheme.
    #[default]
    Crc32,
    /// No checksum: a datagram is the protocol's when it is on its ports and its header
    /// reads cleanly.
    None,
    /// The checksum of [`Params::rule`], in the `role=crc` field wherever it lies.
    Field,
}

impl Checksum {
    pub fn is_crc32(&self) -> bool {
        *self == Checksum::Crc32
    }
}

impl Default for Params {
    fn default() -> Self {
        Params {
            name: String::new(),
            protocol_id: None,
            ports: Vec::new(),
            checksum: Checksum::Crc32,
            // A body ends with a check only when the definition says `end-check`.
            end_check: None,
            format: HeaderFormat::default(),
            msb: false,
            rule: None,
            remembered: Vec::new(),
            streams: Vec::new(),
            message_fragments: Vec::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            send_time: false,
            datagram_acks: false,
            ack_width: 16,
            remaining: false,
            messages_end: None,
            encryption: None,
            dissect_as: Vec::new(),
            plaintext: None,
        }
    }
}

impl Params {
    /// A declared checksum in words: "crc32 over the datagram, `connect_id` standing in
    /// the checksum field (zeros unless `peer_id != 0xfff`)".
    pub fn describe_rule(&self) -> Option<String> {
        let rule = self.rule.as_ref()?;
        let prefix = if rule.prefix { " after the protocol id" } else { "" };
        let stand_in = match rule.stand_in.and_then(|i| self.remembered.get(i as usize)) {
            Some(name) if rule.when.is_some() => {
                format!(
                    "`{name}` learnt in the conversation standing in its field when the condition holds, zeros otherwise"
                )
            }
            Some(name) => format!("`{name}` learnt in the conversation standing in its field"),
            None => "its field zeroed".into(),
        };
        Some(format!(
            "{} over the datagram{prefix}, {stand_in}",
            rule.algorithm.name()
        ))
    }

    /// Fields whose place matters beyond their value are read one by one (no plan).
    pub fn tracks(&self) -> bool {
        self.rule.is_some()
            || !self.remembered.is_empty()
            || !self.streams.is_empty()
            || !self.message_fragments.is_empty()
            || self.send_time
            || self.datagram_acks
    }

    pub fn count_encoding(&self) -> CountEncoding {
        self.format.count_encoding
    }
}

/// Hard limits that keep one hostile packet from making a dissection slow or large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_depth: u32,
    pub max_fields: u32,
    pub max_elements: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 32,
            max_fields: 1 << 17,
            max_elements: 1 << 16,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub params: Params,
    pub nodes: Vec<Node>,
    pub children: Vec<NodeId>,
    pub code: Vec<expr::Op>,
    pub header: Block,
    pub fragment: Option<Block>,
    /// The condition that makes a datagram a fragment (`fragment when="prefix & 1"`);
    /// without it, fragments are packet type 0.
    pub fragment_when: Option<Expr>,
    /// The type reported for fragments: 0, or one past the packet types with `when`.
    pub fragment_type: u32,
    /// The roles some field carries (bit per role).
    pub roles: u32,
    /// Sequence counters: 0 is each flow's own; others are declared with
    /// `sequence-space` (netcode's server keeps a global one for challenges).
    pub spaces: Vec<SequenceSpace>,
    /// Width of the sequence in bits: where it wraps (16 in the articles, 64 for
    /// netcode's variable-length sequence).
    pub sequence_bits: u32,
    pub packets: Vec<PacketDef>,
    /// Packet index by type id (`None` for undefined types).
    pub by_type: Vec<Option<u16>>,
    pub enums: Vec<EnumDef>,
    pub slot_count: usize,
    pub limits: Limits,
    /// Several messages per datagram (`messages { … }`): the node that holds them, whose
    /// kind is [`Kind::Messages`]. Packet definitions are then message types, and a
    /// datagram's own type is [`Program::datagram_type`].
    pub messages: Option<NodeId>,
    /// The type reported for whole datagrams of a protocol with messages and no datagram
    /// kinds: one past the message types, named `datagram`.
    pub datagram_type: Option<u32>,
    /// Datagram kinds beside messages: the header's `role=type` names each datagram's
    /// `packet` type, whose body reads the messages where it says `messages`; message
    /// types are numbered from [`Program::message_base`].
    pub kinds: bool,
    /// The id of message type 0 (the datagram kinds' count with kinds, else 0).
    pub message_base: u32,
    /// Some datagrams carry no sequence (with messages, or where the header's path
    /// has none): a header read without one is not a bad header.
    pub sequence_optional: bool,
    /// Every block flattened for validation (built last, from the above).
    pub plan: super::plan::Plan,
    /// The plan's top-level blocks compiled to machine code (`native/`), built from it.
    pub native: super::native::Native,
}

impl Program {
    /// Whether its packets ack sequences (a datagram's own, or a message stream's): the
    /// ack analysis then has something to settle.
    pub fn acks_sequences(&self) -> bool {
        self.has_role(Role::Ack) || self.params.datagram_acks || self.params.streams.iter().any(|d| d.acked)
    }

    pub fn has_role(&self, role: Role) -> bool {
        self.roles & role.bit() != 0
    }

    pub(crate) fn role_declared(roles: u32, role: Role) -> bool {
        roles & role.bit() != 0
    }

    /// Sets the declared-role bit (the compiler).
    pub(crate) fn declare_role(roles: &mut u32, role: Role) {
        *roles |= role.bit();
    }

    #[inline]
    pub fn block(&self, b: Block) -> &[NodeId] {
        self.children
            .get(b.start as usize..(b.start + b.len) as usize)
            .unwrap_or(&[])
    }

    #[inline]
    /// Compiles the plan's top-level blocks (header, fragment header, bodies) to
    /// machine code, when compiled code is on (`native::set_enabled`).
    pub fn compile_native(&mut self) {
        let plan = &self.plan;
        let mut entries = vec![plan.header];
        entries.extend(self.fragment.and_then(|f| plan.entry(f)));
        entries.extend(plan.bodies.iter().copied());
        let env = super::native::Env {
            code: &self.code,
            slots: self.slot_count,
            limits: self.limits,
        };
        self.native = super::native::Native::compile(plan, env, &entries);
    }

    pub fn expr(&self, e: Expr) -> &[expr::Op] {
        self.code
            .get(e.start as usize..(e.start + e.len) as usize)
            .unwrap_or(&[])
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    pub fn packet(&self, type_id: u32) -> Option<&PacketDef> {
        let i = (*self.by_type.get(type_id as usize)?)?;
        self.packets.get(i as usize)
    }

    /// The sequence space of a datagram of `type_id` (fragments: the flow's own).
    #[inline]
    pub fn space_of(&self, type_id: u32) -> u8 {
        self.packet(type_id).map_or(0, |d| d.space)
    }

    pub fn type_name(&self, type_id: u32) -> Option<&str> {
        if type_id == self.fragment_type && self.fragment.is_some() {
            return Some("fragment");
        }
        if Some(type_id) == self.datagram_type {
            return Some("datagram");
        }
        self.packet(type_id).map(|p| p.name.as_str())
    }

    /// Packet and message types in all (the type ids' range).
    pub fn format_types(&self) -> u32 {
        self.params.format.num_types
    }

    /// Whether datagrams of type `ty` carry messages: every datagram without datagram
    /// kinds, a kind whose body says `messages` with them.
    pub fn carries_messages(&self, ty: u32) -> bool {
        if !self.kinds {
            return self.messages.is_some();
        }
        let Some(d) = self.packet(ty).filter(|d| !d.message) else {
            return false;
        };
        let mut stack = vec![(d.body, 0u32)];
        while let Some((b, depth)) = stack.pop() {
            for &id in self.block(b) {
                match &self.nodes[id as usize].kind {
                    Kind::Messages { .. } => return true,
                    k if depth < 64 => stack.extend(k.blocks().into_iter().map(|b| (b, depth + 1))),
                    _ => {}
                }
            }
        }
        false
    }

    /// The message types' header block, when datagrams carry messages.
    pub fn message_header(&self) -> Option<Block> {
        match self.nodes.get(self.messages? as usize)?.kind {
            Kind::Messages { header } => Some(header),
            _ => None,
        }
    }

    pub fn enum_name(&self, enum_id: u16, value: i64) -> Option<&str> {
        self.enums
            .get(enum_id as usize)?
            .values
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, n)| n.as_str())
    }
}
