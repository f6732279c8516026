//! The plan lowered to Cranelift's IR, op by op: one IR block per plan op, jumps where
//! the plan jumps, array and list bodies inlined in loops. Runs read their fields from
//! 8-byte words loaded at the run's first byte (shared by neighbouring fields), range
//! failures are or-ed and branched on once per run, and slots are written only when
//! the whole run passed — so a block that fails leaves no slot the plan executor
//! would not have written, and the interpreter reading it again writes them anew.
//!
//! Every position read is checked against the datagram's length before a load, as the
//! plan checks it (a run once, a list's difference before it is read); a list's flags
//! are read from a word at the current position, which never passes the length. Loads
//! are 8 bytes at byte offsets up to the length: the caller pads the datagram.

use super::{Env, MAX_NEST, MAX_UNITS};
use crate::plan::{Check, NO_ENTRY, NO_SLOT, Op, Plan};
use crate::program::{Count, ROLE_SLOTS};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{AbiParam, Signature};
use cranelift_codegen::ir::{Block, Function, InstBuilder, MemFlagsData, Value};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

/// Why a block does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsupported {
    /// An op (or a shape of one) the lowering does not know: the plan executor runs it.
    Op,
    /// Past the budget.
    TooLarge,
}

pub(super) type R<T = ()> = Result<T, Unsupported>;

/// Bits a field may end at in a word loaded at its run's byte and shifted to the run's
/// first bit (up to 7): 64 - 7.
const WORD_BITS: u32 = 57;

/// The ops from `entry` to its block's `Return`.
fn block_ops(plan: &Plan, entry: u32) -> R<&[Op]> {
    let rest = plan.ops.get(entry as usize..).ok_or(Unsupported::Op)?;
    let end = rest
        .iter()
        .position(|o| *o == Op::Return)
        .ok_or(Unsupported::Op)?;
    Ok(&rest[..=end])
}

/// A run's checks, when each lies in the run.
fn run_checks(plan: &Plan, bits: u32, range: (u32, u32)) -> R<&[Check]> {
    let cs = plan
        .checks
        .get(range.0 as usize..(range.0 as usize).saturating_add(range.1 as usize))
        .ok_or(Unsupported::Op)?;
    let inside = cs.iter().all(|c| {
        let width = 32 - c.mask.leading_zeros();
        c.mask != 0
            && c.mask == u32::MAX >> (32 - width)
            && u64::from(c.at) + u64::from(width) <= u64::from(bits)
    });
    inside.then_some(cs).ok_or(Unsupported::Op)
}

/// Whether a check can fail (its maximum below what its bits hold).
fn ranged(c: &Check) -> bool {
    c.max < c.mask
}

/// Ops `entry`'s block lowers to (array and list bodies once per use): the budget's
/// unit. `Op`: something in it does not compile.
pub(crate) fn measure(plan: &Plan, env: Env<'_>, entry: u32) -> R<u64> {
    let mut units = 0;
    measure_block(plan, env, entry, 0, &mut units)?;
    Ok(units)
}

fn measure_block(plan: &Plan, env: Env<'_>, entry: u32, depth: u32, units: &mut u64) -> R {
    if depth > MAX_NEST {
        return Err(Unsupported::Op);
    }
    for op in block_ops(plan, entry)? {
        *units += 1;
        if *units > MAX_UNITS {
            return Err(Unsupported::TooLarge);
        }
        match *op {
            Op::Run { bits, checks, .. } | Op::Cond { bits, checks, .. } => {
                *units += run_checks(plan, bits, checks)?.len() as u64;
            }
            Op::Unless { cond, .. } => *units += super::expr::measure(env, cond)?,
            Op::UnlessSlot { .. } | Op::Goto { .. } | Op::Return => {}
            Op::Array { count, entry, .. } => {
                if let Count::Expr(e) = count {
                    *units += super::expr::measure(env, e)?;
                }
                if entry == NO_ENTRY {
                    return Err(Unsupported::Op);
                }
                measure_block(plan, env, entry, depth + 1, units)?;
            }
            Op::RelativeList { max, entry, .. } => {
                if entry == NO_ENTRY || ladder_end(max).is_none() {
                    return Err(Unsupported::Op);
                }
                measure_block(plan, env, entry, depth + 1, units)?;
            }
            // Read here when whole bytes (a count that compiles), else a call to the
            // interpreter.
            Op::Node(id) => *units += super::aligned::measure(plan, env, id),
        }
        if *units > MAX_UNITS {
            return Err(Unsupported::TooLarge);
        }
    }
    Ok(())
}

