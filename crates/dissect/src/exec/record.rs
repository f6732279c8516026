//! Writing the field tree: a field pushed, a group opened and closed, an element, and a
//! fault located at a field path and bit.

use super::*;

impl<'p> Exec<'p> {
    pub(super) fn path(&self, out: &Dissection, parent: u32, last: Label) -> String {
        let mut labels = vec![last];
        labels.extend(ancestors(out, parent));
        render_path(self.program, &labels)
    }

    pub(super) fn fault(
        &self,
        out: &mut Dissection,
        kind: FaultKind,
        field: String,
        bit: u64,
        reason: String,
    ) -> Step {
        out.fault = Some(Fault {
            kind,
            field,
            bit,
            reason,
        });
        Err(Stop)
    }

    /// Records a read error as the packet's fault, located at the field being read.
    pub(super) fn read_fault(&self, out: &mut Dissection, e: BitError, parent: u32, label: Label) -> Stop {
        let kind = FaultKind::from_error(&e.kind);
        let field = self.path(out, parent, label);
        let _ = self.fault(out, kind, field, e.at, e.kind.to_string());
        Stop
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn push(
        &self,
        out: &mut Dissection,
        node: NodeId,
        label: Label,
        kind: &'static str,
        parent: u32,
        depth: u16,
        bit_offset: u64,
        bit_len: u64,
        raw: u64,
        value: Value,
    ) -> Result<u32, Stop> {
        let n = self.count.get() + 1;
        self.count.set(n);
        if n > self.program.limits.max_fields {
            let field = self.path(out, parent, label);
            let _ = self.fault(
                out,
                FaultKind::Limit,
                field,
                bit_offset,
                format!(
                    "more than {} fields in one packet",
                    self.program.limits.max_fields
                ),
            );
            return Err(Stop);
        }
        if !self.record {
            return Ok(ROOT);
        }
        out.fields.push(Field {
            node,
            label,
            kind,
            parent,
            depth,
            bit_offset,
            bit_len,
            raw,
            value,
        });
        Ok(out.fields.len() as u32 - 1)
    }

    /// Stops the packet: a hard limit was reached while reading `label`.
    pub(super) fn limit(
        &self,
        out: &mut Dissection,
        parent: u32,
        label: Label,
        bit: u64,
        reason: String,
    ) -> Step {
        let field = self.path(out, parent, label);
        self.fault(out, FaultKind::Limit, field, bit, reason)
    }

    /// Opens element `i` of a list or array.
    pub(super) fn element(
        &self,
        out: &mut Dissection,
        id: NodeId,
        group: u32,
        i: u32,
        depth: u16,
        at: u64,
    ) -> Result<u32, Stop> {
        self.push(
            out,
            id,
            Label::Index(i),
            "element",
            group,
            depth,
            at,
            0,
            0,
            Value::None,
        )
    }

    pub(super) fn close(&self, out: &mut Dissection, group: u32, r: &BitReader, value: Value) {
        if let Some(f) = out.fields.get_mut(group as usize) {
            f.bit_len = r.bits_read() - f.bit_offset;
            if !matches!(value, Value::None) {
                f.value = value;
            }
        }
    }

    /// A group field for the node at `h`, closed by the caller.
    #[inline(always)]
    pub(super) fn open(&self, out: &mut Dissection, h: &Here, value: Value) -> Result<u32, Stop> {
        self.push(out, h.id, h.label, h.kind, h.parent, h.depth, h.at, 0, 0, value)
    }

    #[cold]
    pub(super) fn division_by_zero(&self, out: &mut Dissection, parent: u32, label: Label, bit: u64) -> Stop {
        let field = self.path(out, parent, label);
        let _ = self.fault(
            out,
            FaultKind::Expression,
            field,
            bit,
            "division by zero in the field's expression".into(),
        );
        Stop
    }
}
