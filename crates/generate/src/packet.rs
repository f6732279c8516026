//! Writes random but valid packets for a compiled definition through the shared bit
//! writer: every value within its field's range, arrays and lists of varied length, and
//! the leaves it wrote recorded so tests can check that dissection reads them back.

use super::rng::Rng;
use gpcap_dissect::expr::{Op, eval};
use gpcap_dissect::prims::{self, Raw};
use gpcap_dissect::program::{Block, Count, Kind, NodeId, Program, Role};
use gpcap_wire::bits::*;
use gpcap_wire::validate::{CountEncoding, FRAGMENT_TYPE, write_crc};
use std::collections::HashSet;

mod datagram;
mod lists;

/// One primitive as written: bit offset, bit length, raw bits (0 for byte runs).
pub type Leaf = (u64, u64, u64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    #[error("packet type {0} is not defined")]
    UnknownType(u32),
    #[error("could not satisfy the end condition of list `{0}`")]
    ListEnd(String),
    #[error("division by zero in an expression of the definition")]
    DivisionByZero,
    #[error("write failed: {0}")]
    Write(#[from] BitError),
    #[error("field `{field}`: {error}")]
    Field { field: String, error: BitError },
    #[error("the definition has no protocol id")]
    NoProtocolId,
    #[error("no header written in 64 tries makes `fragment when` {0}")]
    FragmentCondition(bool),
    #[error(
        "--corrupt needs a checksum to detect the flipped bit, and the definition declares checksum \"none\""
    )]
    CorruptWithoutChecksum,
    #[error("--attacks breaks the rules of fragment reassembly, and the definition has no fragment block")]
    AttacksWithoutFragments,
    #[error(
        "--encrypt seals packets as the definition's `encryption` says, and the definition declares none"
    )]
    NotEncrypted,
    /// Variant present in every build, so that matches do not depend on features.
    #[error("--encrypt seals packets with netcode's AEADs, which this build leaves out (the crypto feature)")]
    NoCrypto,
    #[error(
        "field `{0}` (role sequence) never carries the counter gen writes: it is derived, and gen inverts only `x`, `x + c`, `x - c`, `x ^ c`, `a << k | b` and `(x - d) & m` over fields it writes; no packet type can be generated"
    )]
    Underivable(String),
    #[error("field `{field}`: {why}")]
    Unsupported { field: String, why: &'static str },
}

/// How a field read by a derived role field is written so that the role holds the value
/// asked for: `a << k | b` is `a = v >> k`, `b = v & (2^k - 1)`; `x + c` is `x = v - c`;
/// `(x - d) & m` is `x = v`, `d = 0`.
#[derive(Debug, Clone, Copy)]
enum Inverse {
    High(u32),
    Low(u32),
    /// `((v ^ xor) - add) & mask`.
    Affine {
        add: i64,
        xor: i64,
        mask: i64,
    },
    Zero,
}

impl Inverse {
    fn apply(self, v: u64) -> u64 {
        match self {
            Inverse::High(k) => v.checked_shr(k).unwrap_or(0),
            Inverse::Low(k) => v & (1u64.checked_shl(k).unwrap_or(0).wrapping_sub(1)),
            Inverse::Affine { add, xor, mask } => ((v as i64 ^ xor).wrapping_sub(add) & mask) as u64,
            Inverse::Zero => 0,
        }
    }
}

