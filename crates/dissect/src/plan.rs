//! The validation plan: every block of the definition flattened, before packets flow,
//! into a short list of ops with widths and range checks resolved — runs of leaves
//! that can only fail by running out of bits fused under one bounds check, `if`s as
//! jumps, inline and named structs spliced in. `analyze` runs it when fields are not
//! recorded; anything it cannot express (arrays, lists, bytes, strings, checks…) stays
//! a call to the interpreter, and a block whose plan fails is read again by the
//! interpreter, which says where and why. The plan only decides faster, never differently.

use super::expr;
use super::prims;
use super::program::{Block, Count, Expr, Kind, NodeId, Program, ROLE_SLOTS, Role};
use crate::bits::int_width;
use crate::validate::FRAGMENT_TYPE;

/// No slot to write.
pub const NO_SLOT: u16 = u16::MAX;

/// No plan: the body is read by the interpreter.
pub const NO_ENTRY: u32 = u32::MAX;

/// Structs spliced into one plan at most this deep (deeper ones stay interpreter calls).
const MAX_SPLICE: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// `fields` fields in `bits` bits under one bounds check, then the range checks
    /// `checks` (a range of [`Plan::checks`]) on the values at their offsets.
    Run {
        bits: u32,
        fields: u32,
        checks: (u32, u32),
    },
    /// A run read only when the slot is non-zero (zero with `negate`): `if "flag" { … }`
    /// around fixed-width fields, in one op instead of a jump and a run. (Checking the
    /// run whether taken or not, to save the branch, measured slower: flags in game
    /// state are mostly steady.)
    Cond {
        slot: u16,
        negate: bool,
        bits: u32,
        fields: u32,
        checks: (u32, u32),
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
    /// `array`: the body `count` times; its plan starts at op `entry` ([`NO_ENTRY`]:
    /// none). A `fixed` body is one run without slots, checked in one tight loop; a
    /// `flat` one (a range of [`Plan::segments`], empty when not) only runs and
    /// conditional runs, read segment after segment without dispatching ops.
    Array {
        count: Count,
        body: Block,
        entry: u32,
        fixed: bool,
        flat: (u32, u32),
    },
    /// `relative-list`: the article's index ladder, then the body, until `max`.
    RelativeList {
        max: i64,
        body: Block,
        entry: u32,
        flat: (u32, u32),
    },
    Goto {
        to: u32,
    },
    /// The interpreter reads this node.
    Node(NodeId),
    /// The end of a block's plan: back to the array or list that runs it as an element,
    /// or done.
    Return,
}

/// One value of a run: the bits of `mask` (≤ 32 of them) at `at` bits into the run, at
/// most `max` raw; `raw + bias` goes to `slot`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Check {
    pub at: u32,
    pub mask: u32,
    pub slot: u16,
    pub max: u32,
    pub bias: i64,
}

/// The checks `range` (first, count) of `checks` names.
#[inline(always)]
pub fn checks(checks: &[Check], (first, n): (u32, u32)) -> &[Check] {
    checks
        .get(first as usize..first as usize + n as usize)
        .unwrap_or(&[])
}

/// A run or conditional run of a flat element body: read when `slot` is
/// [`NO_SLOT`] (always) or non-zero (zero with `negate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub slot: u16,
    pub negate: bool,
    pub bits: u32,
    pub fields: u32,
    pub checks: (u32, u32),
    /// The same checks read from one 128-bit window, when they fit in one.
    pub pack: Option<Pack>,
}

/// A run's checks over one window of its bits (the 16 bytes from the run's first byte,
/// shifted to its first bit: at least 121 bits), held in the segment so that reading
/// them looks nothing up: the range checks in two [`Group`]s (values in a run never
/// overlap, so each touches only its neighbours: alternate ones never touch), the
/// checks that fill a slot one by one (at most [`PACK_SLOTS`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pack {
    pub groups: [Group; 2],
    pub slots: [Check; PACK_SLOTS],
    pub slot_count: u8,
}

/// Slot-filling checks a [`Pack`] holds at most (a flag before a conditional run).
pub const PACK_SLOTS: usize = 2;

