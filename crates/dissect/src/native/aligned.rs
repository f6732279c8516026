//! Whole-byte nodes read by compiled code instead of a call to the interpreter
//! (`plan::Aligned`): zero pad bits to the next byte, then bytes counted or compared —
//! `align`, `bytes`, `string`, `check`, counted as the interpreter counts their fields.

use super::Env;
use super::lower::{Lower, R};
use crate::plan::{Aligned, NO_SLOT, Plan};
use crate::program::Count;
use cranelift_codegen::ir::InstBuilder;
use cranelift_codegen::ir::Value;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;

/// Whether compiled code reads `a` itself: a count it can compute.
pub(super) fn compiles(env: Env<'_>, a: Aligned) -> bool {
    match a {
        Aligned::Bytes(Count::Expr(e)) => super::expr::measure(env, e).is_ok(),
        _ => true,
    }
}

/// Units node `id` lowers to: its count's, when compiled code reads it itself.
pub(super) fn measure(plan: &Plan, env: Env<'_>, id: u32) -> u64 {
    match plan.aligned.get(&id) {
        Some(&Aligned::Bytes(Count::Expr(e))) => super::expr::measure(env, e).unwrap_or(0),
        _ => 0,
    }
}

impl Lower<'_, '_> {
    /// Node `a` read in place: the position, field count and slot as the interpreter
    /// leaves them; to the failure when it would fault.
    pub(super) fn aligned(&mut self, a: Aligned) -> R {
        match a {
            Aligned::Align => self.align(),
            Aligned::Bytes(count) => {
                let n = match count {
                    Count::Const(n) => self.b.ins().iconst(I64, n.min(i64::MAX as u64) as i64),
                    Count::Expr(e) => {
                        let v = self.expr(e)?;
                        let zero = self.b.ins().iconst(I64, 0);
                        self.b.ins().smax(v, zero)
                    }
                };
                self.align();
                self.bytes(n);
                self.add_count(1);
            }
            Aligned::String { width, top } => {
                let pos = self.b.use_var(self.pos);
                let end = self.b.ins().iadd_imm_s(pos, i64::from(width));
                let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, self.len);
                self.fail_if(past);
                let w = self.word_at(pos);
                let mask = u32::MAX.checked_shr(32 - width).unwrap_or(0);
                let n = self.b.ins().band_imm_s(w, i64::from(mask));
                let over = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::UnsignedGreaterThan, n, i64::from(top));
                self.fail_if(over);
                self.b.def_var(self.pos, end);
                self.add_count(2);
                self.align();
                self.bytes(n);
                self.add_count(1);
            }
            Aligned::Check { magic, slot } => {
                self.align();
                let pos = self.b.use_var(self.pos);
                let end = self.b.ins().iadd_imm_s(pos, 32);
                let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, self.len);
                self.fail_if(past);
                let w = self.word_at(pos);
                let got = self.b.ins().band_imm_s(w, i64::from(u32::MAX));
                let wrong = self.b.ins().icmp_imm_s(IntCC::NotEqual, got, i64::from(magic));
                self.fail_if(wrong);
                self.b.def_var(self.pos, end);
                self.add_count(1);
                if slot != NO_SLOT {
                    let v = self.b.ins().iconst(I64, i64::from(magic));
                    self.write_slot(slot, v);
                }
            }
        }
        Ok(())
    }

    /// Zero bits to the next byte; a field when there are any. A datagram is whole
    /// bytes, so they are always there.
    fn align(&mut self) {
        let pos = self.b.use_var(self.pos);
        let neg = self.b.ins().ineg(pos);
        let pad = self.b.ins().band_imm_s(neg, 7);
        let w = self.word_at(pos);
        let one = self.b.ins().iconst(I64, 1);
        let bit = self.b.ins().ishl(one, pad);
        let mask = self.b.ins().iadd_imm_s(bit, -1);
        let set = self.b.ins().band(w, mask);
        self.fail_if(set);
        let end = self.b.ins().iadd(pos, pad);
        self.b.def_var(self.pos, end);
        let some = self.b.ins().icmp_imm_s(IntCC::NotEqual, pad, 0);
        let some = self.b.ins().uextend(I64, some);
        let c = self.b.use_var(self.count);
        let c = self.b.ins().iadd(c, some);
        self.b.def_var(self.count, c);
    }

    /// `n` whole bytes from the (aligned) position, when the datagram holds them.
    fn bytes(&mut self, n: Value) {
        let pos = self.b.use_var(self.pos);
        let room = self.b.ins().isub(self.len, pos);
        let room = self.b.ins().ushr_imm_s(room, 3);
        let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, n, room);
        self.fail_if(past);
        let bits = self.b.ins().ishl_imm_s(n, 3);
        let end = self.b.ins().iadd(pos, bits);
        self.b.def_var(self.pos, end);
    }
}