/// The fields a derived expression reads, each with how to write it for a wanted value
/// (empty when the expression is not one gen inverts).
fn inverses(code: &[Op]) -> Vec<(u16, Inverse)> {
    use gpcap_dissect::expr::BinOp::*;
    let all = -1i64;
    let affine = |add, xor, mask| Inverse::Affine { add, xor, mask };
    match *code {
        [Op::Slot(x)] => vec![(x, affine(0, 0, all))],
        [Op::Slot(x), Op::Const(c), Op::Bin(Add)] => vec![(x, affine(c, 0, all))],
        [Op::Slot(x), Op::Const(c), Op::Bin(Sub)] => vec![(x, affine(c.wrapping_neg(), 0, all))],
        [Op::Slot(x), Op::Const(c), Op::Bin(BitXor)] => vec![(x, affine(0, c, all))],
        [
            Op::Slot(a),
            Op::Const(k),
            Op::Bin(Shl),
            Op::Slot(b),
            Op::Bin(BitOr),
        ]
        | [
            Op::Slot(b),
            Op::Slot(a),
            Op::Const(k),
            Op::Bin(Shl),
            Op::Bin(BitOr),
        ] if (0..64).contains(&k) => {
            vec![(a, Inverse::High(k as u32)), (b, Inverse::Low(k as u32))]
        }
        [
            Op::Slot(x),
            Op::Slot(d),
            Op::Bin(Sub),
            Op::Const(m),
            Op::Bin(BitAnd),
        ] => {
            vec![(x, affine(0, 0, m)), (d, Inverse::Zero)]
        }
        [
            Op::Slot(x),
            Op::Const(c),
            Op::Bin(op @ (Add | Sub)),
            Op::Const(m),
            Op::Bin(BitAnd),
        ] => {
            let add = if op == Add { c } else { c.wrapping_neg() };
            vec![(x, affine(add, 0, m))]
        }
        _ => Vec::new(),
    }
}

/// Writes packets of one definition.
pub struct PacketWriter<'p> {
    p: &'p Program,
    slots: Vec<i64>,
    count_slots: HashSet<u16>,
    /// Largest count drawn for arrays, lists and strings in the current packet.
    pub scale: u64,
    pub leaves: Vec<Leaf>,
    crc_leaf: Option<usize>,
    /// Slots that hold the byte length of a role's `le-uint` (netcode's sequence_bytes):
    /// written as the length the role's value needs.
    length_of: std::collections::HashMap<u16, Role>,
    /// Slots a derived role reads, and how to write them for the role's value.
    sources: std::collections::HashMap<u16, (Role, Inverse)>,
    /// Bytes of header in the last packet written: what fragment 0 carries beyond
    /// `fragment-size` when the fragment's data describes the header.
    header_bytes: usize,
    /// Bits written most significant first that do not fill a byte yet, and how many.
    msb: (u64, u32),
}

/// The packet being written; its tracer sees every primitive, from which the leaves
/// (what a dissection of it must find) are taken.
type Out = WriteStream<Vec<Prim>>;

fn slots_in(code: &[Op], out: &mut HashSet<u16>) {
    for op in code {
        if let Op::Slot(s) = op {
            out.insert(*s);
        }
    }
}

impl<'p> PacketWriter<'p> {
    pub fn new(p: &'p Program) -> Self {
        let mut count_slots = HashSet::new();
        for n in &p.nodes {
            match &n.kind {
                Kind::Array {
                    count: Count::Expr(e),
                    ..
                }
                | Kind::Bytes(Count::Expr(e)) => slots_in(p.expr(*e), &mut count_slots),
                _ => {}
            }
        }
        let mut length_of = std::collections::HashMap::new();
        for n in &p.nodes {
            if let (Kind::LeUint(Count::Expr(e)), Some(role)) = (&n.kind, n.role)
                && let [Op::Slot(s)] = p.expr(*e)
            {
                length_of.insert(*s, role);
            }
        }
        // Fields a derived role reads (not roles themselves): written so the role holds
        // the value asked for.
        let mut sources = std::collections::HashMap::new();
        let role_slots: HashSet<u16> = p
            .nodes
            .iter()
            .filter(|n| n.role.is_some())
            .filter_map(|n| n.slot)
            .collect();
        for n in &p.nodes {
            if let (Kind::Derived(e), Some(role)) = (&n.kind, n.role) {
                let inv = inverses(p.expr(*e));
                if inv.iter().all(|(s, _)| !role_slots.contains(s)) {
                    for (s, i) in inv {
                        sources.insert(s, (role, i));
                    }
                }
            }
        }
        PacketWriter {
            p,
            sources,
            length_of,
            slots: vec![0; p.slot_count],
            count_slots,
            scale: 8,
            leaves: Vec::new(),
            crc_leaf: None,
            header_bytes: 0,
            msb: (0, 0),
        }
    }

