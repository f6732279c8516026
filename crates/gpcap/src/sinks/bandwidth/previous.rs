//! Each flow and type's previous packet, for the deltas: its values by row and
//! occurrence, bounded in flows and in values.

use super::*;

/// One flow and type's previous packet: each row's values by occurrence, in one
/// contiguous array (a row's range grows by moving it to the end, the holes left behind
/// compacted away): a `Vec` per row was a pointer to chase, and a line to miss, per
/// field of every packet.
///
/// A value is kept in 8 bytes, its low 64 bits: a row's values are all of one leaf
/// kind, so they are all within `i64` or all unsigned; a row that has held one past
/// `i64::MAX` reads its values back as unsigned (`wide`). Sixteen bytes a value made the
/// kept values most of `--bits`' memory.
#[derive(Debug, Clone, Default)]
pub(super) struct Previous {
    /// By row (its index among its type's): (start in `values`, values, room, wide:
    /// it has held a value past `i64::MAX`).
    pub(super) rows: Vec<(u32, u32, u32, bool)>,
    pub(super) values: Vec<u64>,
    /// Room the rows hold in `values` (the rest is holes).
    pub(super) room: usize,
}

/// Room for values past this many times those kept is given back (compacted).
const SPARE_ROOM: usize = 8;

impl Previous {
    /// Asks for every value at once, before the packet's fields read them one by one:
    /// a flow's values were last touched a few hundred packets ago, and waiting for
    /// them field after field was a sixth of `--bits` (1 GB, 128 clients).
    #[inline]
    pub(super) fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            // The values kept, not the room after them (a big packet's room stays).
            for &(start, len, ..) in &self.rows {
                let Some(row) = self.values.get(start as usize..(start + len) as usize) else {
                    continue;
                };
                for line in row.chunks(4) {
                    // SAFETY: a prefetch is a hint; it reads nothing and faults on nothing.
                    unsafe {
                        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                        _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
                    }
                }
            }
        }
    }

    /// Row `row`'s value `ord`, replaced by `v` (None: not kept, nothing replaced).
    #[inline(always)]
    pub(super) fn replace(&mut self, row: usize, ord: u32, v: i128) -> Option<i128> {
        let &(start, len, _, wide) = self.rows.get(row)?;
        if ord >= len {
            return None;
        }
        let x = self.values.get_mut((start + ord) as usize)?;
        let old = std::mem::replace(x, v as u64);
        if v > i128::from(i64::MAX) {
            self.rows[row].3 = true;
        }
        Some(if wide {
            i128::from(old)
        } else {
            i128::from(old as i64)
        })
    }

    /// Row `row`'s value `ord` (None: not kept).
    #[cfg(test)]
    pub(super) fn get(&self, row: usize, ord: u32) -> Option<i128> {
        let &(start, len, _, wide) = self.rows.get(row)?;
        let x = *self.values.get((start + ord) as usize).filter(|_| ord < len)?;
        Some(if wide { i128::from(x) } else { i128::from(x as i64) })
    }

    /// Keeps `v` after row `row`'s values (a third of a scene's values: a packet with
    /// more objects than its flow's previous one).
    #[inline(always)]
    pub(super) fn push(&mut self, row: usize, v: i128) {
        let (start, len) = match self.rows.get(row) {
            Some(&(start, len, room, _)) if len < room => (start, len),
            _ => self.make_room(row),
        };
        if let Some(x) = self.values.get_mut((start + len) as usize) {
            *x = v as u64;
            self.rows[row].1 += 1;
            if v > i128::from(i64::MAX) {
                self.rows[row].3 = true;
            }
        }
    }

    /// Room for one more value of row `row` (a row not met yet, or full): its (start,
    /// values).
    #[cold]
    pub(super) fn make_room(&mut self, row: usize) -> (u32, u32) {
        if self.rows.len() <= row {
            self.rows.resize(row + 1, (0, 0, 0, false));
        }
        let (_, len, room, _) = self.rows[row];
        if len == room {
            self.grow(row);
        }
        let (start, len, ..) = self.rows[row];
        (start, len)
    }

    /// Twice the room for row `row`, at the end (holes compacted first when they are
    /// most of the array).
    pub(super) fn grow(&mut self, row: usize) {
        if self.values.len() > 2 * self.room + 64 {
            self.compact();
        }
        let (start, len, room, wide) = self.rows[row];
        let more = (room * 2).max(4);
        let at = self.values.len();
        self.values.resize(at + more as usize, 0);
        self.values
            .copy_within(start as usize..(start + len) as usize, at);
        self.rows[row] = (at as u32, len, more, wide);
        self.room += (more - room) as usize;
    }

    /// The rows' ranges moved together in place, holes gone, each row's room fitted to
    /// the values it holds now: a packet with many occurrences once no longer keeps its
    /// room in every flow for the rest of the capture. The array is given back to the
    /// allocator only when far larger than what is left (a new one each time was a
    /// reallocation on the rows' next growth).
    pub(super) fn compact(&mut self) {
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        order.sort_unstable_by_key(|&r| self.rows[r].0);
        let mut at = 0u32;
        for r in order {
            let (start, len, room, wide) = self.rows[r];
            // A power of two no larger than the room it had (rooms are powers of two
            // from 4): each row lands at or before its place, its room within the old.
            let fit = if room == 0 {
                0
            } else {
                len.next_power_of_two().max(4).min(room)
            };
            self.values
                .copy_within(start as usize..(start + len) as usize, at as usize);
            self.rows[r] = (at, len, fit, wide);
            at += fit;
        }
        self.values.truncate(at as usize);
        self.room = at as usize;
        if self.values.capacity() > 4 * self.values.len() + 256 {
            self.values.shrink_to(2 * self.values.len() + 64);
        }
    }
}