impl Pack {
    /// Not zero when a range check fails in `window`.
    #[inline(always)]
    pub fn out_of_range(&self, window: u128) -> u128 {
        self.groups[0].out_of_range(window) | self.groups[1].out_of_range(window)
    }

    pub fn slots(&self) -> &[Check] {
        &self.slots[..(self.slot_count as usize).min(PACK_SLOTS)]
    }
}

/// Range checks of values no two of which touch, made at once: each value's excess
/// over its maximum, added in its place, carries into the bit just above it, which
/// belongs to no value of the group. `((window & mask) + add) & carry` is not zero
/// when any value is out of range (the article's object: six velocity checks in two
/// groups).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Group {
    pub mask: u128,
    pub add: u128,
    pub carry: u128,
}

impl Group {
    /// Whether a value of the group is out of range in `window`.
    #[inline(always)]
    pub fn out_of_range(&self, window: u128) -> u128 {
        ((window & self.mask) + self.add) & self.carry
    }
}

/// Bits of a run a window is sure to hold: 16 bytes less the shift to the run's first bit.
pub const WINDOW_BITS: u32 = 128 - 7;

/// The window of a run at bit `pos`, when 16 bytes lie in `data` from its first byte.
#[inline(always)]
pub fn window(data: &[u8], pos: u64) -> Option<u128> {
    let byte = (pos >> 3) as usize;
    let w: [u8; 16] = *data.get(byte..byte.wrapping_add(16))?.first_chunk::<16>()?;
    Some(u128::from_le_bytes(w) >> (pos & 7))
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub ops: Vec<Op>,
    pub checks: Vec<Check>,
    pub segments: Vec<Segment>,
    /// The entry op of the block starting at each index of `Program::children`
    /// ([`NO_ENTRY`]: read by the interpreter).
    at: Vec<u32>,
    /// The entry of each packet type's body, by type id ([`NO_ENTRY`]: no plan or no
    /// such type), and of the header: one load where the lookup through the packet's
    /// definition was a chain of them on every datagram.
    pub bodies: Vec<u32>,
    pub header: u32,
    /// The slots an expression reads: the only ones a packet must start with at zero
    /// (roles are read only once written, `Exec::seen`).
    pub read_slots: Vec<u16>,
    /// What each op reads, for the bandwidth profile ([`super::leaves`]): the leaves of
    /// a run in order, the node of an array or list.
    pub leaves: super::leaves::Table,
    /// The nodes among the `Op::Node`s that compiled code reads itself, by node id.
    pub aligned: std::collections::BTreeMap<NodeId, Aligned>,
    /// A datagram read whole by one compiled function, when the protocol's shape lets it.
    pub datagram: Option<Datagram>,
}

/// A datagram read from its first bit in one go — the header, the body its type names,
/// the end check, no bytes after it — where `Exec::packet` would read the header's plan,
/// look at its roles, then read the body's plan. Only for protocols whose roles read
/// after the whole datagram are those read after the header (crc and type read once, in
/// the header; one sequence field at most), without messages, a fragment condition or a
/// checksum stand-in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Datagram {
    /// The packet type of fragments, which `Exec::packet` reads.
    pub fragment_type: Option<u32>,
    /// The magic of the end check, when there is one.
    pub end_check: Option<u32>,
    /// The packet types below 64 whose body is empty (a bit each): no plan, nothing to read.
    pub empty: u64,
}

impl Datagram {
    fn of(p: &Program, header: u32) -> Option<Datagram> {
        let once = |role: Role| p.nodes.iter().filter(|n| n.role == Some(role)).count() <= 1;
        let in_header = |role: Role| {
            p.nodes.iter().all(|n| n.role != Some(role))
                || p.block(p.header)
                    .iter()
                    .any(|&id| p.nodes[id as usize].role == Some(role))
        };
        // A body that reads the header block again would set its roles again.
        let again = p.nodes.iter().any(|n| {
            matches!(n.kind, Kind::Struct { body } | Kind::Inline { body } | Kind::Rest { body } if body == p.header)
        });
        let simple = header != NO_ENTRY
            && !again
            && p.messages.is_none()
            && p.fragment_when.is_none()
            && p.params.rule.as_ref().is_none_or(|r| r.stand_in.is_none())
            && [Role::Crc, Role::Type, Role::Sequence].into_iter().all(once)
            && in_header(Role::Crc)
            && in_header(Role::Type);
        let empty = (0..64u32)
            .filter(|&t| p.packet(t).is_some_and(|d| d.body.len == 0))
            .fold(0u64, |m, t| m | 1 << t);
        simple.then_some(Datagram {
            fragment_type: p.fragment.map(|_| FRAGMENT_TYPE),
            end_check: p.params.end_check,
            empty,
        })
    }
}