    /// Packet types with a body definition.
    /// Every packet type the definition declares.
    pub fn types(&self) -> Vec<u32> {
        self.p.packets.iter().map(|d| d.type_id).collect()
    }

    /// The packet types `side` sends: all but those declared `from` the other side.
    pub fn types_from(&self, side: gpcap_dissect::program::Side) -> Vec<u32> {
        self.p
            .packets
            .iter()
            .filter(|d| d.from != Some(side.other()))
            .map(|d| d.type_id)
            .collect()
    }

    fn set(&mut self, id: NodeId, v: i64) {
        if let Some(s) = self.p.nodes[id as usize].slot
            && let Some(x) = self.slots.get_mut(s as usize)
        {
            *x = v;
        }
    }

    fn bits(&mut self, w: &mut Out, v: u32, n: u32) -> BitResult<()> {
        self.leaves.push((w.bits_processed(), n as u64, v as u64));
        w.writer.write_bits(v, n)
    }

    fn align(&mut self, w: &mut Out) -> BitResult<()> {
        if self.msb.1 != 0 {
            let (acc, n) = std::mem::take(&mut self.msb);
            self.leaves.push((w.bits_processed() + n as u64, 8 - n as u64, 0));
            return w.writer.write_bits((acc << (8 - n)) as u32, 8);
        }
        let pad = w.writer.align_bits();
        if pad > 0 {
            self.leaves.push((w.bits_processed(), pad as u64, 0));
        }
        w.writer.write_align().map(|_| ())
    }

    fn bytes(&mut self, w: &mut Out, data: &[u8]) -> BitResult<()> {
        self.align(w)?;
        self.leaves.push((w.bits_processed(), data.len() as u64 * 8, 0));
        w.writer.write_bytes(data)
    }

    /// Whole bytes read as one value (`raw`): aligned first, as the reader does.
    fn word(&mut self, w: &mut Out, data: &[u8], raw: u64) -> BitResult<()> {
        self.align(w)?;
        self.leaves.push((w.bits_processed(), data.len() as u64 * 8, raw));
        w.writer.write_bytes(data)
    }

    /// `n` bits of `v`, most significant first: gathered into whole bytes, each written
    /// as the byte it is (the LSB-first writer writes a byte-aligned 8 bits as is).
    fn msb_bits(&mut self, w: &mut Out, id: NodeId, v: u64, n: u32) -> Result<(), GenError> {
        if self.msb.1 == 0 && !w.bits_processed().is_multiple_of(8) {
            return Err(GenError::Unsupported {
                field: self.p.nodes[id as usize].name.clone(),
                why: "starts inside a byte of least-significant-first bits: one byte cannot hold both bit orders",
            });
        }
        self.leaves
            .push((w.bits_processed() + self.msb.1 as u64, n as u64, v));
        for i in (0..n).rev() {
            self.msb.0 = self.msb.0 << 1 | (v >> i & 1);
            self.msb.1 += 1;
            if self.msb.1 == 8 {
                w.writer.write_bits(self.msb.0 as u32, 8)?;
                self.msb = (0, 0);
            }
        }
        Ok(())
    }

    /// A value for an integer field in `min..=max`: counts stay within the scale.
    fn int_value(&self, rng: &mut Rng, id: NodeId, min: i64, max: i64) -> i64 {
        let is_count = self.p.nodes[id as usize]
            .slot
            .is_some_and(|s| self.count_slots.contains(&s));
        if is_count {
            let hi = max.min(min.saturating_add(self.scale as i64));
            return rng.range(min, hi);
        }
        rng.range(min, max)
    }

