//! The leaves of the validation plan, logged: what the bandwidth profile counts from a
//! datagram the plan reads, without a field tree. [`Table`] says, before packets flow,
//! which leaves each run of the plan reads (and which node an array or list op is);
//! [`LeafLog::read`] walks the plan over a valid datagram and logs each field that
//! carries bits — offset, length, kind, value — under the element it is in, into
//! buffers reused from one datagram to the next. Whatever the walk cannot follow
//! (a node the interpreter reads, a fragment, a value the plan would refuse) makes it
//! give up, and the caller reads the datagram into a field tree instead: the log is the
//! tree's leaves or nothing.

use super::expr::eval;
use super::model::{Label, Value};
use super::plan::{NO_ENTRY, NO_SLOT, Op};
use super::prims::{self, Raw};
use super::program::{Count, Kind, NodeId, Program};
use crate::bits::{BitReader, Prim, RELATIVE_INDEX_LADDER, ReadStream};
use crate::validate::FRAGMENT_TYPE;

mod relative;
mod walks;

pub use walks::Walks;

/// A leaf (or array, or list) an op reads, with the named structs spliced around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    pub op: u32,
    pub node: NodeId,
    /// A range of [`Table::chains`]: the structs from the block down to it.
    pub chain: (u32, u32),
}

/// What each op of a plan reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// In op order, each op's contiguous.
    pub entries: Vec<Entry>,
    pub chains: Vec<NodeId>,
    /// Each op's entries (first, count).
    pub by_op: Vec<(u32, u32)>,
    /// By entry, how a plain leaf is read: made with the plan, so that a log never
    /// reads one program's entries with another's widths.
    plain: Vec<Plain>,
    /// The structs open while a block is flattened.
    stack: Vec<NodeId>,
}

impl Table {
    pub(super) fn enter(&mut self, id: NodeId) {
        self.stack.push(id);
    }

    pub(super) fn leave(&mut self) {
        self.stack.pop();
    }

    /// An empty table for a nested block, inside the structs open here.
    pub(super) fn nested(&self) -> Table {
        Table {
            stack: self.stack.clone(),
            ..Table::default()
        }
    }

    /// Node `node` read by op `op`.
    pub(super) fn push(&mut self, op: usize, node: NodeId) {
        let first = self.chains.len() as u32;
        self.chains.extend_from_slice(&self.stack);
        self.entries.push(Entry {
            op: op as u32,
            node,
            chain: (first, self.stack.len() as u32),
        });
    }

    /// Moves `other`'s entries here, its ops `at` ops on.
    pub(super) fn append(&mut self, other: &mut Table, at: u32) {
        let base = self.chains.len() as u32;
        for e in other.entries.drain(..) {
            self.entries.push(Entry {
                op: e.op + at,
                chain: (e.chain.0 + base, e.chain.1),
                ..e
            });
        }
        self.chains.append(&mut other.chains);
    }

    /// Indexes the entries by op, and says how each plain leaf of program `p` is read,
    /// once every block is in.
    pub(super) fn index(&mut self, p: &Program, ops: usize) {
        self.plain = self.entries.iter().map(|e| Plain::of(p, e)).collect();
        self.by_op = vec![(0, 0); ops];
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(r) = self.by_op.get_mut(e.op as usize) {
                if r.1 == 0 {
                    r.0 = i as u32;
                }
                r.1 += 1;
            }
        }
    }

    /// The entries of op `op`, and the index of the first.
    pub fn of(&self, op: usize) -> (u32, &[Entry]) {
        let (first, n) = self.by_op.get(op).copied().unwrap_or((0, 0));
        let entries = self
            .entries
            .get(first as usize..(first + n) as usize)
            .unwrap_or(&[]);
        (first, entries)
    }

    /// How many leaf slots a log of this table names ([`Logged::slot`]): per entry 8 for
    /// the leaf, its group's parts and padding, 8 more for a list's index ladder, and 8
    /// for the end check.
    pub fn slots(&self) -> usize {
        (2 * self.entries.len() + 1) * 8
    }

    fn chain(&self, e: &Entry) -> &[NodeId] {
        self.chains
            .get(e.chain.0 as usize..(e.chain.0 + e.chain.1) as usize)
            .unwrap_or(&[])
    }
}