/// A whole-byte node the plan executor hands to the interpreter, as compiled code reads
/// it: zero bits to the next byte (a field when there are any), then its bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aligned {
    /// `align`.
    Align,
    /// `bytes`: `count` bytes (one field).
    Bytes(Count),
    /// `string`: its group and a length of `width` bits, at most `top`, then that many
    /// bytes (three fields).
    String { width: u32, top: u32 },
    /// `check`: 32 bits that must be `magic` (one field), written to `slot`.
    Check { magic: u32, slot: u16 },
}

/// `kind` as an [`Aligned`] node, when it is one (`slot`: the slot it fills, when read).
fn aligned(kind: &Kind, slot: u16) -> Option<Aligned> {
    match *kind {
        Kind::Align => Some(Aligned::Align),
        Kind::Bytes(count) => Some(Aligned::Bytes(count)),
        Kind::String { max } if max > 0 => Some(Aligned::String {
            width: int_width(0, i64::from(max) - 1)?,
            top: max - 1,
        }),
        Kind::Check { magic } => Some(Aligned::Check { magic, slot }),
        _ => None,
    }
}

impl Plan {
    /// Sets to zero every slot an expression reads: how each datagram starts, and how
    /// one read again from the start after its compiled function gave up starts.
    pub(crate) fn clear_read_slots(&self, slots: &mut [i64]) {
        for &s in &self.read_slots {
            if let Some(x) = slots.get_mut(s as usize) {
                *x = 0;
            }
        }
    }