    /// A value for a leaf: the role's when the caller fixes it, else random (counts
    /// within the scale).
    fn leaf_value(&self, rng: &mut Rng, id: NodeId, kind: &Kind, role: Option<u64>) -> Raw {
        let float = |rng: &mut Rng| ((rng.unit() as f32 - 0.5) * 2000.0).to_bits() as u64;
        let mut r = [0u64; 4];
        match kind {
            Kind::Bits(n) => {
                r[0] = role.unwrap_or_else(|| {
                    let mask = (1u64 << n) - 1;
                    if self
                        .count_slots
                        .contains(&self.p.nodes[id as usize].slot.unwrap_or(u16::MAX))
                    {
                        rng.below(self.scale.min(mask) + 1)
                    } else {
                        rng.next_u64() & mask
                    }
                })
            }
            Kind::Bool => r[0] = rng.below(2),
            Kind::Int { min, max } => {
                r[0] = role
                    .map(|v| v as i64)
                    .unwrap_or_else(|| self.int_value(rng, id, *min, *max)) as u64
            }
            Kind::Uint64 => r[0] = role.unwrap_or_else(|| rng.next_u64()),
            Kind::Float => r[0] = float(rng),
            Kind::Double => r[0] = ((rng.unit() - 0.5) * 1e6).to_bits(),
            Kind::CompressedFloat(cf) => r[0] = rng.below(cf.max_int as u64 + 1),
            Kind::Vector => r[..3].iter_mut().for_each(|x| *x = float(rng)),
            Kind::Quaternion => r
                .iter_mut()
                .for_each(|x| *x = (rng.unit() as f32 * 2.0 - 1.0).to_bits() as u64),
            Kind::CompressedVector(cf) => r[..3]
                .iter_mut()
                .for_each(|x| *x = rng.below(cf.max_int as u64 + 1)),
            Kind::SmallestThree(bits) => {
                r[0] = rng.below(4);
                r[1..].iter_mut().for_each(|x| *x = rng.below(1 << bits));
            }
            _ => {}
        }
        Raw(r)
    }

    /// Writes one leaf through the primitive table and keeps its leaves.
    fn leaf(&mut self, w: &mut Out, id: NodeId, kind: &Kind, mut raw: Raw) -> Result<(), GenError> {
        let before = w.tracer.len();
        prims::serialize_leaf(w, kind, &mut raw).map_err(|error| GenError::Field {
            field: self.p.nodes[id as usize].name.clone(),
            error,
        })?;
        self.set(id, raw.0[0] as i64);
        let leaves = &mut self.leaves;
        prims::fields(kind, &w.tracer[before..], false, &mut |f: &prims::LeafField| {
            leaves.push((f.bit_offset, f.bit_len, f.raw))
        });
        Ok(())
    }

    fn block(&mut self, w: &mut Out, rng: &mut Rng, b: Block, roles: &Roles) -> Result<(), GenError> {
        for &id in self.p.block(b) {
            self.node(w, rng, id, roles)?;
        }
        Ok(())
    }

    /// A count's value from the fields written so far.
    fn count(&self, c: &Count) -> Result<u64, GenError> {
        Ok(match c {
            Count::Const(n) => *n,
            Count::Expr(e) => eval(self.p.expr(*e), &self.slots)
                .map_err(|_| GenError::DivisionByZero)?
                .max(0) as u64,
        })
    }

    /// The value a field must take for a role (the protocol id, a sequence, a field a
    /// derived role reads, a role's length), or None to write any.
    fn role_value(&self, node: &gpcap_dissect::program::Node, roles: &Roles) -> Option<u64> {
        let p = self.p;
        match node.role {
            Some(Role::ProtocolId) => p.params.protocol_id.map(|i| i.value),
            Some(r) => roles.get(r),
            // A field a derived role reads: what makes the role the value asked for.
            None if node.slot.is_some_and(|s| self.sources.contains_key(&s)) => node
                .slot
                .and_then(|s| self.sources.get(&s))
                .and_then(|&(r, inv)| roles.get(r).map(|v| inv.apply(v))),
            // The length of a role's le-uint: the bytes its value needs.
            None => node
                .slot
                .and_then(|s| self.length_of.get(&s))
                .and_then(|r| roles.get(*r))
                .map(|v| u64::from((64 - v.leading_zeros()).div_ceil(8).max(1))),
        }
    }

