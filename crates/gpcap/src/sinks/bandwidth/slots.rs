//! Per-slot entries of the plan's leaf log ([`gpcap_dissect::leaves`]), sized by the
//! slots the datagrams use: a table indexed by slot while the slot numbers the plan can
//! name are few, a map past that. Slot numbers are sparse (several per leaf-table entry,
//! most never logged, a list's index ladder and the end check past every entry), so a
//! table grown to the highest slot met could take a big definition's whole span — tens
//! or hundreds of megabytes per shard — for one datagram that reached its last leaf.

use hashbrown::HashMap;

/// Slot numbers below which a table is kept (past it, a map: a hash per lookup, memory
/// by the slots met).
pub(super) const DENSE_SLOTS: u32 = 1 << 16;

#[derive(Debug, Clone)]
pub(super) struct Slots<T> {
    /// Slots the plan can name; a slot at or past it is none.
    limit: u32,
    unset: T,
    table: Vec<T>,
    map: HashMap<u32, T>,
}

impl<T: Copy> Slots<T> {
    /// Entries for slots `0..limit`, each `unset` until set.
    pub(super) fn new(limit: u32, unset: T) -> Self {
        Slots {
            limit,
            unset,
            table: Vec::new(),
            map: HashMap::new(),
        }
    }

    fn dense(&self) -> bool {
        self.limit <= DENSE_SLOTS
    }

    /// Slot `slot`'s entry (`unset` when never set; None past the plan's slots).
    #[inline]
    pub(super) fn get(&self, slot: u32) -> Option<T> {
        if slot >= self.limit {
            return None;
        }
        if self.dense() {
            Some(self.table.get(slot as usize).copied().unwrap_or(self.unset))
        } else {
            Some(self.map.get(&slot).copied().unwrap_or(self.unset))
        }
    }

    /// Sets slot `slot`'s entry, returning the one it replaces (nothing past the plan's
    /// slots).
    #[inline]
    pub(super) fn set(&mut self, slot: u32, v: T) -> Option<T> {
        self.get_mut(slot).map(|x| std::mem::replace(x, v))
    }

    /// Slot `slot`'s entry to change (made `unset` when never set; None past the plan's
    /// slots).
    #[inline]
    pub(super) fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        if slot >= self.limit {
            return None;
        }
        if self.dense() {
            let i = slot as usize;
            if i >= self.table.len() {
                self.table.resize(i + 1, self.unset);
            }
            self.table.get_mut(i)
        } else {
            Some(self.map.entry(slot).or_insert(self.unset))
        }
    }

    /// Every entry held, to change.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.table.iter_mut().chain(self.map.values_mut())
    }

    /// Entries held (table cells or map entries): what the slots met cost.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.table.len() + self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table and a map hold the same entries; past the limit nothing is kept; a big
    /// span costs the slots met, not the span.
    #[test]
    fn table_and_map_agree_and_cost_the_slots_met() {
        for limit in [1000, DENSE_SLOTS, DENSE_SLOTS + 1, u32::MAX] {
            let mut s = Slots::new(limit, 0u64);
            assert_eq!(s.get(5), Some(0));
            assert_eq!(s.set(5, 7), Some(0));
            assert_eq!(s.set(5, 8), Some(7));
            assert_eq!(s.get(5), Some(8));
            assert_eq!(s.get(limit), None);
            assert_eq!(s.set(limit, 1), None);
            assert_eq!(s.get(4), Some(0));
        }
        let mut big = Slots::new(u32::MAX, 0u8);
        big.set(u32::MAX - 1, 1);
        big.set(3, 1);
        assert_eq!(big.held(), 2);
        assert_eq!(big.get(u32::MAX - 1), Some(1));
    }
}