/// A field that carries bits, as the tree would hold it, under context `ctx` (an
/// index of [`LeafLog::ctxs`]: the group it is in).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Logged {
    pub ctx: u32,
    pub label: Label,
    pub node: NodeId,
    pub kind: &'static str,
    pub bit_offset: u64,
    /// Its own bits (a group's: those its parts do not cover).
    pub bits: u64,
    pub raw: u64,
    pub value: Value,
    /// Whether its value is its own (false: a group with parts).
    pub valued: bool,
    /// Where in the plan it is read, the same from one datagram to the next: entry
    /// × 8 + part (a group 0, its parts 1…4, padding 7); a list's index ladder (entries
    /// + the list's entry) × 8 + flag (6: the difference); the end check 2 × entries × 8.
    pub slot: u32,
}

impl Logged {
    /// A field the primitive read, as its trace gives it.
    fn read(f: &prims::LeafField, ctx: u32, label: Label, node: NodeId, slot: u32) -> Logged {
        Logged {
            ctx,
            label,
            node,
            kind: f.kind,
            bit_offset: f.bit_offset,
            bits: f.bit_len,
            raw: f.raw,
            value: f.value,
            valued: true,
            slot,
        }
    }
}

/// A fixed-width leaf or part (an integer, bits, a boolean, a compressed float, the
/// parts of a compressed vector or a smallest-three) as the profile counts it, read
/// with no field made: which leaf of the plan it is ([`compact_slot`]), the context of
/// the run that read it (its structs and group are the same in every datagram, so the
/// slot says them), and its value (an integer's, a compressed float's integer).
/// [`GENERAL`] in `slot`: the field is `value`, an index of [`LeafLog::leaves`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rec {
    pub slot: u32,
    pub ctx: u32,
    pub value: i64,
}

/// A [`Rec`] standing for a [`Logged`] field.
pub const GENERAL: u32 = u32::MAX;

/// The slot of a compact record: the leaf's [`Logged::slot`] (entry × 8), its part
/// (0 the leaf, 1… its parts), and a smallest-three's largest component (which names
/// its parts), or 1 for the index flags of a list's `end`.
#[inline(always)]
pub fn compact_slot(slot: u32, part: u32, largest: u32) -> u32 {
    (slot + part) * 4 + largest
}

/// (leaf slot, part, largest) of a compact slot.
pub fn compact_parts(slot: u32) -> (u32, u32, u32) {
    let s = slot / 4;
    (s - s % 8, s % 8, slot % 4)
}

/// The flags of a relative list's index ladder, by ladder slot.
pub const LADDER_FLAGS: [&str; 6] = ["plus_one", "upto_5", "upto_13", "upto_29", "upto_61", "upto_125"];

/// The root context (the datagram).
pub const ROOT_CTX: u32 = 0;

/// Nesting of arrays and lists a walk follows (deeper: the field tree).
const MAX_DEPTH: u32 = 32;

/// The leaves of one datagram and the groups they are in; reused.
#[derive(Debug, Clone, Default)]
pub struct LeafLog {
    /// Each group as (its parent context, its label); the first is the root.
    pub ctxs: Vec<(u32, Label)>,
    pub leaves: Vec<Logged>,
    /// Every field of the datagram in order: compact, or one of `leaves`.
    pub recs: Vec<Rec>,
    /// Whether each element of an array or list is a context of its own
    /// (`Label::Index(k)` under the list's, a relative list's index logged in it as
    /// `index`): what a table with a row per element needs. Off, an element's fields
    /// are logged under its list, as the profile counts them.
    pub elements: bool,
    /// How many of `recs` and `ctxs` the header made (they come first).
    pub header: (usize, usize),
    slots: Vec<i64>,
    trace: Vec<Prim>,
}

/// A leaf of one field read the same way whatever its kind (bits, bool, int,
/// compressed float): `width` bits, at most `max`, `bias` added, the value to slot
/// `var`. Reading them without matching the kind saved the walk a mispredicted jump
/// per leaf.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Plain {
    plain: bool,
    width: u32,
    max: u32,
    bias: i64,
    var: u16,
}