    /// Refuses a field written least-significant-first after most-significant-first
    /// bits that do not fill their byte.
    fn check_bit_order(&self, node: &gpcap_dissect::program::Node) -> Result<(), GenError> {
        let writes_lsb = !matches!(
            node.kind,
            Kind::Msb(_)
                | Kind::Derived(_)
                | Kind::If { .. }
                | Kind::Struct { .. }
                | Kind::Inline { .. }
                | Kind::Array { .. }
                | Kind::List { .. }
        );
        let aligns = matches!(
            node.kind,
            Kind::Align
                | Kind::Bytes(_)
                | Kind::ByteInt { .. }
                | Kind::Varint { .. }
                | Kind::Text { .. }
                | Kind::CString { .. }
                | Kind::Rest { .. }
                | Kind::Check { .. }
                | Kind::Magic(_)
        );
        // In an MSB-first protocol an align pads a byte's low bits, as the reader expects.
        if writes_lsb && self.msb.1 != 0 && !(aligns && self.p.params.msb) {
            return Err(GenError::Unsupported {
                field: node.name.clone(),
                why: "follows most-significant-first bits that do not fill their byte: one byte cannot hold both bit orders",
            });
        }
        Ok(())
    }

    fn node(&mut self, w: &mut Out, rng: &mut Rng, id: NodeId, roles: &Roles) -> Result<(), GenError> {
        let p = self.p;
        let node = &p.nodes[id as usize];
        let role = self.role_value(node, roles);
        self.check_bit_order(node)?;
        match &node.kind {
            Kind::Msb(m) => {
                let v = super::words::msb_value(rng, *m, role);
                self.msb_bits(w, id, v, m.width())?;
                self.set(id, super::words::msb_slot(*m, v));
            }
            Kind::ByteInt { count, big, signed } => {
                let n = self.count(count)?.clamp(1, 8) as u32;
                let v = role.unwrap_or_else(|| rng.next_u64()) & (u64::MAX >> (64 - 8 * n));
                self.word(w, &super::words::byte_int_bytes(v, n, *big), v)?;
                self.set(id, gpcap_wire::bits::msb::extend(v, 8 * n, *signed));
            }
            Kind::Varint { zigzag } => {
                let v = role.unwrap_or_else(|| rng.next_u64() >> rng.below(64));
                let mut b = Vec::with_capacity(10);
                gpcap_wire::bits::msb::varint_bytes(v, &mut b);
                self.word(w, &b, v)?;
                self.set(
                    id,
                    if *zigzag {
                        gpcap_wire::bits::msb::unzigzag(v)
                    } else {
                        v as i64
                    },
                );
            }
            Kind::Text { .. }
            | Kind::CString { .. }
            | Kind::Align
            | Kind::Bytes(_)
            | Kind::String { .. }
            | Kind::Magic(_)
            | Kind::Rest { .. } => self.octets(w, rng, &node.kind, roles)?,
            Kind::Derived(e) => {
                let v = eval(p.expr(*e), &self.slots).map_err(|_| GenError::DivisionByZero)?;
                self.set(id, v);
            }
            Kind::LeUint(c) => {
                let n = self.count(c)?.clamp(1, 8);
                let mask = u64::MAX >> (64 - 8 * n);
                let v = role.unwrap_or_else(|| rng.next_u64()) & mask;
                // One field, as the reader shows it.
                self.leaves.push((w.bits_processed(), 8 * n, v));
                for i in 0..n {
                    w.writer.write_bits((v >> (8 * i)) as u32 & 0xff, 8)?;
                }
                self.set(id, v as i64);
            }
            Kind::Struct { body } | Kind::Inline { body } => self.block(w, rng, *body, roles)?,
            Kind::Array { count, body } => {
                let n = self.count(count)?;
                for _ in 0..n.min(p.limits.max_elements) {
                    self.block(w, rng, *body, roles)?;
                }
            }
            Kind::List { end, body } => self.list(w, rng, *end, *body, &node.name, roles)?,
            Kind::RelativeList { max, body } => self.relative_list(w, rng, *max, *body, roles)?,
            Kind::If {
                cond,
                then,
                otherwise,
            } => {
                let b = if eval(p.expr(*cond), &self.slots).map_err(|_| GenError::DivisionByZero)? != 0 {
                    *then
                } else {
                    *otherwise
                };
                self.block(w, rng, b, roles)?;
            }
            leaf => {
                let raw = self.leaf_value(rng, id, leaf, role);
                if node.role == Some(Role::Crc) {
                    self.crc_leaf = Some(self.leaves.len());
                }
                self.leaf(w, id, leaf, raw)?;
            }
        }
        Ok(())
    }

