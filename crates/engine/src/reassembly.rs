//! Game-level fragment reassembly per flow (SPEC §1): a sequence buffer of `N` entries
//! indexed by `sequence % N`, wrap-around comparison, eviction of stale entries, and
//! every attack of the fragmentation article counted by cause. Memory is bounded per
//! flow by the entry count and overall by a shared byte budget.

use gpcap_wire::validate::{HeaderFormat, sequence_diff};
use serde::Serialize;
use std::collections::BTreeMap;

/// The most fragments a packet can have: what an entry's bitmap of received ids holds.
pub const MAX_FRAGMENT_COUNT: u32 = 256;

/// Entries in a flow's sequence buffer.
pub const BUFFER_ENTRIES: usize = 256;

/// Why a fragment was refused: the validation floor's vocabulary, which the generator's
/// truth also counts in.
pub use gpcap_wire::validate::AttackCounters;

/// Outcome of fragmented packets with `n` fragments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CountStats {
    /// Packets with at least one fragment received.
    pub seen: u64,
    pub completed: u64,
    /// Fragments received of packets that never completed.
    pub fragments_of_lost: u64,
    /// Bytes of delivered fragments wasted on packets that never completed.
    pub bytes_wasted: u64,
}

impl CountStats {
    pub fn add(&mut self, o: &CountStats) {
        self.seen += o.seen;
        self.completed += o.completed;
        self.fragments_of_lost += o.fragments_of_lost;
        self.bytes_wasted += o.bytes_wasted;
    }

    pub fn lost(&self) -> u64 {
        self.seen - self.completed
    }
}

#[derive(Debug, Clone)]
struct Entry {
    sequence: u16,
    /// Completed: kept (without data) so late copies count as duplicates, not as a new
    /// packet that can never complete.
    done: bool,
    count: u32,
    received: u32,
    bitmap: [u64; 4],
    /// Received fragment data in arrival order; `spans[id]` locates each.
    data: Vec<u8>,
    /// What `data` is charged to the budget: the capacity a fresh vector grown by the
    /// same appends would have (a recycled one may hold more), so the figures do not
    /// depend on which buffer an entry was given. A `u32` in the struct's padding: its
    /// size is charged too (at most 256 fragments of 64 KiB).
    charged: u32,
    spans: Vec<(u32, u32)>,
    /// The frame that carried each fragment, by id.
    frames: Vec<u64>,
}

impl Entry {
    fn has(&self, id: u32) -> bool {
        self.bitmap[(id / 64) as usize] >> (id % 64) & 1 == 1
    }
}

/// Memory shared by every flow's buffer.
#[derive(Debug, Clone)]
pub struct Budget {
    pub limit: usize,
    pub used: usize,
    pub peak: usize,
    /// The most held since [`Budget::frame_start`]: what shards report per frame, so
    /// that their peaks add up to the sequential one exactly.
    pub frame_peak: usize,
    /// Buffers of finished entries, handed to the next ones: a fragmented packet cost
    /// three allocations and the data's regrowths (half of `analyze -d`'s mallocs on a
    /// capture with 5% big packets). Not charged: at most `SPARE` sets of bounded size.
    spare: Vec<Buffers>,
}

/// An entry's vectors, emptied.
#[derive(Debug, Clone, Default)]
struct Buffers {
    data: Vec<u8>,
    spans: Vec<(u32, u32)>,
    frames: Vec<u64>,
}

/// Spare buffer sets kept, and the largest data buffer kept (bigger ones are freed).
const SPARE: usize = 8;
const SPARE_DATA: usize = 64 << 10;

impl Buffers {
    /// Keeps an entry's vectors for a later one, if there is room and they are small.
    fn recycle(spare: &mut Vec<Buffers>, e: &mut Entry) {
        let mut b = Buffers {
            data: std::mem::take(&mut e.data),
            spans: std::mem::take(&mut e.spans),
            frames: std::mem::take(&mut e.frames),
        };
        // A completed packet's marker holds nothing worth keeping.
        let worth = b.data.capacity() > 0 && b.data.capacity() <= SPARE_DATA;
        if worth && spare.len() < SPARE && b.spans.capacity() <= MAX_FRAGMENT_COUNT as usize {
            b.data.clear();
            b.spans.clear();
            b.frames.clear();
            spare.push(b);
        }
    }
}