    /// Plans every block of `p` that gains from one.
    pub fn build(p: &Program) -> Plan {
        let mut plan = Plan {
            ops: Vec::new(),
            checks: Vec::new(),
            segments: Vec::new(),
            at: vec![NO_ENTRY; p.children.len()],
            bodies: Vec::new(),
            header: NO_ENTRY,
            read_slots: Vec::new(),
            leaves: Default::default(),
            aligned: Default::default(),
            datagram: None,
        };
        // Slots something reads: expressions and roles. The plan writes no other.
        let mut read = vec![false; p.slot_count.max(ROLE_SLOTS)];
        for op in &p.code {
            if let expr::Op::Slot(s) = *op
                && let Some(r) = read.get_mut(s as usize)
            {
                *r = true;
            }
        }
        plan.read_slots = (0..read.len() as u16).filter(|&s| read[s as usize]).collect();
        read.iter_mut().take(ROLE_SLOTS).for_each(|r| *r = true);
        // The plan's runs read least significant bit first, and pad bits are a byte's
        // high ones: a protocol whose bits come the other way is read by the interpreter.
        if p.params.msb || p.params.tracks() {
            return plan;
        }
        for (id, n) in p.nodes.iter().enumerate() {
            let slot = n.slot.filter(|&s| read.get(s as usize) == Some(&true));
            if let Some(a) = aligned(&n.kind, slot.unwrap_or(NO_SLOT)) {
                plan.aligned.insert(id as NodeId, a);
            }
        }
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
            let Some(&slot) = plan.at.get(b.start as usize) else {
                continue;
            };
            if b.len == 0 || slot != NO_ENTRY {
                continue;
            }
            let mut block = Ops {
                read: &read,
                ..Ops::default()
            };
            block.flatten(p, b, 0);
            // Only what the interpreter would read node by node anyway: no plan.
            if block
                .ops
                .iter()
                .all(|o| matches!(o, Op::Node(id) if !plan.aligned.contains_key(id)))
            {
                continue;
            }
            let start = plan.ops.len() as u32;
            let first_check = plan.checks.len() as u32;
            for op in &mut block.ops {
                match op {
                    Op::Unless { to, .. } | Op::UnlessSlot { to, .. } | Op::Goto { to } => *to += start,
                    Op::Run { checks, .. } | Op::Cond { checks, .. } => checks.0 += first_check,
                    _ => {}
                }
            }
            plan.leaves.append(&mut block.leaves, start);
            plan.ops.extend(block.ops);
            plan.ops.push(Op::Return);
            plan.checks.extend(block.checks);
            plan.at[b.start as usize] = start;
        }
        plan.leaves.index(p, plan.ops.len());
        plan.header = plan.entry(p.header).unwrap_or(NO_ENTRY);
        plan.datagram = Datagram::of(p, plan.header);
        plan.bodies = (0..p.by_type.len() as u32)
            .map(|t| p.packet(t).and_then(|d| plan.entry(d.body)).unwrap_or(NO_ENTRY))
            .collect();
        // Every plan is built: point arrays and lists at their bodies' plans.
        for i in 0..plan.ops.len() {
            match plan.ops[i] {
                Op::Array { body, .. } => {
                    let to = plan.entry(body).unwrap_or(NO_ENTRY);
                    let fixed = plan.fixed(to);
                    let segments = plan.flat(to);
                    if let Op::Array {
                        entry,
                        fixed: f,
                        flat,
                        ..
                    } = &mut plan.ops[i]
                    {
                        *entry = to;
                        *f = fixed;
                        *flat = segments;
                    }
                }
                Op::RelativeList { body, .. } => {
                    let to = plan.entry(body).unwrap_or(NO_ENTRY);
                    let segments = plan.flat(to);
                    if let Op::RelativeList { entry, flat, .. } = &mut plan.ops[i] {
                        *entry = to;
                        *flat = segments;
                    }
                }
                _ => {}
            }
        }
        plan
    }

    /// Every block read by the interpreter (a program whose expressions read the
    /// position).
    pub fn interpret_only(&mut self) {
        self.at.fill(NO_ENTRY);
        self.bodies.clear();
        self.header = NO_ENTRY;
        self.datagram = None;
    }

    /// The first op of block `b`'s plan, when it has one. An empty block (an `if`
    /// without `else`) starts wherever it was made, often at the header's index: it has
    /// no plan, never the plan of the block it shares a start with.
    #[inline]
    pub fn entry(&self, b: Block) -> Option<u32> {
        if b.len == 0 {
            return None;
        }
        self.at.get(b.start as usize).copied().filter(|&e| e != NO_ENTRY)
    }

    /// The plan at `entry` as segments, when it is only runs and conditional runs
    /// (empty range when not).
    fn flat(&mut self, entry: u32) -> (u32, u32) {
        let mut flat = Vec::new();
        let mut ended = false;
        for op in self.ops.iter().skip(entry as usize) {
            let (slot, negate, bits, fields, checks) = match *op {
                Op::Run { bits, fields, checks } => (NO_SLOT, false, bits, fields, checks),
                Op::Cond {
                    slot,
                    negate,
                    bits,
                    fields,
                    checks,
                } => (slot, negate, bits, fields, checks),
                Op::Return => {
                    ended = true;
                    break;
                }
                _ => break,
            };
            flat.push(Segment {
                slot,
                negate,
                bits,
                fields,
                checks,
                pack: None,
            });
        }
        let first = self.segments.len() as u32;
        if !ended {
            return (first, 0);
        }
        for mut segment in flat {
            segment.pack = self.pack(segment.checks);
            self.segments.push(segment);
        }
        (first, self.segments.len() as u32 - first)
    }

    /// The checks `range` as a [`Pack`], when every value they read lies in a window
    /// (its carry bit too) and there is a range check to gain on.
    fn pack(&self, range: (u32, u32)) -> Option<Pack> {
        let all = checks(&self.checks, range);
        let width = |c: &Check| 32 - c.mask.leading_zeros();
        let ranged = |c: &Check| u64::from(c.max) < u64::from(c.mask);
        let fits = all.iter().all(|c| c.at + width(c) < WINDOW_BITS);
        if !fits || !all.iter().any(|c| c.slot == NO_SLOT && ranged(c)) {
            return None;
        }
        let mut pack = Pack {
            groups: [Group::default(); 2],
            slots: [Check {
                at: 0,
                mask: 0,
                slot: NO_SLOT,
                max: 0,
                bias: 0,
            }; PACK_SLOTS],
            slot_count: 0,
        };
        // Each range check in a group where neither it nor its carry bit touches a
        // value already there (bits at..=at+width).
        let mut used = [0u128; 2];
        for c in all.iter().filter(|c| c.slot == NO_SLOT && ranged(c)) {
            let w = width(c);
            let span = ((1u128 << (w + 1)) - 1) << c.at;
            let place = used.iter().position(|u| u & span == 0)?;
            let g = &mut pack.groups[place];
            g.mask |= u128::from(c.mask) << c.at;
            g.add |= u128::from(c.mask - c.max) << c.at;
            g.carry |= 1u128 << (c.at + w);
            used[place] |= span;
        }
        for c in all.iter().filter(|c| c.slot != NO_SLOT) {
            *pack.slots.get_mut(pack.slot_count as usize)? = *c;
            pack.slot_count += 1;
        }
        Some(pack)
    }

    /// Whether the plan at `entry` is one run that writes no slot.
    fn fixed(&self, entry: u32) -> bool {
        let at = entry as usize;
        match (self.ops.get(at), self.ops.get(at.wrapping_add(1))) {
            (Some(Op::Run { checks, .. }), Some(Op::Return)) => self
                .checks
                .get(checks.0 as usize..checks.0 as usize + checks.1 as usize)
                .is_some_and(|c| c.iter().all(|c| c.slot == NO_SLOT)),
            _ => false,
        }
    }
}

