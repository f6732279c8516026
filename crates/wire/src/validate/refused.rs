//! Why a game-level fragment was refused or a packet given up: the rules of the
//! fragmentation article, one counter each. Reassembly (in the engine) counts them and
//! the generator's truth says how many it broke, so both name them from here.

use serde::{Deserialize, Serialize};

/// Why a fragment was refused or a packet given up, one counter each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct AttackCounters {
    pub id_out_of_range: u64,
    pub count_out_of_range: u64,
    pub count_changed: u64,
    pub oversize: u64,
    pub short_non_last: u64,
    pub duplicate: u64,
    pub stale: u64,
    pub evicted_incomplete: u64,
    /// Entries dropped because the total memory budget was reached (a flood).
    pub evicted_for_memory: u64,
    pub incomplete_at_end: u64,
    /// A message fragment whose data runs past its message's declared total length.
    #[serde(skip_serializing_if = "is_zero")]
    pub offset_past_total: u64,
    /// A message whose fragments all arrived but leave bytes of its declared length
    /// unsent (given up: its holes would read as zeros).
    #[serde(skip_serializing_if = "is_zero")]
    pub with_holes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl AttackCounters {
    pub fn add(&mut self, o: &AttackCounters) {
        self.id_out_of_range += o.id_out_of_range;
        self.count_out_of_range += o.count_out_of_range;
        self.count_changed += o.count_changed;
        self.oversize += o.oversize;
        self.short_non_last += o.short_non_last;
        self.duplicate += o.duplicate;
        self.stale += o.stale;
        self.evicted_incomplete += o.evicted_incomplete;
        self.evicted_for_memory += o.evicted_for_memory;
        self.incomplete_at_end += o.incomplete_at_end;
        self.offset_past_total += o.offset_past_total;
        self.with_holes += o.with_holes;
    }

    /// Fragments refused by a rule (not counting packets given up).
    pub fn refused(&self) -> u64 {
        self.id_out_of_range
            + self.count_out_of_range
            + self.count_changed
            + self.oversize
            + self.short_non_last
            + self.duplicate
            + self.stale
            + self.offset_past_total
    }
}
