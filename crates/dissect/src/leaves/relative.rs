//! A relative list walked: each element's index ladder (its flags and difference),
//! then its body, until the sentinel that ends the list.

use super::*;

impl Walker<'_> {
    /// A relative list's elements: the index ladder, then the body, until `max`. An
    /// element's path is its list's, so its fields are logged under the list's context
    /// `list`; the sentinel's index is the list's `end`, its flags moved under it.
    pub(super) fn relative_list(&mut self, list: u32, max: i64, entry: u32, depth: u32, ladder: u32) -> Walk {
        let limit = self.p.limits.max_elements;
        let node = match self.log.ctxs.get(list as usize) {
            Some(&(_, Label::Node(n))) => n,
            _ => u32::MAX,
        };
        let mut previous = -1i64;
        let mut i = 0u64;
        loop {
            if i > limit {
                return Err(GiveUp);
            }
            let first = self.log.recs.len();
            let (index, at) = self.relative_index(list, node, previous, max, ladder)?;
            previous = index;
            if index == max {
                let end = self.ctx(list, Label::Part("end"));
                let index = at.map(|_| self.ctx(end, Label::Part("index")));
                let log = &mut *self.log;
                for r in log.recs.get_mut(first..).unwrap_or(&mut []) {
                    match (r.slot, index) {
                        (GENERAL, Some(index)) => {
                            if let Some(l) = log.leaves.get_mut(r.value as usize) {
                                // Its own slot too (7: the ladder's last is free).
                                l.ctx = index;
                                l.slot += 1;
                            }
                        }
                        (GENERAL, None) => {}
                        // A slot of its own (the `end` variant): its row is not
                        // the elements' flags', and would be resolved twice a list.
                        _ => {
                            r.ctx = end;
                            r.slot |= 1;
                        }
                    }
                }
                return Ok(());
            }
            let element = match self.log.elements {
                true => self.element(list, node, i, index, ladder),
                false => list,
            };
            self.ops(entry, element, depth + 1)?;
            i += 1;
        }
    }

    /// Element `i`'s own context, its index `index` logged in it as the tree holds it.
    fn element(&mut self, list: u32, node: NodeId, i: u64, index: i64, ladder: u32) -> u32 {
        let element = self.ctx(list, Label::Index(i as u32));
        self.log.push(Logged {
            ctx: element,
            label: Label::Part("index"),
            node,
            kind: "relative-index",
            bit_offset: self.pos,
            bits: 0,
            raw: 0,
            value: Value::Int(index),
            valued: true,
            slot: ladder + 7,
        });
        element
    }

    /// An element's index, its flags logged compact under `list` (their path: the
    /// list's `index.` and the flag), its difference (of a width the rung says) under
    /// a context of its own, returned (None: none read).
    pub(super) fn relative_index(
        &mut self,
        list: u32,
        node: NodeId,
        previous: i64,
        max: i64,
        ladder: u32,
    ) -> Walk<(i64, Option<u32>)> {
        let mut at: Option<u32> = None;
        let diff = if self.flag(list, ladder)? {
            1
        } else {
            let mut range = (126, max + 1);
            for (k, rung) in RELATIVE_INDEX_LADDER.into_iter().enumerate() {
                if self.flag(list, ladder + 1 + k as u32)? {
                    range = rung;
                    break;
                }
            }
            let (lo, hi) = range;
            let width = crate::bits::int_width(lo, hi).unwrap_or(0);
            let start = self.pos;
            let raw = self.bits(width)?;
            let d = lo + i64::from(raw);
            if d > hi {
                return Err(GiveUp);
            }
            let index = self.ctx(list, Label::Part("index"));
            at = Some(index);
            self.log.push(Logged {
                ctx: index,
                label: Label::Part("difference"),
                node,
                kind: "int",
                bit_offset: start,
                bits: u64::from(width),
                raw: u64::from(raw),
                value: Value::Int(d),
                valued: true,
                slot: ladder + 6,
            });
            d
        };
        let index = previous + diff;
        if index > max {
            return Err(GiveUp);
        }
        Ok((index, at))
    }

    /// One flag of the index ladder, at ladder slot `slot`.
    pub(super) fn flag(&mut self, list: u32, slot: u32) -> Walk<bool> {
        let v = self.bits(1)?;
        self.rec(compact_slot(slot, 0, 0), list, i64::from(v), 1);
        Ok(v != 0)
    }
}
