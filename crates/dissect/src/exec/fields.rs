//! The interpreter's nodes: a block, a node (traced or not), a bit-level leaf through
//! `prims.rs`, slots, alignment, conditions and counts, and every kind that is not a
//! leaf, array or byte-level word.

use super::*;

impl<'p> Exec<'p> {
    pub(super) fn block(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        b: Block,
        parent: u32,
        depth: u16,
    ) -> Step {
        let p = self.program;
        if !self.record
            && let Some(entry) = p.plan.entry(b)
        {
            let (at, count) = (r.bits_read(), self.count.get());
            if self.run_plan(r, out, entry, parent, depth)? {
                return Ok(());
            }
            // Read the block again node by node: it says where and why.
            *r = BitReader::at(r.data(), at);
            self.count.set(count);
        }
        for &id in p.block(b) {
            self.node(r, out, id, parent, depth)?;
        }
        Ok(())
    }

    pub(super) fn bits(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        n: u32,
        parent: u32,
        label: Label,
    ) -> Result<u32, Stop> {
        r.read_bits(n).map_err(|e| self.read_fault(out, e, parent, label))
    }

    pub(super) fn align(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        node: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let at = r.bits_read();
        let label = Label::Part("align");
        let pad = if self.program.params.msb {
            r.read_align_msb()
        } else {
            r.read_align()
        }
        .map_err(|e| self.read_fault(out, e, parent, label))?;
        if pad > 0 {
            self.push(
                out,
                node,
                label,
                "align",
                parent,
                depth,
                at,
                pad as u64,
                0,
                Value::UInt(0),
            )?;
        }
        Ok(())
    }

    /// An expression's value; a division by zero stops the packet, located at the
    /// field whose expression it is.
    #[inline(always)]
    pub(super) fn eval_at(
        &self,
        out: &mut Dissection,
        e: Expr,
        parent: u32,
        label: Label,
        bit: u64,
    ) -> Result<i64, Stop> {
        let code = self.program.expr(e);
        let v = if self.program.params.remaining {
            crate::expr::eval_remaining(code, self.slots, self.total_bits.saturating_sub(bit))
        } else {
            eval(code, self.slots)
        };
        match v {
            Ok(v) => Ok(v),
            Err(_) => Err(self.division_by_zero(out, parent, label, bit)),
        }
    }

    pub(super) fn count(&self, out: &mut Dissection, c: Count, h: &Here) -> Result<u64, Stop> {
        match c {
            Count::Const(n) => Ok(n),
            Count::Expr(e) => Ok(self.eval_at(out, e, h.parent, h.label, h.at)?.max(0) as u64),
        }
    }

    /// One field: leaves through the primitive table, everything else here.
    #[inline(always)]
    pub(super) fn node(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let p = self.program;
        if p.params.tracks() {
            return self.node_tracked(r, out, id, parent, depth);
        }
        self.node_read(r, out, id, parent, depth)
    }

    /// A field whose place matters beyond its value: the checksum's, or one the
    /// conversation remembers.
    #[inline(never)]
    fn node_tracked(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let node = &self.program.nodes[id as usize];
        let (role, remember, stream, start) = (node.role, node.remember, node.stream, r.bits_read());
        self.node_read(r, out, id, parent, depth)?;
        let len = r.bits_read() - start;
        if role == Some(Role::Crc) {
            out.crc_at = Some(start);
        }
        match (role, stream) {
            (Some(Role::Ack), Some(si)) => self.stream_ack(out, id, si),
            (Some(r), si) if r.acks_more() => self.ack_item(out, (id, parent, start), r, si)?,
            (_, Some(si)) => self.stream_seq(out, id, si),
            // A message's own send time (KCP's PUSH `ts`), else the datagram's.
            (Some(Role::SendTime), _) => match out.messages.last_mut() {
                Some(m) => m.send_time = self.node_value(id),
                None => out.send_time = self.node_value(id),
            },
            (Some(Role::AckTime), _) => self.echo(out, id),
            _ => {}
        }
        if role == Some(Role::FragmentData) && !out.messages.is_empty() {
            self.message_fragment(out, id, parent, start, len)?;
        }
        if let Some(i) = remember
            && start.is_multiple_of(8)
            && len.is_multiple_of(8)
            && len <= 64
        {
            out.learnt.push((i, start, len));
        }
        Ok(())
    }

    #[inline(always)]
    fn node_read(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let p = self.program;
        let node = &p.nodes[id as usize];
        let start = r.bits_read();
        if !self.record {
            match self.leaf_untraced(r, &node.kind, node.slot) {
                Some(true) => return Ok(()),
                Some(false) => *r = BitReader::at(r.data(), start),
                None => return self.node_general(r, out, id, parent, depth),
            }
        } else if prims::field_count(&node.kind) == 0 {
            return self.node_general(r, out, id, parent, depth);
        }
        self.leaf_traced(r, out, id, &node.kind, Label::Node(id), parent, depth, start)
    }