/// The capacity a vector of `len` bytes and capacity `cap` has after appending `add`
/// bytes (the standard library's amortized growth: double, or what is needed, at
/// least 8).
fn grown_capacity(cap: u32, len: usize, add: usize) -> u32 {
    let cap = cap as usize;
    let new = if add <= cap.saturating_sub(len) {
        cap
    } else {
        (cap * 2).max(len + add).max(8)
    };
    u32::try_from(new).unwrap_or(u32::MAX)
}

impl Budget {
    pub fn new(limit: usize) -> Self {
        Budget {
            limit,
            used: 0,
            peak: 0,
            frame_peak: 0,
            spare: Vec::new(),
        }
    }

    /// After `used` grew.
    #[inline]
    pub(super) fn grew(&mut self) {
        self.peak = self.peak.max(self.used);
        self.frame_peak = self.frame_peak.max(self.used);
    }

    /// A frame begins: its own peak starts from what is held now.
    #[inline]
    pub fn frame_start(&mut self) {
        self.frame_peak = self.used;
    }
}

/// A fragment as the dissector found it.
#[derive(Debug, Clone, Copy)]
pub struct FragmentIn<'a> {
    pub sequence: u16,
    pub id: u32,
    pub count: u32,
    /// The frame that carried it.
    pub frame: u64,
    pub data: &'a [u8],
    /// Bytes at the start of `data` outside `fragment-size` (the header fragment 0
    /// carries, when the definition describes it).
    pub lead: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Stored,
    /// All fragments arrived; the packet's bytes and its fragments' frames are in the
    /// caller's buffers.
    Complete {
        count: u32,
    },
    Refused,
}

/// Memory an entry costs besides its data: charged to the budget so that the number of
/// entries, across every flow, is bounded too.
fn overhead(e: &Entry) -> usize {
    std::mem::size_of::<Entry>()
        + 16
        + e.spans.len() * std::mem::size_of::<(u32, u32)>()
        + e.frames.len() * std::mem::size_of::<u64>()
}

#[derive(Debug, Default, Clone)]
pub struct FlowReassembly {
    /// Entries by `sequence % BUFFER_ENTRIES`, only those in use.
    entries: hashbrown::HashMap<u16, Entry>,
    newest: Option<u16>,
    pub attacks: AttackCounters,
    pub by_count: BTreeMap<u32, CountStats>,
    pub bytes_held: usize,
    /// The last fragment pushed was the first received of its packet (counted `seen`).
    pub opened: bool,
}