/// A relative list's last rung for `max`: (its top, its width), when the indices it
/// makes stay far from overflowing.
fn ladder_end(max: i64) -> Option<(i64, u32)> {
    if !(0..1 << 40).contains(&max) {
        return None;
    }
    let top = max + 1;
    Some((top, crate::bits::int_width(126, top).unwrap_or(0)))
}

/// Builds the function of the block at `entry` into `func`: (data, length in bits,
/// start bit, slots, io) → the bit after it, or `FAILED`.
pub(crate) fn function(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    plan: &Plan,
    env: Env<'_>,
    entry: u32,
) -> R {
    build(func, fctx, config, plan, env, |l, done| l.block(entry, done))
}

/// Builds a function of the [`super::BlockFn`] signature into `func`, its reading
/// made by `middle` (which ends by jumping to the block it is given): the state loaded
/// from `io` before, the field limit checked and the state stored after.
pub(super) fn build(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    plan: &Plan,
    env: Env<'_>,
    middle: impl FnOnce(&mut Lower, Block) -> R,
) -> R {
    let mut b = FunctionBuilder::new(func, fctx);
    let start = b.create_block();
    b.append_block_params_for_function_params(start);
    b.switch_to_block(start);
    let call_conv = config.default_call_conv;
    let &[data, len, pos0, slots, io] = b.block_params(start) else {
        return Err(Unsupported::Op);
    };
    let (pos, count, seen) = (b.declare_var(I64), b.declare_var(I64), b.declare_var(I64));
    let trusted = MemFlagsData::trusted();
    let c0 = b.ins().uload32(trusted, io, 0);
    let s0 = b.ins().uload32(trusted, io, 4);
    b.def_var(pos, pos0);
    b.def_var(count, c0);
    b.def_var(seen, s0);
    let fail = b.create_block();
    let done = b.create_block();
    let stopped = b.create_block();
    let mut l = Lower {
        io,
        stopped,
        call_conv,
        b,
        plan,
        env,
        data,
        len,
        slots,
        pos,
        count,
        seen,
        fail,
        depth: 0,
    };
    middle(&mut l, done)?;
    let b = &mut l.b;
    b.switch_to_block(done);
    let c = b.use_var(count);
    let over = b
        .ins()
        .icmp_imm_s(IntCC::UnsignedGreaterThan, c, i64::from(env.limits.max_fields));
    let ok = b.create_block();
    b.ins().brif(over, fail, &[], ok, &[]);
    b.switch_to_block(ok);
    let (c, s, p) = (b.use_var(count), b.use_var(seen), b.use_var(pos));
    let c32 = b.ins().ireduce(I32, c);
    let s32 = b.ins().ireduce(I32, s);
    b.ins().store(trusted, c32, io, 0);
    b.ins().store(trusted, s32, io, 4);
    b.ins().return_(&[p]);
    b.switch_to_block(fail);
    let failed = b.ins().iconst(I64, super::FAILED as i64);
    b.ins().return_(&[failed]);
    b.switch_to_block(stopped);
    let stop = b.ins().iconst(I64, super::STOPPED as i64);
    b.ins().return_(&[stop]);
    l.b.seal_all_blocks();
    l.b.finalize(config);
    Ok(())
}

pub(super) struct Lower<'a, 'b> {
    pub(super) b: FunctionBuilder<'b>,
    pub(super) io: Value,
    /// Where a node the interpreter read stopped the packet.
    pub(super) stopped: Block,
    call_conv: CallConv,
    pub(super) plan: &'a Plan,
    pub(super) env: Env<'a>,
    pub(super) data: Value,
    pub(super) len: Value,
    pub(super) slots: Value,
    pub(super) pos: Variable,
    pub(super) count: Variable,
    pub(super) seen: Variable,
    pub(super) fail: Block,
    depth: u32,
}

/// The datagram: read only, never trapping (padded), perhaps unaligned.
fn data_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap().with_readonly()
}