/// A leaf's part in a run: its width, field count and range checks.
struct Leaf {
    bits: u32,
    fields: u32,
    checks: [Option<Check>; 3],
}

#[derive(Default)]
struct Ops<'r> {
    /// Whether each slot is read by anything.
    read: &'r [bool],
    ops: Vec<Op>,
    checks: Vec<Check>,
    /// Ops before this index may not absorb what follows: a jump lands here.
    barrier: usize,
    /// The leaves and nodes each op reads, and the named structs spliced around them.
    leaves: super::leaves::Table,
}

impl Ops<'_> {
    /// Appends block `b`'s ops; jump targets are relative to the start of `ops`.
    fn flatten(&mut self, p: &Program, b: Block, splice: u32) {
        for &id in p.block(b) {
            let node = &p.nodes[id as usize];
            let slot = node
                .slot
                .filter(|&s| self.read.get(s as usize) == Some(&true))
                .unwrap_or(NO_SLOT);
            match &node.kind {
                Kind::Inline { body } if splice < MAX_SPLICE => self.flatten(p, *body, splice + 1),
                // A named group is one field more; nothing else when not recorded.
                Kind::Struct { body } if splice < MAX_SPLICE && node.slot.is_none() => {
                    self.run(Leaf {
                        bits: 0,
                        fields: 1,
                        checks: [None; 3],
                    });
                    self.leaves.enter(id);
                    self.flatten(p, *body, splice + 1);
                    self.leaves.leave();
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
                    if otherwise.len == 0
                        && let Some(cond) = self.cond(p, unless(0), *then, splice)
                    {
                        self.ops.push(cond);
                        self.barrier = self.ops.len();
                        continue;
                    }
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
                Kind::Array { count, body } if node.slot.is_none() => self.ops.push_node(
                    &mut self.leaves,
                    id,
                    Op::Array {
                        count: *count,
                        body: *body,
                        entry: NO_ENTRY,
                        fixed: false,
                        flat: (0, 0),
                    },
                ),
                Kind::RelativeList { max, body } if node.slot.is_none() => self.ops.push_node(
                    &mut self.leaves,
                    id,
                    Op::RelativeList {
                        max: *max,
                        body: *body,
                        entry: NO_ENTRY,
                        flat: (0, 0),
                    },
                ),
                kind => match leaf(kind, slot) {
                    Some(l) => {
                        self.run(l);
                        self.leaves.push(self.ops.len() - 1, id);
                    }
                    // In the leaf table: the profile's walk reads strings and bytes.
                    None => self.ops.push_node(&mut self.leaves, id, Op::Node(id)),
                },
            }
        }
    }

    /// `then` as a [`Op::Cond`], when the condition is a slot and `then` one run that
    /// writes no slot.
    fn cond(&mut self, p: &Program, unless: Op, then: Block, splice: u32) -> Option<Op> {
        let Op::UnlessSlot { slot, negate, .. } = unless else {
            return None;
        };
        let mut body = Ops {
            read: self.read,
            leaves: self.leaves.nested(),
            ..Ops::default()
        };
        body.flatten(p, then, splice + 1);
        let [Op::Run { bits, fields, checks }] = body.ops[..] else {
            return None;
        };
        if body.checks.iter().any(|c| c.slot != NO_SLOT) {
            return None;
        }
        let first = self.checks.len() as u32;
        self.checks.extend(body.checks);
        self.leaves.append(&mut body.leaves, self.ops.len() as u32);
        Some(Op::Cond {
            slot,
            negate,
            bits,
            fields,
            checks: (first, checks.1),
        })
    }

    /// Adds a leaf to the run before it, or starts a run.
    fn run(&mut self, leaf: Leaf) {
        let open = self.ops.len() > self.barrier && matches!(self.ops.last(), Some(Op::Run { .. }));
        if !open {
            self.ops.push(Op::Run {
                bits: 0,
                fields: 0,
                checks: (self.checks.len() as u32, 0),
            });
        }
        if let Some(Op::Run { bits, fields, checks }) = self.ops.last_mut() {
            for c in leaf.checks.into_iter().flatten() {
                self.checks.push(Check {
                    at: *bits + c.at,
                    ..c
                });
                checks.1 += 1;
            }
            *bits += leaf.bits;
            *fields += leaf.fields;
        }
    }
}

