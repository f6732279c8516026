//! Reassembly of messages whose fragments follow one another in a stream, placed by the
//! stream's sequence: counting down (KCP's `frg`: the fragments still to come, n-1 … 0,
//! the count told by the first only) or flagged first and last (SCTP's B and E bits). A
//! message is the run of sequences from a first fragment to the next last one; a
//! count-down fragment is first when the sequence before it ended a message (or when it
//! is the lowest its stream has shown). Every rule of reassembly has its counter; memory
//! is bounded by the shared budget, the runs a flow keeps and the fragments a run holds.

use super::reassembly::{AttackCounters, Budget, CountStats};
use gpcap_dissect::RunPart;
use hashbrown::HashMap;
use std::collections::BTreeMap;

/// Runs (message type, stream and key value) a flow keeps; past it the oldest is given up.
pub const MAX_RUNS: usize = 256;
/// Sequences a run remembers (as ends of messages, or done): a power of two.
const MARKS: usize = 1024;
/// The sequence ended a message.
const END: u8 = 1;
/// The fragment at the sequence went into a message (or was one alone).
const DONE: u8 = 2;

/// What limits a message: its fragments and bytes.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_fragments: u32,
    pub max_message: u32,
}

#[derive(Debug, Clone)]
struct Entry {
    data: Vec<u8>,
    frame: u64,
    part: RunPart,
}

#[derive(Debug, Clone)]
struct Run {
    age: u64,
    /// The newest sequence seen, extended (where new ones are placed next to).
    highest: i128,
    /// The lowest sequence seen: a count-down fragment there with nothing before it
    /// starts a message.
    lowest: i128,
    held: BTreeMap<i128, Entry>,
    /// (sequence + 1, END | DONE) by sequence modulo [`MARKS`].
    marks: Vec<(i128, u8)>,
    bytes: usize,
}

impl Run {
    fn extend(&self, s: u64, bits: u32) -> i128 {
        let mask = u64::MAX >> (64 - bits.clamp(1, 64));
        let d = s.wrapping_sub(self.highest as u64) & mask;
        let d = if d > mask / 2 {
            d as i128 - (mask as i128 + 1)
        } else {
            d as i128
        };
        self.highest + d
    }

    fn mark(&self, x: i128) -> u8 {
        let (at, m) = self.marks[(x as u64 as usize) & (MARKS - 1)];
        if at == x + 1 { m } else { 0 }
    }

    fn set_mark(&mut self, x: i128, m: u8) {
        let slot = &mut self.marks[(x as u64 as usize) & (MARKS - 1)];
        *slot = if slot.0 == x + 1 {
            (x + 1, slot.1 | m)
        } else {
            (x + 1, m)
        };
    }

    /// Whether the fragment at `x` begins its message.
    fn starts(&self, x: i128, part: &RunPart) -> bool {
        match part.remaining {
            None => part.first,
            Some(_) => self.mark(x - 1) & END != 0 || (x == self.lowest && self.mark(x - 1) == 0),
        }
    }

    fn held_bytes(e: &Entry) -> usize {
        std::mem::size_of::<Entry>() + 48 + e.data.capacity()
    }
}

/// The counters a flow's fragments go to (its reassembly's).
pub struct Counters<'a> {
    pub attacks: &'a mut AttackCounters,
    pub by_count: &'a mut BTreeMap<u32, CountStats>,
}

/// A completed message: its fragment count, bytes and fragments' frames.
pub type Done<'a> = &'a mut dyn FnMut(u32, &[u8], &[u64]);

/// A flow's runs.
#[derive(Debug, Clone, Default)]
pub struct Runs {
    runs: HashMap<(u32, u8, [i64; 2]), Run>,
    clock: u64,
    pub bytes_held: usize,
    /// Messages of one fragment (counting down from 0, or first and last at once):
    /// whole as sent, nothing to put back together.
    pub single: u64,
    /// Reused for a message's bytes and its fragments' frames.
    out: Vec<u8>,
    frames: Vec<u64>,
}