impl Lower<'_, '_> {
    /// The ops of the block at `entry`, then on at `after`.
    pub(super) fn block(&mut self, entry: u32, after: Block) -> R {
        let ops = block_ops(self.plan, entry)?;
        let blocks: Vec<Block> = ops.iter().map(|_| self.b.create_block()).collect();
        self.b.ins().jump(blocks[0], &[]);
        let target = |to: u32| -> R<Block> {
            to.checked_sub(entry)
                .and_then(|d| blocks.get(d as usize))
                .copied()
                .ok_or(Unsupported::Op)
        };
        for (i, op) in ops.iter().enumerate() {
            self.b.switch_to_block(blocks[i]);
            let next = blocks.get(i + 1).copied().unwrap_or(after);
            match *op {
                Op::Return => {
                    self.b.ins().jump(after, &[]);
                    continue;
                }
                Op::Run { bits, fields, checks } => self.run(bits, fields, checks)?,
                Op::Cond {
                    slot,
                    negate,
                    bits,
                    fields,
                    checks,
                } => {
                    let v = self.slot(slot);
                    let taken = self.b.create_block();
                    if negate {
                        self.b.ins().brif(v, next, &[], taken, &[]);
                    } else {
                        self.b.ins().brif(v, taken, &[], next, &[]);
                    }
                    self.b.switch_to_block(taken);
                    self.run(bits, fields, checks)?;
                }
                Op::Unless { cond, to } => {
                    let v = self.expr(cond)?;
                    let to = target(to)?;
                    self.b.ins().brif(v, next, &[], to, &[]);
                    continue;
                }
                Op::UnlessSlot { slot, negate, to } => {
                    let v = self.slot(slot);
                    let to = target(to)?;
                    if negate {
                        self.b.ins().brif(v, to, &[], next, &[]);
                    } else {
                        self.b.ins().brif(v, next, &[], to, &[]);
                    }
                    continue;
                }
                Op::Goto { to } => {
                    let to = target(to)?;
                    self.b.ins().jump(to, &[]);
                    continue;
                }
                Op::Array {
                    count, entry, fixed, ..
                } => self.array(count, entry, fixed)?,
                Op::RelativeList { max, entry, .. } => self.list(max, entry)?,
                Op::Node(id) => match self.plan.aligned.get(&id) {
                    Some(&a) if super::aligned::compiles(self.env, a) => self.aligned(a)?,
                    _ => self.node(id),
                },
            }
            self.b.ins().jump(next, &[]);
        }
        Ok(())
    }

    /// Node `id` read by the interpreter (`Io::call`): the position, fields counted and
    /// roles handed over in `io` and taken back, the slots read again from memory after.
    fn node(&mut self, id: u32) {
        let t = MemFlagsData::trusted();
        let (io, b) = (self.io, &mut self.b);
        let (pos, count, seen) = (b.use_var(self.pos), b.use_var(self.count), b.use_var(self.seen));
        let c32 = b.ins().ireduce(I32, count);
        let s32 = b.ins().ireduce(I32, seen);
        b.ins().store(t, c32, io, 0);
        b.ins().store(t, s32, io, 4);
        b.ins().store(t, pos, io, 8);
        let cx = b.ins().load(I64, t, io, 16);
        let call = b.ins().load(I64, t, io, 24);
        let mut sig = Signature::new(self.call_conv);
        sig.params
            .extend([AbiParam::new(I64), AbiParam::new(I64), AbiParam::new(I32)]);
        sig.returns.push(AbiParam::new(I32));
        let sig = b.import_signature(sig);
        let node = b.ins().iconst(I32, i64::from(id as i32));
        let inst = b.ins().call_indirect(sig, call, &[cx, io, node]);
        let status = b.inst_results(inst)[0];
        let read = b.create_block();
        b.ins().brif(status, self.stopped, &[], read, &[]);
        b.switch_to_block(read);
        let c = b.ins().uload32(t, io, 0);
        let s = b.ins().uload32(t, io, 4);
        let p = b.ins().load(I64, t, io, 8);
        b.def_var(self.count, c);
        b.def_var(self.seen, s);
        b.def_var(self.pos, p);
    }

    /// Slot `s`'s value (0 past the slots, as the interpreter reads it).
    pub(super) fn slot(&mut self, s: u16) -> Value {
        if (s as usize) < self.env.slots {
            self.b
                .ins()
                .load(I64, MemFlagsData::trusted(), self.slots, i32::from(s) * 8)
        } else {
            self.b.ins().iconst(I64, 0)
        }
    }

