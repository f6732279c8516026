//! Arrays, lists (ended by an index), relative lists and their index ladder, and a
//! flag that guards a field.

use super::*;

impl<'p> Exec<'p> {
    /// `array name COUNT { … }`.
    #[inline(always)]
    pub(super) fn array(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        count: Count,
        body: Block,
    ) -> Step {
        let n = self.count(out, count, h)?;
        let g = self.open(out, h, Value::UInt(n))?;
        let max = self.program.limits.max_elements;
        if n > max {
            return self.limit(
                out,
                h.parent,
                h.label,
                h.at,
                format!("array of {n} elements (limit {max})"),
            );
        }
        for i in 0..n as u32 {
            let e = self.element(out, h.id, g, i, h.depth + 1, r.bits_read())?;
            self.block(r, out, body, e, h.depth + 2)?;
            self.close(out, e, r, Value::None);
        }
        self.close(out, g, r, Value::None);
        Ok(())
    }

    /// `list name END { first … }`: elements until END holds after an element's first
    /// field.
    #[inline(always)]
    pub(super) fn list(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        end: Expr,
        body: Block,
    ) -> Step {
        let p = self.program;
        let g = self.open(out, h, Value::None)?;
        let ids = p.block(body);
        let mut i = 0u32;
        loop {
            if i as u64 >= p.limits.max_elements {
                let reason = format!("list longer than {} elements", p.limits.max_elements);
                return self.limit(out, h.parent, h.label, r.bits_read(), reason);
            }
            let eat = r.bits_read();
            let e = self.element(out, h.id, g, i, h.depth + 1, eat)?;
            let Some((&first, rest)) = ids.split_first() else {
                break;
            };
            self.node(r, out, first, e, h.depth + 2)?;
            let done = self.eval_at(out, end, e, Label::Index(i), r.bits_read())? != 0;
            if !done {
                for &nid in rest {
                    self.node(r, out, nid, e, h.depth + 2)?;
                }
            }
            self.close(out, e, r, Value::None);
            if done {
                break;
            }
            if r.bits_read() == eat {
                return self.limit(
                    out,
                    g,
                    Label::Index(i),
                    eat,
                    "list element consumed no bits".into(),
                );
            }
            i += 1;
        }
        self.close(out, g, r, Value::UInt(i as u64));
        Ok(())
    }

    /// `relative-list name MAX { … }`: the article's ascending object indices, ending
    /// at MAX.
    #[inline(always)]
    pub(super) fn relative_list(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        max: i64,
        body: Block,
    ) -> Step {
        let limit = self.program.limits.max_elements;
        let g = self.open(out, h, Value::None)?;
        let mut previous = -1i64;
        let mut i = 0u32;
        loop {
            if i as u64 > limit {
                return self.limit(
                    out,
                    h.parent,
                    h.label,
                    r.bits_read(),
                    format!("more than {limit} objects"),
                );
            }
            let e = self.element(out, h.id, g, i, h.depth + 1, r.bits_read())?;
            let index = self.relative_index(r, out, h.id, e, h.depth + 2, previous, max)?;
            previous = index;
            if index == max {
                // The sentinel is not an element: fold it into the list as `end`.
                if let Some(f) = out.fields.get_mut(e as usize) {
                    f.label = Label::Part("end");
                    f.kind = "sentinel";
                }
                self.close(out, e, r, Value::Int(index));
                break;
            }
            self.block(r, out, body, e, h.depth + 2)?;
            self.close(out, e, r, Value::None);
            i += 1;
        }
        self.close(out, g, r, Value::UInt(i as u64));
        Ok(())
    }

    /// The relative index ladder: flags and one int, grouped as `index`.
    #[allow(clippy::too_many_arguments)]
    fn relative_index(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
        previous: i64,
        max: i64,
    ) -> Result<i64, Stop> {
        const RUNGS: [&str; 5] = ["upto_5", "upto_13", "upto_29", "upto_61", "upto_125"];
        let at = r.bits_read();
        let g = self.push(
            out,
            id,
            Label::Part("index"),
            "relative-index",
            parent,
            depth,
            at,
            0,
            0,
            Value::None,
        )?;
        let diff = if self.flag(r, out, id, g, depth + 1, "plus_one")? {
            1
        } else {
            let mut range = (126, max + 1);
            for (k, rung) in RELATIVE_INDEX_LADDER.into_iter().enumerate() {
                if self.flag(r, out, id, g, depth + 1, RUNGS[k])? {
                    range = rung;
                    break;
                }
            }
            let (lo, hi) = range;
            let dat = r.bits_read();
            let dl = Label::Part("difference");
            let width = crate::bits::int_width(lo, hi).unwrap_or(0);
            let raw = self.bits(r, out, width, g, dl)?;
            let d = lo + raw as i64;
            self.push(
                out,
                id,
                dl,
                "int",
                g,
                depth + 1,
                dat,
                width as u64,
                raw as u64,
                Value::Int(d),
            )?;
            if d > hi {
                let e = BitError::new(
                    ErrorKind::OutOfRange {
                        value: d,
                        min: lo,
                        max: hi,
                    },
                    dat,
                );
                return Err(self.read_fault(out, e, g, dl));
            }
            d
        };
        let index = previous + diff;
        self.close(out, g, r, Value::Int(index));
        if index > max {
            let e = BitError::new(
                ErrorKind::OutOfRange {
                    value: index,
                    min: previous + 1,
                    max,
                },
                at,
            );
            return Err(self.read_fault(out, e, parent, Label::Part("index")));
        }
        Ok(index)
    }

    #[inline(always)]
    fn flag(
        &self,
        r: &mut BitReader,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        depth: u16,
        name: &'static str,
    ) -> Result<bool, Stop> {
        if !self.record {
            let n = self.count.get() + 1;
            if n <= self.program.limits.max_fields
                && let Ok(v) = r.read_bits(1)
            {
                self.count.set(n);
                return Ok(v != 0);
            }
        }
        let at = r.bits_read();
        let v = self.bits(r, out, 1, parent, Label::Part(name))?;
        self.push(
            out,
            id,
            Label::Part(name),
            "bool",
            parent,
            depth,
            at,
            1,
            v as u64,
            Value::Bool(v != 0),
        )?;
        Ok(v != 0)
    }
}