impl Runs {
    /// Adds the fragment `part` of a message of type `ty` (its stream `bits` wide), its
    /// data `data`, carried by `frame`; each message it completes goes to `done`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        ty: u32,
        part: &RunPart,
        bits: u32,
        data: &[u8],
        frame: u64,
        limits: Limits,
        budget: &mut Budget,
        c: &mut Counters,
        done: Done,
    ) {
        let a = &mut *c.attacks;
        if part.remaining.is_some_and(|r| r >= limits.max_fragments) {
            a.count_out_of_range += 1;
            return;
        }
        if data.len() as u64 > limits.max_message as u64 {
            a.oversize += 1;
            return;
        }
        let key = (ty, part.stream, part.key);
        if !self.runs.contains_key(&key) {
            if self.runs.len() >= MAX_RUNS {
                self.evict_oldest_run(budget, c);
            }
            self.clock += 1;
            self.runs.insert(
                key,
                Run {
                    age: self.clock,
                    highest: part.sequence as i128,
                    lowest: part.sequence as i128,
                    held: BTreeMap::new(),
                    marks: vec![(0, 0); MARKS],
                    bytes: 0,
                },
            );
        }
        let Some(run) = self.runs.get_mut(&key) else {
            return;
        };
        let x = run.extend(part.sequence, bits);
        if run.mark(x) & DONE != 0 || run.held.contains_key(&x) {
            c.attacks.duplicate += 1;
            return;
        }
        run.highest = run.highest.max(x);
        run.lowest = run.lowest.min(x);
        // A message of one fragment: nothing to hold.
        if part.last && run.starts(x, part) {
            run.set_mark(x, END | DONE);
            self.single += 1;
            self.complete_from(key, x + 1, limits, budget, c, done);
            return;
        }
        let e = Entry {
            data: data.to_vec(),
            frame,
            part: *part,
        };
        let held = Run::held_bytes(&e);
        run.bytes += held;
        self.bytes_held += held;
        budget.used += held;
        budget.grew();
        run.held.insert(x, e);
        if part.last {
            run.set_mark(x, END);
        }
        // A run holds twice the longest message at most: a flood of fragments that
        // never make one (counting down from 255 forever) gives up the oldest.
        while run.held.len() > 2 * limits.max_fragments as usize {
            let Some((_, old)) = run.held.pop_first() else {
                break;
            };
            c.attacks.evicted_incomplete += 1;
            Self::lost(run, &mut self.bytes_held, budget, c, old);
        }
        self.complete_from(key, x, limits, budget, c, done);
        if part.last {
            self.complete_from(key, x + 1, limits, budget, c, done);
        }
        while budget.used > budget.limit && self.evict_oldest_fragment(budget, c) {}
    }

    /// A fragment given up: counted as of a lost message by its count as known.
    fn lost(run: &mut Run, held: &mut usize, budget: &mut Budget, c: &mut Counters, e: Entry) {
        let bytes = Run::held_bytes(&e);
        run.bytes -= bytes;
        *held -= bytes;
        budget.used -= bytes;
        let count = e.part.remaining.map_or(1, |r| r + 1);
        let s = c.by_count.entry(count.max(2)).or_default();
        s.fragments_of_lost += 1;
        s.bytes_wasted += e.data.len() as u64;
    }

    /// Completes the message the fragment at `x` belongs to, when every fragment from its
    /// first to its last is held.
    fn complete_from(
        &mut self,
        key: (u32, u8, [i64; 2]),
        x: i128,
        limits: Limits,
        budget: &mut Budget,
        c: &mut Counters,
        done: Done,
    ) {
        let Some(run) = self.runs.get_mut(&key) else {
            return;
        };
        let most = limits.max_fragments as i128;
        let mut start = x;
        loop {
            let Some(e) = run.held.get(&start) else { return };
            if run.starts(start, &e.part) {
                break;
            }
            if x - start + 1 >= most {
                return;
            }
            start -= 1;
        }
        let mut end = x;
        loop {
            let Some(e) = run.held.get(&end) else { return };
            if e.part.last {
                break;
            }
            if end - start + 1 >= most {
                return;
            }
            end += 1;
        }
        // Counting down, each fragment says where the message ends; flagged, only its
        // ends are flagged: another is a count that changed.
        let consistent = (start..=end).all(|k| {
            run.held.get(&k).is_some_and(|e| match e.part.remaining {
                Some(r) => k + r as i128 == end,
                None => e.part.first == (k == start) && e.part.last == (k == end),
            })
        });
        let count = (end - start + 1) as u32;
        let total: usize = (start..=end)
            .filter_map(|k| run.held.get(&k))
            .map(|e| e.data.len())
            .sum();
        let refused = if !consistent {
            Some(&mut c.attacks.count_changed)
        } else if total as u64 > limits.max_message as u64 {
            Some(&mut c.attacks.oversize)
        } else {
            None
        };
        if let Some(counter) = refused {
            *counter += 1;
            for k in start..=end {
                if let Some(e) = run.held.remove(&k) {
                    Self::lost(run, &mut self.bytes_held, budget, c, e);
                }
            }
            return;
        }
        self.out.clear();
        self.frames.clear();
        for k in start..=end {
            if let Some(e) = run.held.remove(&k) {
                self.out.extend_from_slice(&e.data);
                self.frames.push(e.frame);
                let bytes = Run::held_bytes(&e);
                run.bytes -= bytes;
                self.bytes_held -= bytes;
                budget.used -= bytes;
            }
            run.set_mark(k, DONE);
        }
        run.set_mark(end, END);
        if count == 1 {
            self.single += 1;
        } else {
            let s = c.by_count.entry(count).or_default();
            s.seen += 1;
            s.completed += 1;
            done(count, &self.out, &self.frames);
        }
        // The message after it may have waited for this end.
        if run.held.contains_key(&(end + 1)) {
            self.complete_from(key, end + 1, limits, budget, c, done);
        }
    }

    /// Gives up the oldest run and what it holds (room for a new run).
    fn evict_oldest_run(&mut self, budget: &mut Budget, c: &mut Counters) {
        let Some(key) = self.runs.iter().min_by_key(|(_, r)| r.age).map(|(k, _)| *k) else {
            return;
        };
        if let Some(mut run) = self.runs.remove(&key) {
            let held = std::mem::take(&mut run.held);
            c.attacks.evicted_incomplete += Self::messages(&held);
            for (_, e) in held {
                Self::lost(&mut run, &mut self.bytes_held, budget, c, e);
            }
        }
    }

    /// Frees the oldest fragment held anywhere in the flow (over the memory budget).
    pub fn evict_oldest_fragment(&mut self, budget: &mut Budget, c: &mut Counters) -> bool {
        let Some(key) = (self.runs.iter())
            .filter(|(_, r)| !r.held.is_empty())
            .min_by_key(|(_, r)| r.age)
            .map(|(k, _)| *k)
        else {
            return false;
        };
        let Some(run) = self.runs.get_mut(&key) else {
            return false;
        };
        let Some((_, e)) = run.held.pop_first() else {
            return false;
        };
        c.attacks.evicted_for_memory += 1;
        Self::lost(run, &mut self.bytes_held, budget, c, e);
        true
    }

    /// How many messages the fragments held belong to: count-down ones by where they
    /// end, flagged ones by runs of consecutive sequences.
    fn messages(held: &BTreeMap<i128, Entry>) -> u64 {
        let mut n = 0u64;
        let mut last: Option<(i128, Option<i128>)> = None;
        for (&k, e) in held {
            let end = e.part.remaining.map(|r| k + r as i128);
            let same = match (last, end) {
                (Some((_, Some(a))), Some(b)) => a == b,
                (Some((p, None)), None) => p + 1 == k && !e.part.first,
                _ => false,
            };
            n += u64::from(!same);
            last = Some((k, end));
        }
        n
    }

    /// Gives up every message still waiting (end of capture).
    pub fn finish(&mut self, budget: &mut Budget, c: &mut Counters) {
        for (_, mut run) in self.runs.drain() {
            let held = std::mem::take(&mut run.held);
            c.attacks.incomplete_at_end += Self::messages(&held);
            for (_, e) in held {
                Self::lost(&mut run, &mut self.bytes_held, budget, c, e);
            }
        }
    }
}