    /// Slot `s` holds `v`; a role slot is marked as read (as `Exec::write_slot`).
    pub(super) fn write_slot(&mut self, s: u16, v: Value) {
        if (s as usize) < self.env.slots {
            self.b
                .ins()
                .store(MemFlagsData::trusted(), v, self.slots, i32::from(s) * 8);
        }
        if (s as usize) < ROLE_SLOTS {
            let seen = self.b.use_var(self.seen);
            let seen = self.b.ins().bor_imm_s(seen, 1i64 << (s & 31));
            self.b.def_var(self.seen, seen);
        }
    }

    pub(super) fn add_count(&mut self, n: i64) {
        let c = self.b.use_var(self.count);
        let c = self.b.ins().iadd_imm_s(c, n);
        self.b.def_var(self.count, c);
    }

    /// On to `ok` (a new block, switched to) unless `bad`, else the failure.
    pub(super) fn fail_if(&mut self, bad: Value) {
        let ok = self.b.create_block();
        self.b.ins().brif(bad, self.fail, &[], ok, &[]);
        self.b.switch_to_block(ok);
    }

    /// The 64-bit word at bit `bit`, shifted to it: at least 57 bits from there.
    pub(super) fn word_at(&mut self, bit: Value) -> Value {
        let byte = self.b.ins().ushr_imm_s(bit, 3);
        let addr = self.b.ins().iadd(self.data, byte);
        let w = self.b.ins().load(I64, data_flags(), addr, 0);
        let sh = self.b.ins().band_imm_s(bit, 7);
        self.b.ins().ushr(w, sh)
    }