/// Pushing an op that reads a node of its own (an array, a list), noted for the profile.
trait PushNode {
    fn push_node(&mut self, leaves: &mut super::leaves::Table, id: NodeId, op: Op);
}

impl PushNode for Vec<Op> {
    fn push_node(&mut self, leaves: &mut super::leaves::Table, id: NodeId, op: Op) {
        leaves.push(self.len(), id);
        self.push(op);
    }
}

/// A leaf as part of a run, when it can be one.
fn leaf(kind: &Kind, slot: u16) -> Option<Leaf> {
    let check = |at: u32, bits: u32, max: u32, bias: i64, slot: u16| Check {
        at,
        mask: u32::MAX.checked_shr(32 - bits.min(32)).unwrap_or(0),
        slot,
        max,
        bias,
    };
    let one = |bits: u32, c: Option<Check>| Leaf {
        bits,
        fields: 1,
        checks: [c, None, None],
    };
    // Unchecked unless a later condition reads it.
    let plain = |bits: u32| {
        let c = (slot != NO_SLOT).then(|| check(0, bits, u32::MAX, 0, slot));
        one(bits, c)
    };
    let unchecked = |bits: u32| {
        (slot == NO_SLOT).then(|| Leaf {
            bits,
            fields: prims::field_count(kind),
            checks: [None; 3],
        })
    };
    match *kind {
        Kind::Bits(n) if (1..=32).contains(&n) => Some(plain(n)),
        Kind::Bool => Some(plain(1)),
        Kind::Float => Some(plain(32)),
        Kind::Int { min, max } => {
            let width = int_width(min, max)?;
            let span = (max - min) as u32;
            let full = width == 32 || span == (1u32 << width) - 1;
            if full && slot == NO_SLOT {
                return Some(one(width, None));
            }
            Some(one(width, Some(check(0, width, span, min, slot))))
        }
        Kind::CompressedFloat(cf) if (1..=32).contains(&cf.bits) => {
            Some(one(cf.bits, Some(check(0, cf.bits, cf.max_int, 0, slot))))
        }
        Kind::CompressedVector(cf) if (1..=32).contains(&cf.bits) && slot == NO_SLOT => {
            let axis = |i: u32| Some(check(i * cf.bits, cf.bits, cf.max_int, 0, NO_SLOT));
            Some(Leaf {
                bits: 3 * cf.bits,
                fields: 4,
                checks: [axis(0), axis(1), axis(2)],
            })
        }
        Kind::Uint64 | Kind::Double => unchecked(64),
        Kind::Vector => unchecked(96),
        Kind::Quaternion => unchecked(128),
        Kind::SmallestThree(b) if (2..=10).contains(&b) => unchecked(2 + 3 * b),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
