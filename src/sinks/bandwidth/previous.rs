//! Each flow and type's previous packet, for the deltas: its values by row and
//! occurrence, bounded in flows and in values.

use super::*;

/// One flow and type's previous packet: each row's values by occurrence, in one
/// contiguous array (a row's range grows by moving it to the end, the holes left behind
/// compacted away): a `Vec` per row was a pointer to chase, and a line to miss, per
/// field of every packet.
#[derive(Debug, Clone, Default)]
pub(super) struct Previous {
    /// By row (its index among its type's): (start in `values`, values, room).
    pub(super) rows: Vec<(u32, u32, u32)>,
    pub(super) values: Vec<i128>,
    /// Room the rows hold in `values` (the rest is holes).
    pub(super) room: usize,
}

impl Previous {
    /// Asks for every value at once, before the packet's fields read them one by one:
    /// a flow's values were last touched a few hundred packets ago, and waiting for
    /// them field after field was a sixth of `--bits` (1 GB, 128 clients).
    #[inline]
    pub(super) fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            // The values kept, not the room after them (a big packet's room stays).
            for &(start, len, _) in &self.rows {
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

    /// Row `row`'s value `ord` (None: not kept).
    #[inline(always)]
    pub(super) fn get_mut(&mut self, row: usize, ord: u32) -> Option<&mut i128> {
        let &(start, len, _) = self.rows.get(row)?;
        if ord >= len {
            return None;
        }
        self.values.get_mut((start + ord) as usize)
    }

    /// Keeps `v` after row `row`'s values (a third of a scene's values: a packet with
    /// more objects than its flow's previous one).
    #[inline(always)]
    pub(super) fn push(&mut self, row: usize, v: i128) {
        let (start, len) = match self.rows.get(row) {
            Some(&(start, len, room)) if len < room => (start, len),
            _ => self.make_room(row),
        };
        if let Some(x) = self.values.get_mut((start + len) as usize) {
            *x = v;
            self.rows[row].1 += 1;
        }
    }

    /// Room for one more value of row `row` (a row not met yet, or full): its (start,
    /// values).
    #[cold]
    pub(super) fn make_room(&mut self, row: usize) -> (u32, u32) {
        if self.rows.len() <= row {
            self.rows.resize(row + 1, (0, 0, 0));
        }
        let (_, len, room) = self.rows[row];
        if len == room {
            self.grow(row);
        }
        let (start, len, _) = self.rows[row];
        (start, len)
    }

    /// Twice the room for row `row`, at the end (holes compacted first when they are
    /// most of the array).
    pub(super) fn grow(&mut self, row: usize) {
        if self.values.len() > 2 * self.room + 64 {
            self.compact();
        }
        let (start, len, room) = self.rows[row];
        let more = (room * 2).max(4);
        let at = self.values.len();
        self.values.resize(at + more as usize, 0);
        self.values
            .copy_within(start as usize..(start + len) as usize, at);
        self.rows[row] = (at as u32, len, more);
        self.room += (more - room) as usize;
    }

    /// The rows' ranges moved together, holes gone.
    pub(super) fn compact(&mut self) {
        let mut values = Vec::with_capacity(self.room);
        for r in &mut self.rows {
            let (start, _, room) = *r;
            let at = values.len() as u32;
            values.extend_from_slice(&self.values[start as usize..(start + room) as usize]);
            r.0 = at;
        }
        self.values = values;
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
        if let Some(p) = prev.get_mut(local as usize, ord) {
            let d = value - *p;
            *p = value;
            Seen::Delta(d)
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
        for (row, r) in prev.rows.iter_mut().enumerate() {
            let keep = self.ordinals.get(row).copied().unwrap_or(0);
            if r.1 > keep {
                self.stored -= (r.1 - keep) as usize;
                r.1 = keep;
            }
        }
        for &row in &self.touched {
            if let Some(o) = self.ordinals.get_mut(row as usize) {
                *o = 0;
            }
        }
        self.touched.clear();
    }
}