    /// A run: one bounds check, its values read and range-checked (one branch for
    /// all), then its slots written.
    fn run(&mut self, bits: u32, fields: u32, range: (u32, u32)) -> R {
        let checks = run_checks(self.plan, bits, range)?;
        let pos = self.b.use_var(self.pos);
        let end = self.b.ins().iadd_imm_s(pos, i64::from(bits));
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, self.len);
        self.fail_if(past);
        let mut bad: Option<Value> = None;
        let mut writes = Vec::new();
        if checks.iter().any(|c| ranged(c) || c.slot != NO_SLOT) {
            let byte = self.b.ins().ushr_imm_s(pos, 3);
            let base = self.b.ins().iadd(self.data, byte);
            let sh = self.b.ins().band_imm_s(pos, 7);
            let mut word: Option<(u32, Value)> = None;
            for c in checks {
                if !ranged(c) && c.slot == NO_SLOT {
                    continue;
                }
                let width = 32 - c.mask.leading_zeros();
                let (k, w) = match word {
                    Some((k, w)) if k <= c.at / 8 && c.at - 8 * k + width <= WORD_BITS => (k, w),
                    _ => {
                        let k = c.at / 8;
                        let w = self.b.ins().load(I64, data_flags(), base, k as i32);
                        let w = self.b.ins().ushr(w, sh);
                        word = Some((k, w));
                        (k, w)
                    }
                };
                let v = self.b.ins().ushr_imm_s(w, i64::from(c.at - 8 * k));
                let v = self.b.ins().band_imm_s(v, i64::from(c.mask));
                if ranged(c) {
                    let o = self
                        .b
                        .ins()
                        .icmp_imm_s(IntCC::UnsignedGreaterThan, v, i64::from(c.max));
                    bad = Some(match bad {
                        Some(b) => self.b.ins().bor(b, o),
                        None => o,
                    });
                }
                if c.slot != NO_SLOT {
                    writes.push((c.slot, v, c.bias));
                }
            }
        }
        if let Some(bad) = bad {
            self.fail_if(bad);
        }
        for (s, v, bias) in writes {
            let v = self.b.ins().iadd_imm_s(v, bias);
            self.write_slot(s, v);
        }
        self.b.def_var(self.pos, end);
        self.add_count(i64::from(fields));
        Ok(())
    }

    /// An array: its count (at most the limit), its group, each element's group and
    /// body — one run without slots checked in one tight loop, anything else inlined
    /// in a loop that stops at the field limit.
    fn array(&mut self, count: Count, entry: u32, fixed: bool) -> R {
        let max = self.env.limits.max_elements;
        let n = match count {
            Count::Const(n) if n > max => {
                self.b.ins().jump(self.fail, &[]);
                let dead = self.b.create_block();
                self.b.switch_to_block(dead);
                return Ok(());
            }
            Count::Const(n) => self.b.ins().iconst(I64, n as i64),
            Count::Expr(e) => {
                let v = self.expr(e)?;
                let zero = self.b.ins().iconst(I64, 0);
                let n = self.b.ins().smax(v, zero);
                let over = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, n, max as i64);
                self.fail_if(over);
                n
            }
        };
        self.add_count(1);
        if entry == NO_ENTRY {
            return Err(Unsupported::Op);
        }
        if fixed
            && let Some(&[Op::Run { bits, fields, checks }, Op::Return]) =
                self.plan.ops.get(entry as usize..entry as usize + 2)
            && max
                .checked_mul(u64::from(bits).max(u64::from(fields) + 1))
                .is_some_and(|t| t < 1 << 60)
        {
            return self.fixed(n, bits, fields, checks);
        }
        if self.depth >= MAX_NEST {
            return Err(Unsupported::Op);
        }
        let left = self.b.declare_var(I64);
        self.b.def_var(left, n);
        let (head, elem, end, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let l = self.b.use_var(left);
        self.b.ins().brif(l, elem, &[], exit, &[]);
        self.b.switch_to_block(elem);
        let l = self.b.ins().iadd_imm_s(l, -1);
        self.b.def_var(left, l);
        self.add_count(1);
        self.depth += 1;
        self.block(entry, end)?;
        self.depth -= 1;
        self.b.switch_to_block(end);
        self.over_fields(head);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// To the failure past the field limit, else to `on`.
    fn over_fields(&mut self, on: Block) {
        let c = self.b.use_var(self.count);
        let max = i64::from(self.env.limits.max_fields);
        let over = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, c, max);
        self.b.ins().brif(over, self.fail, &[], on, &[]);
    }

    /// `n` elements of one run each, no slot: one bounds check and one field count for
    /// all, the range checks in a loop.
    fn fixed(&mut self, n: Value, bits: u32, fields: u32, range: (u32, u32)) -> R {
        let checks: Vec<Check> = run_checks(self.plan, bits, range)?
            .iter()
            .filter(|c| ranged(c))
            .copied()
            .collect();
        let pos = self.b.use_var(self.pos);
        let span = self.b.ins().imul_imm_s(n, i64::from(bits));
        let end = self.b.ins().iadd(pos, span);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, self.len);
        self.fail_if(past);
        let total = self.b.ins().imul_imm_s(n, i64::from(fields) + 1);
        let c = self.b.use_var(self.count);
        let c = self.b.ins().iadd(c, total);
        let over = self.b.ins().icmp_imm_s(
            IntCC::UnsignedGreaterThan,
            c,
            i64::from(self.env.limits.max_fields),
        );
        self.fail_if(over);
        if !checks.is_empty() {
            let (head, body, exit) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            let el = self.b.append_block_param(head, I64);
            self.b.ins().jump(head, &[pos.into()]);
            self.b.switch_to_block(head);
            let more = self.b.ins().icmp(IntCC::UnsignedLessThan, el, end);
            self.b.ins().brif(more, body, &[], exit, &[]);
            self.b.switch_to_block(body);
            let mut bad: Option<Value> = None;
            for ch in &checks {
                let at = self.b.ins().iadd_imm_s(el, i64::from(ch.at));
                let w = self.word_at(at);
                let v = self.b.ins().band_imm_s(w, i64::from(ch.mask));
                let o = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::UnsignedGreaterThan, v, i64::from(ch.max));
                bad = Some(match bad {
                    Some(b) => self.b.ins().bor(b, o),
                    None => o,
                });
            }
            if let Some(bad) = bad {
                self.fail_if(bad);
            }
            let next = self.b.ins().iadd_imm_s(el, i64::from(bits));
            self.b.ins().jump(head, &[next.into()]);
            self.b.switch_to_block(exit);
        }
        self.b.def_var(self.pos, end);
        self.b.def_var(self.count, c);
        Ok(())
    }

    /// A relative list: its group, its first index, then elements (each followed by the
    /// next index) until the index `max`, within the element and field limits.
    fn list(&mut self, max: i64, entry: u32) -> R {
        let (top, top_width) = ladder_end(max).ok_or(Unsupported::Op)?;
        if entry == NO_ENTRY || self.depth >= MAX_NEST {
            return Err(Unsupported::Op);
        }
        self.add_count(1);
        let (previous, done) = (self.b.declare_var(I64), self.b.declare_var(I64));
        let first = self.b.ins().iconst(I64, -1);
        let index = self.relative_next(first, max, top, top_width);
        let (elem, end, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let zero = self.b.ins().iconst(I64, 0);
        self.b.def_var(done, zero);
        self.b.def_var(previous, index);
        let last = self.b.ins().icmp_imm_s(IntCC::Equal, index, max);
        self.b.ins().brif(last, exit, &[], elem, &[]);
        self.b.switch_to_block(elem);
        self.depth += 1;
        self.block(entry, end)?;
        self.depth -= 1;
        self.b.switch_to_block(end);
        let d = self.b.use_var(done);
        let d = self.b.ins().iadd_imm_s(d, 1);
        self.b.def_var(done, d);
        let many =
            self.b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThan, d, self.env.limits.max_elements as i64);
        let c = self.b.use_var(self.count);
        let over = self.b.ins().icmp_imm_s(
            IntCC::UnsignedGreaterThan,
            c,
            i64::from(self.env.limits.max_fields),
        );
        let bad = self.b.ins().bor(many, over);
        self.fail_if(bad);
        let p = self.b.use_var(previous);
        let index = self.relative_next(p, max, top, top_width);
        self.b.def_var(previous, index);
        let last = self.b.ins().icmp_imm_s(IntCC::Equal, index, max);
        self.b.ins().brif(last, exit, &[], elem, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The index after `previous` (the article's ladder: a flag for +1, else flags
    /// choosing a rung, then the difference), as `exec/planned.rs`'s `relative_next`
    /// reads it; to the failure when out of bits or past `max`. Ends in a new block,
    /// where the index is returned.
    fn relative_next(&mut self, previous: Value, max: i64, top: i64, top_width: u32) -> Value {
        let pos = self.b.use_var(self.pos);
        let word = self.word_at(pos);
        let (plus, ladder, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let index = self.b.append_block_param(join, I64);
        let flag = self.b.ins().band_imm_s(word, 1);
        self.b.ins().brif(flag, plus, &[], ladder, &[]);
        // +1: one flag.
        self.b.switch_to_block(plus);
        let p1 = self.b.ins().iadd_imm_s(pos, 1);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, p1, self.len);
        let at_max = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, previous, max);
        let bad = self.b.ins().bor(past, at_max);
        self.fail_if(bad);
        self.b.def_var(self.pos, p1);
        self.add_count(3);
        let next = self.b.ins().iadd_imm_s(previous, 1);
        self.b.ins().jump(join, &[next.into()]);
        // A rung: k zero flags after the first before a set one (5: none set).
        self.b.switch_to_block(ladder);
        let flags = self.b.ins().ushr_imm_s(word, 1);
        let flags = self.b.ins().bor_imm_s(flags, 1 << 5);
        let k = self.b.ins().ctz(flags);
        let k2 = self.b.ins().iadd_imm_s(k, 2);
        let six = self.b.ins().iconst(I64, 6);
        let at = self.b.ins().umin(k2, six);
        let four = self.b.ins().iconst(I64, 4);
        let lo = self.b.ins().ishl(four, k);
        let lo = self.b.ins().iadd_imm_s(lo, -2);
        let is_top = self.b.ins().icmp_imm_s(IntCC::Equal, k, 5);
        let top_w = self.b.ins().iconst(I64, i64::from(top_width));
        let width = self.b.ins().select(is_top, top_w, k2);
        let top_v = self.b.ins().iconst(I64, top);
        let hi = self.b.ins().ishl_imm_s(lo, 1);
        let hi = self.b.ins().iadd_imm_s(hi, 1);
        let hi = self.b.ins().select(is_top, top_v, hi);
        let start = self.b.ins().iadd(pos, at);
        let end = self.b.ins().iadd(start, width);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, self.len);
        self.fail_if(past);
        let w = self.word_at(start);
        let one = self.b.ins().iconst(I64, 1);
        let mask = self.b.ins().ishl(one, width);
        let mask = self.b.ins().iadd_imm_s(mask, -1);
        let raw = self.b.ins().band(w, mask);
        let d = self.b.ins().iadd(lo, raw);
        self.b.def_var(self.pos, end);
        let c = self.b.use_var(self.count);
        let c = self.b.ins().iadd(c, at);
        let c = self.b.ins().iadd_imm_s(c, 3);
        self.b.def_var(self.count, c);
        let next = self.b.ins().iadd(previous, d);
        let over_hi = self.b.ins().icmp(IntCC::SignedGreaterThan, d, hi);
        let over_max = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, next, max);
        let bad = self.b.ins().bor(over_hi, over_max);
        self.fail_if(bad);
        self.b.ins().jump(join, &[next.into()]);
        self.b.switch_to_block(join);
        index
    }
}
