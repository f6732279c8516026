//! Lists written: counted or terminated lists of elements, relative lists' index
//! ladders, and the keys that keep a keyed list's entries distinct.

use super::*;

impl PacketWriter<'_> {
    /// A list up to its end condition: a random number of elements, then the element
    /// whose first field ends it.
    pub(super) fn list(
        &mut self,
        w: &mut Out,
        rng: &mut Rng,
        end: gpcap_dissect::program::Expr,
        body: Block,
        name: &str,
        roles: &Roles,
    ) -> Result<(), GenError> {
        let p = self.p;
        let target = rng.below(self.scale.min(p.limits.max_elements - 1) + 1);
        let ids = p.block(body);
        let Some((&first, rest)) = ids.split_first() else {
            return Ok(());
        };
        for k in 0..=target {
            let want_end = k == target;
            self.list_key(w, rng, first, end, want_end, name)?;
            if want_end {
                break;
            }
            for &nid in rest {
                self.node(w, rng, nid, roles)?;
            }
        }
        Ok(())
    }

    /// A relative list: elements at increasing indexes below `max`, mostly close
    /// together, then the index that ends it.
    pub(super) fn relative_list(
        &mut self,
        w: &mut Out,
        rng: &mut Rng,
        max: i64,
        body: Block,
        roles: &Roles,
    ) -> Result<(), GenError> {
        let n = rng.below(self.scale.min(max as u64) + 1) as i64;
        let mut previous = -1i64;
        let mut index = -1i64;
        for k in 0..n {
            // Mostly close together, sometimes far; always leave room for the rest.
            let room = max - 1 - index - (n - 1 - k);
            if room < 1 {
                break;
            }
            let gap = if rng.chance(0.7) {
                rng.range(1, 5)
            } else {
                rng.range(1, 200)
            };
            index += gap.min(room);
            self.relative_index(w, &mut previous, index, max)?;
            self.block(w, rng, body, roles)?;
        }
        self.relative_index(w, &mut previous, max, max)?;
        Ok(())
    }

    /// Writes a list element's first field so that the end condition is (or is not) met.
    pub(super) fn list_key(
        &mut self,
        w: &mut Out,
        rng: &mut Rng,
        id: NodeId,
        end: gpcap_dissect::program::Expr,
        want_end: bool,
        list: &str,
    ) -> Result<(), GenError> {
        let p = self.p;
        let node = &p.nodes[id as usize];
        let (min, max) = match node.kind {
            Kind::Int { min, max } => (min, max),
            Kind::Bits(n) => (0, (1i64 << n) - 1),
            Kind::Bool => (0, 1),
            _ => return Err(GenError::ListEnd(list.to_string())),
        };
        let mut pick = None;
        for attempt in 0..64 {
            let v = if attempt < 16 {
                rng.range(min, max)
            } else {
                (min + attempt - 16).min(max)
            };
            self.set(id, v);
            if (eval(p.expr(end), &self.slots).unwrap_or(0) != 0) == want_end {
                pick = Some(v);
                break;
            }
        }
        let Some(v) = pick else {
            return Err(GenError::ListEnd(list.to_string()));
        };
        self.leaf(w, id, &node.kind, Raw([v as u64, 0, 0, 0]))?;
        Ok(())
    }

    pub(super) fn relative_index(
        &mut self,
        w: &mut Out,
        previous: &mut i64,
        index: i64,
        max: i64,
    ) -> BitResult<()> {
        let before = w.tracer.len();
        let mut current = index;
        serialize_relative_index(w, previous, &mut current, max)?;
        for p in &w.tracer[before..] {
            match *p {
                Prim::Bits { at, bits, value } => self.leaves.push((at, bits as u64, value as u64)),
                Prim::Int { at, min, max, value } => {
                    self.leaves
                        .push((at, int_width(min, max).unwrap_or(0) as u64, (value - min) as u64))
                }
                _ => {}
            }
        }
        Ok(())
    }
}
