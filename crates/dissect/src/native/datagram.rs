//! A whole datagram in one function (`plan::Datagram`): the header's plan inlined, the
//! body its type role names called (each body is a compiled block of its own), the end
//! check and no byte after it — what `Exec::packet` does for a datagram that is not a
//! fragment, without going back to the plan executor between the header and the body.

use super::lower::{Lower, R};
use crate::plan::{Aligned, Datagram, NO_SLOT};
use crate::program::Role;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{Block, FuncRef, InstBuilder, MemFlagsData};
use cranelift_frontend::Switch;

impl Lower<'_, '_> {
    /// The datagram read, then on to `done`; `bodies[t]` calls type `t`'s compiled body.
    pub(super) fn datagram(&mut self, d: Datagram, bodies: &[Option<FuncRef>], done: Block) -> R {
        let (header_done, body_done) = (self.b.create_block(), self.b.create_block());
        let header = self.plan.header;
        self.block(header, header_done)?;
        self.b.switch_to_block(header_done);
        // The type as `Exec::packet` takes it: the role's slot as 32 bits when the header
        // read it, else 0.
        let ty = self.role(Role::Type);
        if let Some(f) = d.fragment_type {
            let fragment = self.b.ins().icmp_imm_s(IntCC::Equal, ty, i64::from(f));
            self.fail_if(fragment);
        }
        let mut switch = Switch::new();
        let mut calls = Vec::new();
        for (t, body) in bodies.iter().enumerate() {
            if let Some(f) = *body {
                let call = self.b.create_block();
                switch.set_entry(t as u128, call);
                calls.push((call, f));
            } else if t < 64 && d.empty >> t & 1 == 1 {
                switch.set_entry(t as u128, body_done);
            }
        }
        switch.emit(&mut self.b, ty, self.fail);
        for (call, f) in calls {
            self.b.switch_to_block(call);
            self.call_body(f);
            self.b.ins().jump(body_done, &[]);
        }
        self.b.switch_to_block(body_done);
        if let Some(magic) = d.end_check {
            self.aligned(Aligned::Check { magic, slot: NO_SLOT })?;
        }
        // No whole byte after the end.
        let pos = self.b.use_var(self.pos);
        let left = self.b.ins().isub(self.len, pos);
        let trailing = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, left, 8);
        self.fail_if(trailing);
        self.b.ins().jump(done, &[]);
        Ok(())
    }

    /// Role `role`'s value as `Exec::role(…).unwrap_or(0) as u32` gives it.
    fn role(&mut self, role: Role) -> cranelift_codegen::ir::Value {
        let Some(s) = role.slot() else {
            return self.b.ins().iconst(I64, 0);
        };
        let v = self.slot(s);
        let v = self.b.ins().ireduce(I32, v);
        let v = self.b.ins().uextend(I64, v);
        let seen = self.b.use_var(self.seen);
        let bit = self.b.ins().band_imm_s(seen, 1i64 << (s & 31));
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().select(bit, v, zero)
    }

    /// A compiled body called at the position, the state handed over in `io` and taken
    /// back; its failure or stop is this function's.
    fn call_body(&mut self, f: FuncRef) {
        let t = MemFlagsData::trusted();
        let (count, seen, pos) = (
            self.b.use_var(self.count),
            self.b.use_var(self.seen),
            self.b.use_var(self.pos),
        );
        let c32 = self.b.ins().ireduce(I32, count);
        let s32 = self.b.ins().ireduce(I32, seen);
        self.b.ins().store(t, c32, self.io, 0);
        self.b.ins().store(t, s32, self.io, 4);
        let args = [self.data, self.len, pos, self.slots, self.io];
        let inst = self.b.ins().call(f, &args);
        let end = self.b.inst_results(inst)[0];
        let failed = self.b.ins().icmp_imm_s(IntCC::Equal, end, super::FAILED as i64);
        self.fail_if(failed);
        let stopped = self.b.ins().icmp_imm_s(IntCC::Equal, end, super::STOPPED as i64);
        let read = self.b.create_block();
        self.b.ins().brif(stopped, self.stopped, &[], read, &[]);
        self.b.switch_to_block(read);
        let c = self.b.ins().uload32(t, self.io, 0);
        let s = self.b.ins().uload32(t, self.io, 4);
        self.b.def_var(self.count, c);
        self.b.def_var(self.seen, s);
        self.b.def_var(self.pos, end);
    }
}