    /// Validation: reads a leaf untraced, counts its fields and sets what expressions
    /// see. `None`: not a leaf; `Some(false)`: a fault or the field limit, to be read
    /// again traced to say where.
    #[inline(always)]
    fn leaf_untraced(&mut self, r: &mut BitReader, kind: &Kind, slot: Option<u16>) -> Option<bool> {
        let mut raw = Raw::default();
        match prims::serialize_leaf(r, kind, &mut raw) {
            Ok(0) => None,
            Ok(fields) => {
                let n = self.count.get() + fields;
                if n > self.program.limits.max_fields {
                    return Some(false);
                }
                self.count.set(n);
                if let Some(s) = slot {
                    self.write_slot(s, raw.0[0] as i64);
                }
                Some(true)
            }
            Err(_) => Some(false),
        }
    }

    /// A leaf outside `node` (the end check, `node_general`'s callers).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn leaf(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        kind: &Kind,
        label: Label,
        parent: u32,
        depth: u16,
    ) -> Step {
        let start = r.bits_read();
        if !self.record {
            let slot = self.program.nodes.get(id as usize).and_then(|n| n.slot);
            if self.leaf_untraced(r, kind, slot) == Some(true) {
                return Ok(());
            }
            *r = BitReader::at(r.data(), start);
        }
        self.leaf_traced(r, out, id, kind, label, parent, depth, start)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn leaf_traced(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        kind: &Kind,
        label: Label,
        parent: u32,
        depth: u16,
        start: u64,
    ) -> Step {
        let mut raw = Raw::default();
        // Without a fault no trace is needed: a one-field leaf spans what was read, a
        // group's parts lie one after the other.
        let fields = prims::field_count(kind);
        if fields == 1 || prims::is_group(kind) {
            let mut quick = BitReader::at(r.data(), start);
            if prims::serialize_leaf(&mut quick, kind, &mut raw).is_ok() {
                *r = quick;
                if fields == 1 {
                    let (bits, value) = prims::single(kind, raw.0[0], self.record);
                    self.push(
                        out,
                        id,
                        label,
                        kind.name(),
                        parent,
                        depth,
                        start,
                        r.bits_read() - start,
                        bits,
                        value,
                    )?;
                    self.set_slot(id, raw.0[0] as i64);
                    return Ok(());
                }
                let group = self.open_leaf_group(out, id, kind, label, parent, depth, start)?;
                let mut pushed = Ok(0);
                let value = prims::parts_of(kind, &raw, start, self.record, &mut |f: &prims::LeafField| {
                    if pushed.is_ok() {
                        pushed = self.push_leaf_field(out, id, f, label, parent, depth, group);
                    }
                });
                pushed?;
                if let Some(g) = group {
                    self.close(out, g, r, value);
                }
                return Ok(());
            }
        }
        self.prims.clear();
        let mut s = ReadStream::from_reader(BitReader::at(r.data(), start), &mut *self.prims);
        let res = prims::serialize_leaf(&mut s, kind, &mut raw);
        *r = s.into_reader();
        let group = self.open_leaf_group(out, id, kind, label, parent, depth, start)?;
        let prims_read = std::mem::take(self.prims);
        let mut pushed = Ok(0);
        let group_value = prims::fields(kind, &prims_read, self.record, &mut |f: &prims::LeafField| {
            if pushed.is_ok() {
                pushed = self.push_leaf_field(out, id, f, label, parent, depth, group);
            }
        });
        *self.prims = prims_read;
        pushed?;
        if let Some(g) = group {
            self.close(out, g, r, group_value);
        }
        match res {
            Ok(_) => {
                self.set_slot(id, raw.0[0] as i64);
                Ok(())
            }
            Err(e) => {
                let (flabel, fparent) = match (prims::failed_part(kind, self.prims, &e), group) {
                    (Some("align"), _) => (Label::Part("align"), parent),
                    (Some(name), Some(g)) => (Label::Part(name), g),
                    _ => (label, parent),
                };
                Err(self.read_fault(out, e, fparent, flabel))
            }
        }
    }

    /// The group field of a grouped leaf (vector, quaternion, …), closed by the caller.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn open_leaf_group(
        &self,
        out: &mut Dissection,
        id: NodeId,
        kind: &Kind,
        label: Label,
        parent: u32,
        depth: u16,
        start: u64,
    ) -> Result<Option<u32>, Stop> {
        if !prims::is_group(kind) {
            return Ok(None);
        }
        let g = self.push(
            out,
            id,
            label,
            kind.name(),
            parent,
            depth,
            start,
            0,
            0,
            Value::None,
        )?;
        Ok(Some(g))
    }

    /// One field a leaf made: padding beside the leaf, a part under its group, or the
    /// leaf itself.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push_leaf_field(
        &self,
        out: &mut Dissection,
        id: NodeId,
        f: &prims::LeafField,
        label: Label,
        parent: u32,
        depth: u16,
        group: Option<u32>,
    ) -> Result<u32, Stop> {
        let (label, parent, depth) = match (f.part, group) {
            (Some("align"), _) => (Label::Part("align"), parent, depth),
            (Some(name), Some(g)) => (Label::Part(name), g, depth + 1),
            _ => (label, parent, depth),
        };
        self.push(
            out,
            id,
            label,
            f.kind,
            parent,
            depth,
            f.bit_offset,
            f.bit_len,
            f.raw,
            f.value,
        )
    }

    #[inline]
    pub(super) fn slot(&self, s: u16) -> i64 {
        self.slots.get(s as usize).copied().unwrap_or(0)
    }

    #[inline]
    pub(super) fn set_slot(&mut self, id: NodeId, v: i64) {
        if let Some(s) = self.program.nodes.get(id as usize).and_then(|n| n.slot) {
            self.write_slot(s, v);
        }
    }

    /// Slot `s` holds `v`; a role slot is marked as read on this packet's path.
    #[inline(always)]
    pub(super) fn write_slot(&mut self, s: u16, v: i64) {
        self.seen |= u32::from((s as usize) < ROLE_SLOTS) << (s & 31);
        if let Some(x) = self.slots.get_mut(s as usize) {
            *x = v;
        }
    }

    /// Everything that is not a leaf primitive: one method each.
    #[inline(never)]
    fn node_general(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
    ) -> Step {
        let p = self.program;
        let node = &p.nodes[id as usize];
        // Built only for what records a group or reads bytes.
        let here = |r: &BitReader| Here {
            id,
            label: Label::Node(id),
            kind: node.kind.name(),
            parent,
            depth,
            at: r.bits_read(),
        };
        match &node.kind {
            Kind::Align => self.align(r, out, id, parent, depth),
            Kind::Bytes(c) => self.bytes(r, out, &here(r), *c),
            Kind::Magic(want) => self.magic(r, out, &here(r), want),
            Kind::String { max } => self.string(r, out, &here(r), *max),
            Kind::Rest { body } => self.rest_of_datagram(r, out, &here(r), *body),
            Kind::LeUint(c) => self.le_uint(r, out, &here(r), *c),
            Kind::Msb(m) => self.msb(r, out, &here(r), *m),
            Kind::ByteInt { count, big, signed } => self.byte_int(r, out, &here(r), *count, *big, *signed),
            Kind::Varint { zigzag } => self.varint(r, out, &here(r), *zigzag),
            Kind::Text { len } => self.text(r, out, &here(r), *len),
            Kind::CString { max } => self.cstring(r, out, &here(r), *max),
            Kind::Derived(e) => {
                let at = r.bits_read();
                let v = self.eval_at(out, *e, parent, Label::Node(id), at)?;
                self.set_slot(id, v);
                self.push(
                    out,
                    id,
                    Label::Node(id),
                    "derived",
                    parent,
                    depth,
                    at,
                    0,
                    v as u64,
                    Value::Int(v),
                )?;
                Ok(())
            }
            Kind::Struct { body } => {
                let g = self.open(out, &here(r), Value::None)?;
                self.block(r, out, *body, g, depth + 1)?;
                self.close(out, g, r, Value::None);
                Ok(())
            }
            Kind::Array { count, body } => self.array(r, out, &here(r), *count, *body),
            Kind::List { end, body } => self.list(r, out, &here(r), *end, *body),
            Kind::RelativeList { max, body } => self.relative_list(r, out, &here(r), *max, *body),
            Kind::Inline { body } => self.block(r, out, *body, parent, depth),
            // A datagram kind's messages, read where its body says.
            Kind::Messages { .. } => self.messages(r, out, id),
            Kind::If {
                cond,
                then,
                otherwise,
            } => {
                let b = if self.eval_at(out, *cond, parent, Label::Node(id), r.bits_read())? != 0 {
                    *then
                } else {
                    *otherwise
                };
                self.block(r, out, b, parent, depth)
            }
            leaf => self.leaf(r, out, id, leaf, Label::Node(id), parent, depth),
        }
    }

    /// `rest name`: align, then the rest of the datagram (fragment data).
    fn rest_of_datagram(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, body: Block) -> Step {
        self.align(r, out, h.id, h.parent, h.depth)?;
        let at = r.bits_read();
        let b = r
            .read_rest()
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        let (offset, len) = ((at / 8) as usize, b.len());
        self.rest.set(Some((offset, len, 0)));
        self.push_bytes(out, h, at, len)?;
        if body.len > 0 {
            // What the bytes start with, read in place: fields under the rest field.
            let group = if self.record {
                out.fields.len() as u32 - 1
            } else {
                ROOT
            };
            let mut inner = BitReader::at(r.data(), at);
            self.block(&mut inner, out, body, group, h.depth + 1)?;
            let lead = (inner.bits_read() - at).div_ceil(8) as usize;
            self.rest.set(Some((offset, len, lead)));
        }
        Ok(())
    }
}