/// A count-down or flagged fragment of the datagram being read into its flow's runs:
/// sets the event's `completes` and keeps what completed in `completed`.
#[allow(clippy::too_many_arguments)]
pub(super) fn push(
    p: &gpcap_dissect::Program,
    fl: &mut super::FlowState,
    ty: u32,
    part: &RunPart,
    data: &[u8],
    e: &mut super::PacketEvent<'_>,
    budget: &mut Budget,
    completed: &mut super::completed::Completed,
) {
    let limits = Limits {
        max_fragments: p.params.format.max_fragments,
        max_message: p.params.max_message_size,
    };
    let bits = p.params.streams.get(part.stream as usize).map_or(64, |d| d.bits);
    let as_type = p.params.message_fragment(ty).and_then(|d| d.reassembled_as);
    let mut c = Counters {
        attacks: &mut fl.frags.attacks,
        by_count: &mut fl.frags.by_count,
    };
    let runs = fl.runs.get_or_insert_default();
    let mut done = |count: u32, bytes: &[u8], frames: &[u64]| {
        e.completes.get_or_insert(count);
        completed.keep(bytes, frames, as_type);
    };
    runs.push(ty, part, bits, data, e.frame, limits, budget, &mut c, &mut done);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(seq: u64, remaining: Option<u32>, first: bool, last: bool) -> RunPart {
        RunPart {
            stream: 0,
            key: [7, 0],
            sequence: seq,
            remaining,
            first,
            last: last || remaining == Some(0),
        }
    }

    struct T {
        runs: Runs,
        budget: Budget,
        attacks: AttackCounters,
        by_count: BTreeMap<u32, CountStats>,
        done: Vec<(u32, Vec<u8>, Vec<u64>)>,
    }

    impl T {
        fn new(limit: usize) -> T {
            T {
                runs: Runs::default(),
                budget: Budget::new(limit),
                attacks: AttackCounters::default(),
                by_count: BTreeMap::new(),
                done: Vec::new(),
            }
        }

        fn push(&mut self, p: RunPart, data: &[u8], frame: u64) {
            let mut c = Counters {
                attacks: &mut self.attacks,
                by_count: &mut self.by_count,
            };
            let limits = Limits {
                max_fragments: 256,
                max_message: 1 << 20,
            };
            let done = &mut self.done;
            let mut f = |n: u32, b: &[u8], fr: &[u64]| done.push((n, b.to_vec(), fr.to_vec()));
            self.runs
                .push(81, &p, 32, data, frame, limits, &mut self.budget, &mut c, &mut f);
        }

        fn finish(&mut self) {
            let mut c = Counters {
                attacks: &mut self.attacks,
                by_count: &mut self.by_count,
            };
            self.runs.finish(&mut self.budget, &mut c);
        }
    }

    /// KCP: a single message, then one of three fragments out of order (the middle one
    /// last), a copy of a done fragment, then the next single.
    #[test]
    fn counting_down_rebuilds_messages_in_any_order() {
        let mut t = T::new(1 << 20);
        t.push(part(0, Some(0), false, false), b"a", 1);
        t.push(part(1, Some(2), false, false), b"bb", 2);
        t.push(part(3, Some(0), false, false), b"dd", 3);
        t.push(part(2, Some(1), false, false), b"cc", 4);
        t.push(part(2, Some(1), false, false), b"cc", 5);
        t.push(part(4, Some(0), false, false), b"e", 6);
        t.finish();
        assert_eq!(t.done, vec![(3, b"bbccdd".to_vec(), vec![2, 4, 3])]);
        assert_eq!(
            (t.runs.single, t.by_count[&3].completed, t.attacks.duplicate),
            (2, 1, 1)
        );
        assert_eq!(t.budget.used, 0);
    }

    /// A last fragment before its message's first: held until the sequence before it
    /// is known to end a message.
    #[test]
    fn a_message_waits_for_the_end_before_it() {
        let mut t = T::new(1 << 20);
        t.push(part(10, Some(0), false, false), b"a", 1);
        t.push(part(12, Some(0), false, false), b"c", 2);
        assert_eq!((t.runs.single, t.done.len()), (1, 0));
        t.push(part(11, Some(1), false, false), b"b", 3);
        assert_eq!(t.done, vec![(2, b"bc".to_vec(), vec![3, 2])]);
    }

    /// Flagged first and last (SCTP's B and E).
    #[test]
    fn flagged_fragments_run_from_first_to_last() {
        let mut t = T::new(1 << 20);
        t.push(part(5, None, true, true), b"x", 1);
        t.push(part(7, None, false, false), b"m", 2);
        t.push(part(8, None, false, true), b"e", 3);
        t.push(part(6, None, true, false), b"b", 4);
        assert_eq!(
            (t.runs.single, t.done.clone()),
            (1, vec![(3, b"bme".to_vec(), vec![4, 2, 3])])
        );
    }

    /// Counting down from 255 forever (each fragment's message never ends where the
    /// next says): bounded, counted, no message.
    #[test]
    fn counting_down_forever_is_bounded_and_counted() {
        let mut t = T::new(1 << 20);
        t.push(part(0, Some(0), false, false), b"", 0);
        for s in 1..100_000u64 {
            t.push(part(s, Some(255), false, false), &[0; 100], s);
            assert!(
                t.runs.bytes_held <= 2 * 256 * (100 + 200),
                "{}",
                t.runs.bytes_held
            );
        }
        t.push(part(100_000, Some(256), false, false), b"", 0);
        t.finish();
        assert!(t.done.is_empty());
        assert!(t.attacks.evicted_incomplete > 90_000 && t.attacks.count_out_of_range == 1);
        assert_eq!(t.budget.used, 0);
    }
}