impl Plain {
    fn of(p: &Program, e: &Entry) -> Plain {
        let Some(node) = p.nodes.get(e.node as usize) else {
            return Plain::default();
        };
        let (width, max, bias) = match node.kind {
            Kind::Bits(n) if n <= 32 => (n, u32::MAX, 0),
            Kind::Bool => (1, u32::MAX, 0),
            Kind::Int { min, max } => match crate::bits::int_width(min, max) {
                Some(w) => (w, (max as i128 - min as i128) as u32, min),
                None => return Plain::default(),
            },
            Kind::CompressedFloat(cf) if cf.bits <= 32 => (cf.bits, cf.max_int, 0),
            _ => return Plain::default(),
        };
        Plain {
            plain: true,
            width,
            max,
            bias,
            var: node.slot.unwrap_or(NO_SLOT),
        }
    }
}

/// The walk gave up: the datagram is for the field tree.
struct GiveUp;

type Walk<T = ()> = Result<T, GiveUp>;

impl LeafLog {
    /// A log with each element apart ([`LeafLog::elements`]).
    pub fn by_element() -> LeafLog {
        LeafLog {
            elements: true,
            ..LeafLog::default()
        }
    }

    /// A field as the tree would hold it, in its place among the compact ones.
    fn push(&mut self, l: Logged) {
        self.recs.push(Rec {
            slot: GENERAL,
            ctx: 0,
            value: self.leaves.len() as i64,
        });
        self.leaves.push(l);
    }

    /// Logs the leaves of `data`, a datagram of type `ty` that validated without a
    /// fault. False: the plan cannot say (the log is then meaningless).
    pub fn read(&mut self, p: &Program, data: &[u8], ty: u32) -> bool {
        self.ctxs.clear();
        self.leaves.clear();
        self.recs.clear();
        self.ctxs.push((u32::MAX, Label::Index(0)));
        self.slots.clear();
        self.slots.resize(p.slot_count, 0);
        let mut w = Walker {
            p,
            data,
            pos: 0,
            log: self,
        };
        w.datagram(ty).is_ok()
    }
}

struct Walker<'a> {
    p: &'a Program,
    data: &'a [u8],
    pos: u64,
    log: &'a mut LeafLog,
}

