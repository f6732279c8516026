//! A datagram from the top: the protocol id, the header and its roles, then the body
//! of its type (by the plan when it can, else interpreted), messages, the end check.

use super::*;

impl<'p> Exec<'p> {
    pub(super) fn packet(&mut self, r: &mut BitReader, out: &mut Dissection) -> Step {
        let p = self.program;
        // Validation by one compiled function when the protocol has one; a datagram it
        // cannot decide (a fragment, a fault) is read below from the start.
        if let Some(whole) = self.datagram_native(r, out) {
            if whole? {
                return self.whole_read(out);
            }
            *r = BitReader::at(r.data(), 0);
            self.count.set(0);
            self.seen = 0;
            p.plan.clear_read_slots(self.slots);
        }
        if self.record || !self.planned(r, out, p.plan.header)? {
            self.block(r, out, p.header, ROOT, 0)?;
        }
        out.crc = self.role(Role::Crc).map(|v| v as u32);
        if let Some(rule) = &p.params.rule
            && rule.stand_in.is_some()
        {
            let at = r.bits_read();
            out.crc_stand_in = match rule.when {
                Some(e) => self.eval_at(out, e, ROOT, Label::Part("stand-in-when"), at)? != 0,
                None => true,
            };
        }
        out.sequence = self.role(Role::Sequence).map(|v| v as u64);
        let ty = self.role(Role::Type).unwrap_or(0) as u32;
        out.packet_type = Some(ty);
        if let Some(node) = p.messages.filter(|_| !p.kinds) {
            out.packet_type = p.datagram_type;
            let res = self.messages(r, out, node);
            self.acks(out);
            res?;
            return self.protocol_id(out);
        }
        let fragment = match (p.fragment, p.fragment_when) {
            (Some(f), Some(when)) => {
                let at = r.bits_read();
                (self.eval_at(out, when, ROOT, Label::Part("fragment"), at)? != 0).then_some(f)
            }
            (Some(f), None) => (ty == FRAGMENT_TYPE).then_some(f),
            (None, _) => None,
        };
        if let Some(frag) = fragment {
            out.packet_type = Some(p.fragment_type);
            let res = self.block(r, out, frag, ROOT, 0);
            self.acks(out);
            res?;
            let raw = self.role(Role::FragmentCount).unwrap_or(0) as u32;
            let count = match p.params.format.count_encoding {
                CountEncoding::Count => raw,
                CountEncoding::CountMinusOne => raw + 1,
            };
            let data = self.rest.get().unwrap_or(((r.bits_read() / 8) as usize, 0, 0));
            out.fragment = Some(FragmentInfo {
                id: self.role(Role::FragmentId).unwrap_or(0) as u32,
                count,
                data_offset: data.0,
                data_len: data.1,
                lead: data.2,
            });
            return Ok(());
        }
        let res = self.body(r, out, ty);
        // A datagram kind's body may carry the sequence.
        if out.sequence.is_none() {
            out.sequence = self.role(Role::Sequence).map(|v| v as u64);
        }
        self.acks(out);
        res?;
        self.protocol_id(out)
    }

    /// What a datagram read by one compiled function tells: its roles, read after it
    /// as they would be after the header (`plan::Datagram` holds only protocols where
    /// they are the same), and the protocol id.
    fn whole_read(&mut self, out: &mut Dissection) -> Step {
        out.crc = self.role(Role::Crc).map(|v| v as u32);
        out.sequence = self.role(Role::Sequence).map(|v| v as u64);
        out.packet_type = Some(self.role(Role::Type).unwrap_or(0) as u32);
        self.acks(out);
        self.protocol_id(out)
    }

    /// An id sent in the clear must be the definition's: otherwise the datagram is
    /// another protocol's (or another game's), located at the id field.
    #[inline(always)]
    fn protocol_id(&self, out: &mut Dissection) -> Step {
        let p = self.program;
        let (Some(v), Some(id)) = (self.role(Role::ProtocolId), p.params.protocol_id) else {
            return Ok(());
        };
        if v as u64 == id.value {
            return Ok(());
        }
        self.other_protocol(out, v, id)
    }

    /// The id read is not the definition's: a fault at the id field.
    #[inline(never)]
    fn other_protocol(&self, out: &mut Dissection, v: i64, id: crate::validate::ProtocolId) -> Step {
        let p = self.program;
        let (field, bit) = out
            .fields
            .iter()
            .enumerate()
            .find(|(_, f)| matches!(f.label, Label::Node(n) if p.nodes[n as usize].role == Some(Role::ProtocolId)))
            .map(|(i, f)| (path_of(p, out, i), f.bit_offset))
            .unwrap_or_else(|| ("protocol id".into(), 0));
        self.fault(
            out,
            FaultKind::Check,
            field,
            bit,
            format!("protocol id 0x{:X} is not the definition's {id}", v as u64),
        )
    }

