//! The validation plan: every block of the definition flattened, before packets flow,
//! into a short list of ops with widths and range checks resolved — runs of leaves
//! that can only fail by running out of bits fused under one bounds check, `if`s as
//! jumps, inline and named structs spliced in. `analyze` runs it when fields are not
//! recorded; anything it cannot express (arrays, lists, bytes, strings, checks…) stays
//! a call to the interpreter, and a block whose plan fails is read again by the
//! interpreter, which says where and why. The plan only decides faster, never differently.

use super::expr;
use super::prims;
use super::program::{Block, Count, Expr, Kind, NodeId, Program};
use crate::bits::int_width;

/// No slot to write.
pub const NO_SLOT: u16 = u16::MAX;

/// Structs spliced into one plan at most this deep (deeper ones stay interpreter calls).
const MAX_SPLICE: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// `fields` fields in `bits` bits that can fail only by running out of bits.
    Skip {
        bits: u32,
        fields: u32,
    },
    /// One value of `bits` (≤ 32) bits, at most `max` raw; `raw + bias` goes to `slot`.
    Read {
        bits: u8,
        slot: u16,
        max: u32,
        bias: i64,
    },
    /// A compressed vector: three values of `bits`, each at most `max` (4 fields).
    Read3 {
        bits: u8,
        max: u32,
    },
    /// Unless the condition holds, go on at op `to`.
    Unless {
        cond: Expr,
        to: u32,
    },
    /// Unless the slot is non-zero (`if "at_rest"`), or zero with `negate`
    /// (`if "!at_rest"`), go on at op `to`: the common condition without the evaluator.
    UnlessSlot {
        slot: u16,
        negate: bool,
        to: u32,
    },
    /// `array`: the body (with its own plan) `count` times.
    Array {
        count: Count,
        body: Block,
    },
    /// `relative-list`: the article's index ladder, then the body, until `max`.
    RelativeList {
        max: i64,
        body: Block,
    },
    Goto {
        to: u32,
    },
    /// The interpreter reads this node.
    Node(NodeId),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub ops: Vec<Op>,
    /// The plan of the block starting at each index of `Program::children`, as a range
    /// of `ops` (empty: read by the interpreter).
    at: Vec<(u32, u32)>,
}

impl Plan {
    /// Plans every block of `p` that gains from one.
    pub fn build(p: &Program) -> Plan {
        let mut plan = Plan {
            ops: Vec::new(),
            at: vec![(0, 0); p.children.len()],
        };
        let mut blocks: Vec<Block> = vec![p.header];
        blocks.extend(p.fragment);
        blocks.extend(p.packets.iter().map(|d| d.body));
        for n in &p.nodes {
            match n.kind {
                Kind::Struct { body }
                | Kind::Inline { body }
                | Kind::Rest { body }
                | Kind::Array { body, .. }
                | Kind::List { body, .. }
                | Kind::RelativeList { body, .. } => blocks.push(body),
                Kind::If { then, otherwise, .. } => blocks.extend([then, otherwise]),
                _ => {}
            }
        }
        for b in blocks {
            let Some(slot) = plan.at.get(b.start as usize) else {
                continue;
            };
            if b.len == 0 || slot.1 != 0 {
                continue;
            }
            let mut ops = Ops::default();
            ops.flatten(p, b, 0);
            let mut ops = ops.ops;
            // Only what the interpreter would read node by node anyway: no plan.
            if ops.iter().all(|o| matches!(o, Op::Node(_))) {
                continue;
            }
            let start = plan.ops.len() as u32;
            for op in &mut ops {
                if let Op::Unless { to, .. } | Op::UnlessSlot { to, .. } | Op::Goto { to } = op {
                    *to += start;
                }
            }
            plan.ops.extend(ops);
            plan.at[b.start as usize] = (start, plan.ops.len() as u32 - start);
        }
        plan
    }

    /// The ops of block `b`'s plan (empty when it has none).
    #[inline]
    pub fn of(&self, b: Block) -> (u32, &[Op]) {
        match self.at.get(b.start as usize) {
            Some(&(start, len)) if len > 0 => (
                start,
                self.ops
                    .get(start as usize..(start + len) as usize)
                    .unwrap_or(&[]),
            ),
            _ => (0, &[]),
        }
    }
}

#[derive(Default)]
struct Ops {
    ops: Vec<Op>,
    /// Ops before this index may not absorb what follows: a jump lands here.
    barrier: usize,
}