    /// Byte-aligned and string fields: text, C strings, bytes, bit-counted strings, the
    /// rest of a payload (fragment data, or random bytes as the scale asks), an align.
    fn octets(&mut self, w: &mut Out, rng: &mut Rng, kind: &Kind, roles: &Roles) -> Result<(), GenError> {
        match kind {
            Kind::Text { len } => {
                let n = self.count(len)?.min(1 << 16);
                let text: Vec<u8> = (0..n).map(|_| b'a' + rng.below(26) as u8).collect();
                self.bytes(w, &text)?;
            }
            Kind::CString { max } => {
                let n = rng.below((*max as u64).min(self.scale + 1));
                let mut text: Vec<u8> = (0..n).map(|_| b'a' + rng.below(26) as u8).collect();
                text.push(0);
                self.bytes(w, &text)?;
            }
            Kind::Align => self.align(w)?,
            Kind::Magic(magic) => self.bytes(w, magic)?,
            Kind::Bytes(c) => {
                let n = self.count(c)?;
                let data: Vec<u8> = (0..n.min(1 << 20)).map(|_| rng.next_u32() as u8).collect();
                self.bytes(w, &data)?;
            }
            Kind::String { max } => {
                let len = rng.below((*max as u64).min(self.scale + 1)) as u32;
                let width = int_width(0, *max as i64 - 1).unwrap_or(0);
                self.bits(w, len, width)?;
                let text: Vec<u8> = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
                self.bytes(w, &text)?;
            }
            // Fragment data: the caller's, which already starts with what the body
            // describes. Elsewhere (a payload to the end): random bytes, as many as the
            // packet's scale asks.
            Kind::Rest { .. } => {
                let data = match &roles.data {
                    Some(d) => d.clone(),
                    None => {
                        let n = rng.below((self.scale * 16).min(60_000) + 1);
                        (0..n).map(|_| rng.next_u32() as u8).collect()
                    }
                };
                self.bytes(w, &data)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A datagram to send, with (fragment id, count) when it carries a fragment.
pub type Datagram = (Vec<u8>, Option<(u32, u32)>);

/// Values the caller fixes for role fields.
#[derive(Default)]
struct Roles {
    sequence: Option<u64>,
    packet_type: Option<u64>,
    fragment_id: Option<u64>,
    fragment_count: Option<u64>,
    data: Option<Vec<u8>>,
}

impl Roles {
    fn get(&self, r: Role) -> Option<u64> {
        match r {
            Role::Crc => Some(0),
            Role::Sequence => self.sequence,
            Role::Type => self.packet_type,
            Role::FragmentId => self.fragment_id,
            Role::FragmentCount => self.fragment_count,
            Role::FragmentData
            | Role::Ack
            | Role::AckBits
            | Role::ProtocolId
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
            | Role::FragmentLast => None,
        }
    }
}