    fn acks(&self, out: &mut Dissection) {
        out.ack = self.role(Role::Ack).map(|v| v as u32);
        out.ack_bits = self.role(Role::AckBits).map(|v| v as u32);
    }

    /// The value of a role, when this packet's path read a field with it.
    #[inline]
    pub(super) fn role(&self, role: Role) -> Option<i64> {
        let s = role.slot()?;
        (self.seen >> s & 1 == 1).then(|| self.slot(s))
    }

    fn body(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32) -> Step {
        let p = self.program;
        let entry = p.plan.bodies.get(ty as usize).copied().unwrap_or(plan::NO_ENTRY);
        if self.record || !self.planned(r, out, entry)? {
            self.body_read(r, out, ty)?;
        }
        if let Some(magic) = p.params.end_check
            && (self.record || !self.end_check_fast(r, magic))
        {
            self.leaf(
                r,
                out,
                u32::MAX,
                &Kind::Check { magic },
                Label::Part("end_check"),
                ROOT,
                0,
            )?;
        }
        if r.bits_remaining() >= 8 {
            let bytes = r.bits_remaining() / 8;
            let at = r.bits_read().div_ceil(8) * 8;
            return self.fault(
                out,
                FaultKind::TrailingBytes,
                "end_check".into(),
                at,
                format!("{bytes} trailing bytes after the end of the packet"),
            );
        }
        Ok(())
    }

    /// A top-level block's plan run straight from its entry (validation): true when it
    /// passed, false when there is none or it failed (the reader put back where it was,
    /// for the interpreter).
    #[inline(always)]
    fn planned(&mut self, r: &mut BitReader, out: &mut Dissection, entry: u32) -> Result<bool, Stop> {
        if entry == plan::NO_ENTRY {
            return Ok(false);
        }
        let (at, count) = (r.bits_read(), self.count.get());
        if self.run_plan(r, out, entry, ROOT, 0)? {
            return Ok(true);
        }
        *r = BitReader::at(r.data(), at);
        self.count.set(count);
        Ok(false)
    }

    /// A reassembled message read as message type `ty`'s body, to its last byte.
    pub(super) fn message_alone(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32) -> Step {
        let p = self.program;
        let Some(def) = p.packet(ty) else {
            let reason = format!("no message is defined for type {ty}");
            return self.fault(out, FaultKind::UnknownType, "message".into(), 0, reason);
        };
        self.block(r, out, def.body, ROOT, 0)?;
        if r.bits_remaining() >= 8 {
            let bytes = r.bits_remaining() / 8;
            let at = r.bits_read().div_ceil(8) * 8;
            let reason = format!("{bytes} trailing bytes after the message");
            return self.fault(out, FaultKind::TrailingBytes, def.name.clone(), at, reason);
        }
        Ok(())
    }

    /// A packet's body by its definition (the interpreter, or a fault for a type without one).
    fn body_read(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32) -> Step {
        let p = self.program;
        let Some(def) = p.packet(ty) else {
            let at = out
                .fields
                .iter()
                .find(|f| matches!(f.label, Label::Node(n) if p.nodes[n as usize].role == Some(Role::Type)))
                .map(|f| f.bit_offset)
                .unwrap_or(0);
            let name = p
                .nodes
                .iter()
                .find(|n| n.role == Some(Role::Type))
                .map(|n| n.name.clone());
            return self.fault(
                out,
                FaultKind::UnknownType,
                name.unwrap_or_else(|| "type".into()),
                at,
                format!("no packet is defined for type {ty}"),
            );
        };
        self.block(r, out, def.body, ROOT, 0)
    }

    /// The end check without the interpreter, for validation: zero padding to the byte,
    /// then the magic. False: the interpreter reads it again and says why.
    #[inline(always)]
    fn end_check_fast(&self, r: &mut BitReader, magic: u32) -> bool {
        let (data, at) = (r.data(), r.bits_read());
        let pad = r.align_bits();
        let pos = at + pad as u64;
        let fields = self.count.get() + 1 + u32::from(pad > 0);
        if pos + 32 > r.len_bits()
            || BitReader::peek_at(data, at, pad) != 0
            || BitReader::peek_at(data, pos, 32) != magic
            || fields > self.program.limits.max_fields
        {
            return false;
        }
        self.count.set(fields);
        *r = BitReader::at(data, pos + 32);
        true
    }
}