impl Walker<'_> {
    fn datagram(&mut self, ty: u32) -> Walk {
        let p = self.p;
        let plan = &p.plan;
        if p.messages.is_some() || p.params.tracks() || p.params.msb {
            return Err(GiveUp);
        }
        self.ops(plan.header, ROOT_CTX, 0)?;
        self.log.header = (self.log.recs.len(), self.log.ctxs.len());
        let fragment = match (p.fragment, p.fragment_when) {
            (Some(_), Some(_)) => return Err(GiveUp),
            (Some(_), None) => ty == FRAGMENT_TYPE,
            (None, _) => false,
        };
        if fragment {
            return Err(GiveUp);
        }
        let entry = plan.bodies.get(ty as usize).copied().unwrap_or(NO_ENTRY);
        self.ops(entry, ROOT_CTX, 0)?;
        if let Some(magic) = p.params.end_check {
            let slot = 2 * plan.leaves.entries.len() as u32 * 8;
            self.leaf(
                u32::MAX,
                &Kind::Check { magic },
                Label::Part("end_check"),
                ROOT_CTX,
                slot,
            )?;
        }
        let left = (self.data.len() as u64 * 8).saturating_sub(self.pos);
        if left >= 8 {
            return Err(GiveUp);
        }
        Ok(())
    }

    fn ctx(&mut self, parent: u32, label: Label) -> u32 {
        self.log.ctxs.push((parent, label));
        self.log.ctxs.len() as u32 - 1
    }

    fn slot(&self, s: u16) -> i64 {
        self.log.slots.get(s as usize).copied().unwrap_or(0)
    }

    /// The plan from op `entry` to its `Return`, under context `ctx`.
    fn ops(&mut self, entry: u32, ctx: u32, depth: u32) -> Walk {
        let p = self.p;
        let plan = &p.plan;
        if entry == NO_ENTRY || depth > MAX_DEPTH {
            return Err(GiveUp);
        }
        let mut pc = entry as usize;
        loop {
            let op = *plan.ops.get(pc).ok_or(GiveUp)?;
            let at = pc;
            pc += 1;
            match op {
                Op::Run { .. } => self.run(at, ctx)?,
                Op::Cond { slot, negate, .. } => {
                    if (self.slot(slot) != 0) != negate {
                        self.run(at, ctx)?;
                    }
                }
                Op::Unless { cond, to } => match eval(p.expr(cond), &self.log.slots) {
                    Ok(0) => pc = to as usize,
                    Ok(_) => {}
                    Err(_) => return Err(GiveUp),
                },
                Op::UnlessSlot { slot, negate, to } => {
                    if (self.slot(slot) == 0) != negate {
                        pc = to as usize;
                    }
                }
                Op::Goto { to } => pc = to as usize,
                Op::Array { count, entry, .. } => {
                    let n = match count {
                        Count::Const(n) => n,
                        Count::Expr(e) => eval(p.expr(e), &self.log.slots).map_err(|_| GiveUp)?.max(0) as u64,
                    };
                    if n > p.limits.max_elements {
                        return Err(GiveUp);
                    }
                    let (list, _) = self.node_ctx(at, ctx)?;
                    for k in 0..n {
                        // An element's path is its array's, unless each is logged apart.
                        let element = match self.log.elements {
                            true => self.ctx(list, Label::Index(k as u32)),
                            false => list,
                        };
                        self.ops(entry, element, depth + 1)?;
                    }
                }
                Op::RelativeList { max, entry, .. } => {
                    let (list, e) = self.node_ctx(at, ctx)?;
                    let ladder = (plan.leaves.entries.len() as u32 + e) * 8;
                    self.relative_list(list, max, entry, depth, ladder)?;
                }
                Op::Node(_) => self.node(at, ctx)?,
                Op::Return => return Ok(()),
            }
        }
    }

    /// The context of the array or list op `at` reads.
    fn node_ctx(&mut self, at: usize, ctx: u32) -> Walk<(u32, u32)> {
        let table = &self.p.plan.leaves;
        let (index, [e]) = table.of(at) else {
            return Err(GiveUp);
        };
        let e = *e;
        let mut c = ctx;
        for i in 0..e.chain.1 {
            let s = *table.chains.get((e.chain.0 + i) as usize).ok_or(GiveUp)?;
            c = self.ctx(c, Label::Node(s));
        }
        Ok((self.ctx(c, Label::Node(e.node)), index))
    }

    /// The node op `at` leaves to the interpreter, when the walk reads it as the
    /// interpreter records it: a string, bytes, padding, a check.
    fn node(&mut self, at: usize, ctx: u32) -> Walk {
        let p = self.p;
        let table = &p.plan.leaves;
        let (index, [e]) = table.of(at) else {
            return Err(GiveUp);
        };
        let e = *e;
        let node = p.nodes.get(e.node as usize).ok_or(GiveUp)?;
        let slot = index * 8;
        let mut c = ctx;
        for i in 0..e.chain.1 {
            let s = *table.chains.get((e.chain.0 + i) as usize).ok_or(GiveUp)?;
            c = self.ctx(c, Label::Node(s));
        }
        match node.kind {
            Kind::Check { .. } => self.leaf(e.node, &node.kind, Label::Node(e.node), c, slot),
            Kind::Align => self.align(e.node, c, slot + 7),
            Kind::String { max } => {
                // A group: its length, padding, its bytes.
                let top = i64::from(max) - 1;
                let width = crate::bits::int_width(0, top).ok_or(GiveUp)?;
                let group = self.ctx(c, Label::Node(e.node));
                let start = self.pos;
                let len = self.bits(width)?;
                if i64::from(len) > top {
                    return Err(GiveUp);
                }
                self.log.push(Logged {
                    ctx: group,
                    label: Label::Part("length"),
                    node: e.node,
                    kind: "int",
                    bit_offset: start,
                    bits: u64::from(width),
                    raw: u64::from(len),
                    value: Value::Int(i64::from(len)),
                    valued: true,
                    slot: slot + 1,
                });
                self.align(e.node, group, slot + 7)?;
                self.bytes(
                    e.node,
                    "bytes",
                    group,
                    Label::Part("data"),
                    u64::from(len),
                    slot + 2,
                )
            }
            Kind::Bytes(count) => {
                let n = match count {
                    Count::Const(n) => n,
                    Count::Expr(x) => eval(p.expr(x), &self.log.slots).map_err(|_| GiveUp)?.max(0) as u64,
                };
                self.align(e.node, c, slot + 7)?;
                self.bytes(e.node, node.kind.name(), c, Label::Node(e.node), n, slot)
            }
            _ => Err(GiveUp),
        }
    }

    /// Padding to the next byte, zero, as the interpreter records it (none: nothing).
    fn align(&mut self, id: NodeId, ctx: u32, slot: u32) -> Walk {
        let pad = ((8 - self.pos % 8) % 8) as u32;
        if pad == 0 {
            return Ok(());
        }
        let at = self.pos;
        if self.bits(pad)? != 0 {
            return Err(GiveUp);
        }
        self.log.push(Logged {
            ctx,
            label: Label::Part("align"),
            node: id,
            kind: "align",
            bit_offset: at,
            bits: u64::from(pad),
            raw: 0,
            value: Value::UInt(0),
            valued: true,
            slot,
        });
        Ok(())
    }

    /// `n` whole bytes (the walk is byte aligned).
    fn bytes(&mut self, id: NodeId, kind: &'static str, ctx: u32, label: Label, n: u64, slot: u32) -> Walk {
        let at = self.pos;
        let bits = n.checked_mul(8).ok_or(GiveUp)?;
        let end = at.checked_add(bits).ok_or(GiveUp)?;
        if end > self.data.len() as u64 * 8 {
            return Err(GiveUp);
        }
        self.pos = end;
        self.log.push(Logged {
            ctx,
            label,
            node: id,
            kind,
            bit_offset: at,
            bits,
            raw: 0,
            value: Value::Bytes {
                offset: (at / 8) as usize,
                len: n as usize,
            },
            valued: true,
            slot,
        });
        Ok(())
    }

    /// The leaves of run op `at`.
    fn run(&mut self, at: usize, ctx: u32) -> Walk {
        let p = self.p;
        let table = &p.plan.leaves;
        let (first, entries) = table.of(at);
        for (i, e) in entries.iter().enumerate() {
            let slot = (first + i as u32) * 8;
            let k = table.plain.get(first as usize + i).copied().unwrap_or_default();
            if k.plain {
                let raw = self.bits(k.width)?;
                if raw > k.max {
                    return Err(GiveUp);
                }
                let value = k.bias + i64::from(raw);
                if k.var != NO_SLOT
                    && let Some(x) = self.log.slots.get_mut(k.var as usize)
                {
                    *x = value;
                }
                self.rec(compact_slot(slot, 0, 0), ctx, value, k.width);
                continue;
            }
            let node = p.nodes.get(e.node as usize).ok_or(GiveUp)?;
            if self.compact(&node.kind, node.slot, ctx, slot)? {
                continue;
            }
            let mut c = ctx;
            for &s in table.chain(e) {
                c = self.ctx(c, Label::Node(s));
            }
            self.leaf(e.node, &node.kind, Label::Node(e.node), c, slot)?;
        }
        Ok(())
    }

    /// A fixed-width leaf at `slot` of a run under context `ctx`, logged compact
    /// (false: not one of those kinds, nothing read).
    #[inline]
    fn compact(&mut self, kind: &Kind, var: Option<u16>, ctx: u32, slot: u32) -> Walk<bool> {
        let (value, width) = match *kind {
            Kind::Bits(n) => (i64::from(self.bits(n)?), n),
            Kind::Bool => (i64::from(self.bits(1)?), 1),
            Kind::Int { min, max } => {
                let width = crate::bits::int_width(min, max).ok_or(GiveUp)?;
                // Near i64::MAX, `min + raw` may be past i64 as well as past `max`.
                let v = min.checked_add(i64::from(self.bits(width)?)).ok_or(GiveUp)?;
                if v > max {
                    return Err(GiveUp);
                }
                (v, width)
            }
            Kind::CompressedFloat(cf) => (i64::from(self.quantized(&cf)?), cf.bits),
            Kind::CompressedVector(cf) => {
                for part in 1..=3 {
                    let v = self.quantized(&cf)?;
                    self.rec(compact_slot(slot, part, 0), ctx, i64::from(v), cf.bits);
                }
                return Ok(true);
            }
            Kind::SmallestThree(b) => {
                if !(2..=10).contains(&b) {
                    return Err(GiveUp);
                }
                let largest = self.bits(2)?;
                self.rec(compact_slot(slot, 1, 0), ctx, i64::from(largest), 2);
                for part in 2..=4 {
                    let v = self.bits(b)?;
                    self.rec(compact_slot(slot, part, largest), ctx, i64::from(v), b);
                }
                return Ok(true);
            }
            _ => return Ok(false),
        };
        if let Some(s) = var
            && let Some(x) = self.log.slots.get_mut(s as usize)
        {
            *x = value;
        }
        self.rec(compact_slot(slot, 0, 0), ctx, value, width);
        Ok(true)
    }

    #[inline(always)]
    fn rec(&mut self, slot: u32, ctx: u32, value: i64, width: u32) {
        if width > 0 {
            self.log.recs.push(Rec { slot, ctx, value });
        }
    }

    /// `width` (≤ 32) bits at the walk's position.
    #[inline(always)]
    fn bits(&mut self, width: u32) -> Walk<u32> {
        let end = self.pos + u64::from(width);
        if width > 32 || end > self.data.len() as u64 * 8 {
            return Err(GiveUp);
        }
        let v = BitReader::peek_at(self.data, self.pos, width);
        self.pos = end;
        Ok(v)
    }

    /// A compressed float's integer, at most its `max_int`.
    #[inline(always)]
    fn quantized(&mut self, cf: &crate::bits::CompressedFloat) -> Walk<u32> {
        let v = self.bits(cf.bits)?;
        if v > cf.max_int {
            return Err(GiveUp);
        }
        Ok(v)
    }

    /// One leaf, as the interpreter records it: one field, or a group and its parts
    /// (padding beside it).
    fn leaf(&mut self, id: NodeId, kind: &Kind, label: Label, ctx: u32, slot: u32) -> Walk {
        let start = self.pos;
        let fields = prims::field_count(kind);
        if fields == 0 {
            return Err(GiveUp);
        }
        if fields != 1 && !prims::is_group(kind) {
            return self.traced(id, kind, label, ctx, slot);
        }
        let mut r = BitReader::at(self.data, start);
        let mut raw = Raw::default();
        prims::serialize_leaf(&mut r, kind, &mut raw).map_err(|_| GiveUp)?;
        self.pos = r.bits_read();
        if fields == 1 {
            let (bits, value) = prims::single(kind, raw.0[0], true);
            self.log.push(Logged {
                ctx,
                label,
                node: id,
                kind: kind.name(),
                bit_offset: start,
                bits: self.pos - start,
                raw: bits,
                value,
                valued: true,
                slot,
            });
            if let Some(s) = self.p.nodes.get(id as usize).and_then(|n| n.slot)
                && let Some(x) = self.log.slots.get_mut(s as usize)
            {
                *x = raw.0[0] as i64;
            }
            return Ok(());
        }
        let group = self.ctx(ctx, label);
        let at = self.log.leaves.len();
        self.log.push(Logged {
            ctx,
            label,
            node: id,
            kind: kind.name(),
            bit_offset: start,
            bits: 0,
            raw: 0,
            value: Value::None,
            valued: false,
            slot,
        });
        let mut parts = 0u64;
        let mut k = 0;
        let log = &mut *self.log;
        let value = prims::parts_of(kind, &raw, start, true, &mut |f: &prims::LeafField| {
            let (ctx, label, at) = match f.part {
                Some("align") => (ctx, Label::Part("align"), 7),
                Some(name) => {
                    parts += f.bit_len;
                    k += 1;
                    (group, Label::Part(name), k.min(6))
                }
                None => (ctx, label, 0),
            };
            log.push(Logged::read(f, ctx, label, id, slot + at));
        });
        let total = self.pos - start;
        if let Some(g) = self.log.leaves.get_mut(at) {
            g.bits = total.saturating_sub(parts);
            g.valued = parts == 0;
            g.value = value;
        }
        Ok(())
    }

    /// A leaf of one field and padding (the end check), from the trace of its reads.
    fn traced(&mut self, id: NodeId, kind: &Kind, label: Label, ctx: u32, slot: u32) -> Walk {
        let mut trace = std::mem::take(&mut self.log.trace);
        trace.clear();
        let mut raw = Raw::default();
        let mut s = ReadStream::from_reader(BitReader::at(self.data, self.pos), &mut trace);
        let res = prims::serialize_leaf(&mut s, kind, &mut raw);
        self.pos = s.into_reader().bits_read();
        let log = &mut *self.log;
        prims::fields(kind, &trace, true, &mut |f: &prims::LeafField| {
            let (label, at) = match f.part {
                Some("align") => (Label::Part("align"), 7),
                _ => (label, 0),
            };
            log.push(Logged::read(f, ctx, label, id, slot + at));
        });
        self.log.trace = trace;
        res.map(|_| ()).map_err(|_| GiveUp)
    }
}