impl FlowReassembly {
    /// Bytes of the flow's table of packets being put back together (their data and
    /// per-entry overhead are in the budget).
    pub fn table_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(u16, Entry)>()
            + self.by_count.len() * (std::mem::size_of::<(u32, CountStats)>() + 16)
    }

    /// Releases an entry's memory; one that never completed counts as lost.
    fn give_up(&mut self, mut e: Entry, budget: &mut Budget) {
        let held = e.charged as usize + overhead(&e);
        budget.used -= held;
        self.bytes_held -= held;
        if !e.done {
            let s = self.by_count.entry(e.count).or_default();
            s.fragments_of_lost += e.received as u64;
            s.bytes_wasted += e.data.len() as u64;
        }
        Buffers::recycle(&mut budget.spare, &mut e);
    }

    /// Frees this flow's oldest entry — a completed marker first, else the oldest
    /// incomplete packet (counted); false if it holds none.
    pub fn evict_oldest(&mut self, budget: &mut Budget) -> bool {
        let Some(newest) = self.newest else { return false };
        let oldest = self
            .entries
            .iter()
            .map(|(&k, e)| (!e.done, sequence_diff(newest, e.sequence), k))
            .min_by_key(|&(incomplete, age, _)| (incomplete, -age));
        match oldest.and_then(|(_, _, k)| self.entries.remove(&k)) {
            Some(e) => {
                if !e.done {
                    self.attacks.evicted_for_memory += 1;
                }
                self.give_up(e, budget);
                true
            }
            None => false,
        }
    }

    /// Adds one fragment. On completion the packet is written to `out` and the frames of
    /// its fragments, by id, to `frames_out`.
    pub fn push(
        &mut self,
        f: FragmentIn,
        fmt: &HeaderFormat,
        budget: &mut Budget,
        out: &mut Vec<u8>,
        frames_out: &mut Vec<u64>,
    ) -> Outcome {
        self.opened = false;
        if f.count == 0 || f.count > fmt.max_fragments || f.count > MAX_FRAGMENT_COUNT {
            self.attacks.count_out_of_range += 1;
            return Outcome::Refused;
        }
        if f.id >= f.count {
            self.attacks.id_out_of_range += 1;
            return Outcome::Refused;
        }
        let size = fmt.fragment_size as usize;
        let carried = f.data.len().saturating_sub(f.lead);
        if carried > size {
            self.attacks.oversize += 1;
            return Outcome::Refused;
        }
        if f.id + 1 < f.count && carried < size {
            self.attacks.short_non_last += 1;
            return Outcome::Refused;
        }
        if let Some(newest) = self.newest {
            let d = sequence_diff(f.sequence, newest) as i64;
            if d <= -(BUFFER_ENTRIES as i64) {
                self.attacks.stale += 1;
                return Outcome::Refused;
            }
            if d > 0 {
                self.newest = Some(f.sequence);
                // Entries now 256 or more behind the newest can never complete. Taken
                // out in place: a list of their keys was an allocation per packet that
                // moved a completed packet's marker out of the window.
                let mut entries = std::mem::take(&mut self.entries);
                let behind =
                    |e: &Entry| sequence_diff(f.sequence, e.sequence) as i64 >= BUFFER_ENTRIES as i64;
                for (_, e) in entries.extract_if(|_, e| behind(e)) {
                    self.attacks.evicted_incomplete += !e.done as u64;
                    self.give_up(e, budget);
                }
                self.entries = entries;
            }
        } else {
            self.newest = Some(f.sequence);
        }
        let slot = (f.sequence as usize % BUFFER_ENTRIES) as u16;
        if self.entries.get(&slot).is_some_and(|e| e.sequence != f.sequence)
            && let Some(e) = self.entries.remove(&slot)
        {
            self.attacks.evicted_incomplete += !e.done as u64;
            self.give_up(e, budget);
        }
        let entry = self.entries.entry(slot).or_insert_with(|| {
            let mut b = budget.spare.pop().unwrap_or_default();
            b.spans.resize(f.count as usize, (0, 0));
            b.frames.resize(f.count as usize, 0);
            let e = Entry {
                sequence: f.sequence,
                done: false,
                count: f.count,
                received: 0,
                bitmap: [0; 4],
                data: b.data,
                charged: 0,
                spans: b.spans,
                frames: b.frames,
            };
            let o = overhead(&e);
            budget.used += o;
            budget.grew();
            self.bytes_held += o;
            e
        });
        if entry.received == 0 {
            self.by_count.entry(f.count).or_default().seen += 1;
            self.opened = true;
        }
        if entry.count != f.count {
            self.attacks.count_changed += 1;
            return Outcome::Refused;
        }
        if entry.done || entry.has(f.id) {
            self.attacks.duplicate += 1;
            return Outcome::Refused;
        }
        let before = entry.charged;
        entry.charged = grown_capacity(before, entry.data.len(), f.data.len());
        let start = entry.data.len() as u32;
        entry.data.extend_from_slice(f.data);
        let grown = (entry.charged - before) as usize;
        budget.used += grown;
        budget.grew();
        self.bytes_held += grown;
        entry.spans[f.id as usize] = (start, f.data.len() as u32);
        entry.frames[f.id as usize] = f.frame;
        entry.bitmap[(f.id / 64) as usize] |= 1 << (f.id % 64);
        entry.received += 1;
        if entry.received < entry.count {
            // Over the shared budget: this flow gives up its oldest packets first.
            while budget.used > budget.limit && self.evict_oldest(budget) {}
            return Outcome::Stored;
        }
        out.clear();
        for &(s, l) in &entry.spans {
            out.extend_from_slice(&entry.data[s as usize..(s + l) as usize]);
        }
        frames_out.clear();
        frames_out.extend_from_slice(&entry.frames);
        let freed = entry.charged as usize
            + entry.spans.len() * std::mem::size_of::<(u32, u32)>()
            + entry.frames.len() * std::mem::size_of::<u64>();
        budget.used -= freed;
        self.bytes_held -= freed;
        entry.charged = 0;
        Buffers::recycle(&mut budget.spare, entry);
        entry.done = true;
        let count = entry.count;
        self.by_count.entry(count).or_default().completed += 1;
        Outcome::Complete { count }
    }

    /// Gives up every entry still waiting (end of capture).
    pub fn finish(&mut self, budget: &mut Budget) {
        let all: Vec<Entry> = self.entries.drain().map(|(_, e)| e).collect();
        for e in all {
            self.attacks.incomplete_at_end += !e.done as u64;
            self.give_up(e, budget);
        }
    }

    /// Incomplete entries: (sequence, count, received ids) for the UI.
    pub fn pending(&self) -> Vec<(u16, u32, Vec<u32>)> {
        self.entries
            .values()
            .filter(|e| !e.done)
            .map(|e| (e.sequence, e.count, (0..e.count).filter(|&i| e.has(i)).collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes packet `sequence` in `count` fragments of `size` bytes (the last `last`),
    /// and the budget's `used` after each.
    fn packet(r: &mut FlowReassembly, b: &mut Budget, sequence: u16, count: u32, last: usize) -> Vec<usize> {
        let fmt = HeaderFormat::default();
        let size = fmt.fragment_size as usize;
        let (mut out, mut frames) = (Vec::new(), Vec::new());
        let mut used = Vec::new();
        for id in 0..count {
            let len = if id + 1 == count { last } else { size };
            let data = vec![id as u8; len];
            let f = FragmentIn {
                sequence,
                id,
                count,
                frame: u64::from(id),
                data: &data,
                lead: 0,
            };
            r.push(f, &fmt, b, &mut out, &mut frames);
            used.push(b.used);
        }
        assert_eq!(out.len(), size * (count as usize - 1) + last);
        used
    }

    #[test]
    fn recycled_buffers_are_charged_as_fresh_ones() {
        let (mut r, mut b) = (FlowReassembly::default(), Budget::new(1 << 24));
        let first = packet(&mut r, &mut b, 1, 4, 100);
        let peak = b.peak;
        assert_eq!(b.spare.len(), 1, "the finished packet's buffers are kept");
        let capacity = b.spare[0].data.capacity();
        // The next packet takes them (no allocation for its data), and is charged the
        // same as the first, fragment by fragment, though the buffer is already grown.
        let second = packet(&mut r, &mut b, 2, 4, 100);
        assert_eq!(b.spare.len(), 1);
        assert_eq!(b.spare[0].data.capacity(), capacity);
        // The first packet's entry stays behind as a marker of what completed.
        let marker = first[3];
        assert_eq!(second, first.iter().map(|u| u + marker).collect::<Vec<_>>());
        assert_eq!(b.peak, peak + marker);
        // The charge is the capacity a fresh vector grown by the same appends has.
        let size = HeaderFormat::default().fragment_size as usize;
        let mut fresh: Vec<u8> = Vec::new();
        let mut charged = Vec::new();
        for len in [size, size, size, 100] {
            fresh.extend_from_slice(&vec![0; len]);
            charged.push(fresh.capacity());
        }
        assert_eq!(grown_capacity(0, 0, size) as usize, charged[0]);
        assert_eq!(grown_capacity(charged[0] as u32, size, size) as usize, charged[1]);
        assert_eq!(
            grown_capacity(charged[1] as u32, 2 * size, size) as usize,
            charged[2]
        );
        assert_eq!(
            grown_capacity(charged[2] as u32, 3 * size, 100) as usize,
            charged[3]
        );
    }

    #[test]
    fn an_entry_is_no_larger_than_before_it_was_charged_its_growth() {
        // The entry's size is charged to the budget per packet: the growth's charge
        // lives in its padding, so the reported reassembly figures stay the same.
        assert_eq!(std::mem::size_of::<Entry>(), 120);
    }
}
