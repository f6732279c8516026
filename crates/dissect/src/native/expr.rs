//! Conditions and counts (`expr.rs`'s postfix code) lowered to IR: the evaluation stack
//! resolved while compiling, so each operator is an instruction or three on values in
//! registers. Code whose stack would underflow or overflow (which `eval` answers with 0)
//! or that reads the position does not compile.

use super::Env;
use super::lower::{Lower, Unsupported};
use crate::expr::{BinOp, MAX_STACK, Op};
use crate::program::Expr;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{InstBuilder, Value};

/// The code of `e`, when its stack stays within bounds and it reads no position.
fn code<'a>(env: &Env<'a>, e: Expr) -> Result<&'a [Op], Unsupported> {
    let code = env
        .code
        .get(e.start as usize..(e.start as usize).saturating_add(e.len as usize))
        .ok_or(Unsupported::Op)?;
    let mut sp = 0usize;
    for op in code {
        match op {
            Op::Remaining(_) => return Err(Unsupported::Op),
            Op::Const(_) | Op::Slot(_) if sp >= MAX_STACK => return Err(Unsupported::Op),
            Op::Const(_) | Op::Slot(_) => sp += 1,
            Op::Not | Op::Neg | Op::BitNot if sp == 0 => return Err(Unsupported::Op),
            Op::Not | Op::Neg | Op::BitNot => {}
            Op::Bin(_) if sp < 2 => return Err(Unsupported::Op),
            Op::Bin(_) => sp -= 1,
        }
    }
    if sp == 0 {
        return Err(Unsupported::Op);
    }
    Ok(code)
}

/// Instructions `e` lowers to, about (the budget's unit), when it compiles.
pub(super) fn measure(env: Env<'_>, e: Expr) -> Result<u64, Unsupported> {
    Ok(code(&env, e)?.len() as u64)
}

impl Lower<'_, '_> {
    /// The value of `e`; a division by zero goes to the failure (the interpreter then
    /// says where).
    pub(super) fn expr(&mut self, e: Expr) -> Result<Value, Unsupported> {
        let env = self.env;
        let mut stack: Vec<Value> = Vec::with_capacity(8);
        for op in code(&env, e)? {
            let v = match *op {
                Op::Const(c) => self.b.ins().iconst(I64, c),
                Op::Slot(s) => self.slot(s),
                Op::Remaining(_) => return Err(Unsupported::Op),
                Op::Not | Op::Neg | Op::BitNot => {
                    let a = stack.pop().ok_or(Unsupported::Op)?;
                    match *op {
                        Op::Not => {
                            let z = self.b.ins().icmp_imm_s(IntCC::Equal, a, 0);
                            self.b.ins().uextend(I64, z)
                        }
                        Op::Neg => self.b.ins().ineg(a),
                        _ => self.b.ins().bnot(a),
                    }
                }
                Op::Bin(bin) => {
                    let b = stack.pop().ok_or(Unsupported::Op)?;
                    let a = stack.pop().ok_or(Unsupported::Op)?;
                    self.binary(bin, a, b)
                }
            };
            stack.push(v);
        }
        stack.pop().ok_or(Unsupported::Op)
    }

    /// `a op b` as `BinOp::apply` computes it: wrapping, shifts out of range as there,
    /// division by zero failing, `i64::MIN / -1` wrapping instead of trapping.
    fn binary(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        use BinOp::*;
        let cmp = |l: &mut Self, cc: IntCC| {
            let c = l.b.ins().icmp(cc, a, b);
            l.b.ins().uextend(I64, c)
        };
        match op {
            Mul => self.b.ins().imul(a, b),
            Div | Rem => {
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                self.fail_if(zero);
                let minus_one = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                let one = self.b.ins().iconst(I64, 1);
                let safe = self.b.ins().select(minus_one, one, b);
                if op == Div {
                    let q = self.b.ins().sdiv(a, safe);
                    let neg = self.b.ins().ineg(a);
                    self.b.ins().select(minus_one, neg, q)
                } else {
                    // a % 1 is 0, as a.wrapping_rem(-1).
                    self.b.ins().srem(a, safe)
                }
            }
            Add => self.b.ins().iadd(a, b),
            Sub => self.b.ins().isub(a, b),
            Shl => {
                let within = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, b, 64);
                let shifted = self.b.ins().ishl(a, b);
                let zero = self.b.ins().iconst(I64, 0);
                self.b.ins().select(within, shifted, zero)
            }
            Shr => {
                let zero = self.b.ins().iconst(I64, 0);
                let top = self.b.ins().iconst(I64, 63);
                let s = self.b.ins().smax(b, zero);
                let s = self.b.ins().smin(s, top);
                self.b.ins().sshr(a, s)
            }
            BitAnd => self.b.ins().band(a, b),
            BitXor => self.b.ins().bxor(a, b),
            BitOr => self.b.ins().bor(a, b),
            Lt => cmp(self, IntCC::SignedLessThan),
            Le => cmp(self, IntCC::SignedLessThanOrEqual),
            Gt => cmp(self, IntCC::SignedGreaterThan),
            Ge => cmp(self, IntCC::SignedGreaterThanOrEqual),
            Eq => cmp(self, IntCC::Equal),
            Ne => cmp(self, IntCC::NotEqual),
            And | Or => {
                let x = self.b.ins().icmp_imm_s(IntCC::NotEqual, a, 0);
                let y = self.b.ins().icmp_imm_s(IntCC::NotEqual, b, 0);
                let r = if op == And {
                    self.b.ins().band(x, y)
                } else {
                    self.b.ins().bor(x, y)
                };
                self.b.ins().uextend(I64, r)
            }
        }
    }
}