impl Ops {
    /// Appends block `b`'s ops; jump targets are relative to the start of `ops`.
    fn flatten(&mut self, p: &Program, b: Block, splice: u32) {
        for &id in p.block(b) {
            let node = &p.nodes[id as usize];
            let slot = node.slot.unwrap_or(NO_SLOT);
            match &node.kind {
                Kind::Inline { body } if splice < MAX_SPLICE => self.flatten(p, *body, splice + 1),
                // A named group is one field more; nothing else when not recorded.
                Kind::Struct { body } if splice < MAX_SPLICE && node.slot.is_none() => {
                    self.skip(0, 1);
                    self.flatten(p, *body, splice + 1);
                }
                Kind::If {
                    cond,
                    then,
                    otherwise,
                } if splice < MAX_SPLICE => {
                    let unless = |to: u32| match p.expr(*cond) {
                        [expr::Op::Slot(slot)] => Op::UnlessSlot {
                            slot: *slot,
                            negate: false,
                            to,
                        },
                        [expr::Op::Slot(slot), expr::Op::Not] => Op::UnlessSlot {
                            slot: *slot,
                            negate: true,
                            to,
                        },
                        _ => Op::Unless { cond: *cond, to },
                    };
                    let at = self.ops.len();
                    self.ops.push(unless(0));
                    self.flatten(p, *then, splice + 1);
                    if otherwise.len > 0 {
                        let goto = self.ops.len();
                        self.ops.push(Op::Goto { to: 0 });
                        self.ops[at] = unless(self.ops.len() as u32);
                        self.barrier = self.ops.len();
                        self.flatten(p, *otherwise, splice + 1);
                        self.ops[goto] = Op::Goto {
                            to: self.ops.len() as u32,
                        };
                    } else {
                        self.ops[at] = unless(self.ops.len() as u32);
                    }
                    self.barrier = self.ops.len();
                }
                Kind::Array { count, body } if node.slot.is_none() => self.ops.push(Op::Array {
                    count: *count,
                    body: *body,
                }),
                Kind::RelativeList { max, body } if node.slot.is_none() => self.ops.push(Op::RelativeList {
                    max: *max,
                    body: *body,
                }),
                kind => match leaf(kind, slot) {
                    Some(Op::Skip { bits, fields }) => self.skip(bits, fields),
                    Some(op) => self.ops.push(op),
                    None => self.ops.push(Op::Node(id)),
                },
            }
        }
    }

    /// Adds a run of unchecked bits, fused with the run before it.
    fn skip(&mut self, bits: u32, fields: u32) {
        if self.ops.len() > self.barrier
            && let Some(Op::Skip { bits: b, fields: f }) = self.ops.last_mut()
        {
            *b += bits;
            *f += fields;
        } else {
            self.ops.push(Op::Skip { bits, fields });
        }
    }
}

/// A leaf as one op, when it has one.
fn leaf(kind: &Kind, slot: u16) -> Option<Op> {
    let read = |bits: u32, max: u32, bias: i64| Op::Read {
        bits: bits as u8,
        slot,
        max,
        bias,
    };
    let unchecked = |bits: u32| {
        (slot == NO_SLOT).then_some(Op::Skip {
            bits,
            fields: prims::field_count(kind),
        })
    };
    let plain = |bits: u32| unchecked(bits).or(Some(read(bits, u32::MAX, 0)));
    match *kind {
        Kind::Bits(n) if (1..=32).contains(&n) => plain(n),
        Kind::Bool => plain(1),
        Kind::Float => plain(32),
        Kind::Int { min, max } => {
            let width = int_width(min, max)?;
            let span = (max - min) as u32;
            let full = width == 32 || span == (1u32 << width) - 1;
            match unchecked(width) {
                Some(op) if full => Some(op),
                _ => Some(read(width, span, min)),
            }
        }
        Kind::CompressedFloat(cf) if (1..=32).contains(&cf.bits) => Some(read(cf.bits, cf.max_int, 0)),
        Kind::CompressedVector(cf) if (1..=32).contains(&cf.bits) && slot == NO_SLOT => Some(Op::Read3 {
            bits: cf.bits as u8,
            max: cf.max_int,
        }),
        Kind::Uint64 | Kind::Double => unchecked(64),
        Kind::Vector => unchecked(96),
        Kind::Quaternion => unchecked(128),
        Kind::SmallestThree(b) if (2..=10).contains(&b) => unchecked(2 + 3 * b),
        _ => None,
    }
}