impl Bandwidth {
    /// Where flow `flow`'s previous packet of `type_id` is kept: past the cap of kept
    /// states, a new flow and type gets none (and no deltas).
    #[inline]
    pub(super) fn state_of(&mut self, flow: u32, type_id: u32) -> Option<u32> {
        let types = self.type_dirs.len();
        let dense = (flow as usize) < DENSE_FLOWS && (type_id as usize) < types;
        let at = flow as usize * types + type_id as usize;
        let found = if dense {
            if self.flow_states.len() <= at {
                self.flow_states.resize((flow as usize + 1) * types, NO_STATE);
            }
            self.flow_states[at]
        } else {
            self.state_ids.get(&(flow, type_id)).copied().unwrap_or(NO_STATE)
        };
        if found != NO_STATE {
            return Some(found);
        }
        if self.states.len() >= MAX_STATES {
            return None;
        }
        let i = self.states.len() as u32;
        self.states.push(Previous::default());
        if dense {
            self.flow_states[at] = i;
        } else {
            self.state_ids.insert((flow, type_id), i);
        }
        Some(i)
    }

    /// The delta of a value against the same occurrence of its row in the previous
    /// packet of the flow and type, which it then replaces.
    pub(super) fn delta(
        &mut self,
        prev: &mut Previous,
        tracked_flow: bool,
        row: usize,
        (value, quantized): (i128, bool),
    ) {
        // Rows of one packet type, by their index within it.
        let local = self.rows[row].local;
        let ord = self.ordinal(local);
        if self.rows[row].values_mut(quantized).is_none() {
            return;
        }
        let seen = self.previous(prev, tracked_flow, local, ord, value);
        if let Some(s) = self.rows[row].values_mut(quantized) {
            s.delta.see(seen);
        }
    }

    /// The occurrence in this packet of the row at `local` among its type's, from 0.
    #[inline(always)]
    pub(super) fn ordinal(&mut self, local: u32) -> u32 {
        let local = local as usize;
        if self.ordinals.len() <= local {
            self.ordinals.resize(local + 1, 0);
        }
        let ord = self.ordinals[local];
        if ord == 0 {
            self.touched.push(local as u32);
        }
        self.ordinals[local] += 1;
        ord
    }

    /// `value`, occurrence `ord` of the row at `local`, against the same occurrence in
    /// the previous packet `prev`, which it replaces (or joins, while there is room).
    #[inline(always)]
    pub(super) fn previous(
        &mut self,
        prev: &mut Previous,
        tracked_flow: bool,
        local: u32,
        ord: u32,
        value: i128,
    ) -> Seen {
        if let Some(p) = prev.replace(local as usize, ord, value) {
            Seen::Delta(value - p)
        } else if tracked_flow && self.stored < MAX_PREVIOUS {
            prev.push(local as usize, value);
            self.stored += 1;
            self.peak_stored = self.peak_stored.max(self.stored);
            Seen::Kept
        } else {
            Seen::NotTracked
        }
    }

    /// Forgets the occurrences the packet did not have: the next packet compares with
    /// this one only.
    pub(super) fn end_packet(&mut self, prev: &mut Previous) {
        let mut kept = 0;
        for (row, r) in prev.rows.iter_mut().enumerate() {
            let keep = self.ordinals.get(row).copied().unwrap_or(0);
            if r.1 > keep {
                self.stored -= (r.1 - keep) as usize;
                r.1 = keep;
            }
            kept += r.1 as usize;
        }
        // A packet with many occurrences once leaves room in its flow that the later,
        // smaller ones do not use (128 clients: three million values of room for fifty
        // thousand kept).
        if prev.values.len() > SPARE_ROOM * kept + 1024 {
            prev.compact();
        }
        for &row in &self.touched {
            if let Some(o) = self.ordinals.get_mut(row as usize) {
                *o = 0;
            }
        }
        self.touched.clear();
    }
}
