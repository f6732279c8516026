//! Reassembly of messages sent in fragments inside messages (ENet's SEND_FRAGMENT and
//! SEND_UNRELIABLE_FRAGMENT): fragments grouped per flow by message type and the
//! definition's key fields, placed at their byte offset in a message of a declared total
//! length (or by number × `fragment-size`), counts and numbers up to 32 bits. Memory is
//! bounded by the shared budget (`--reassembly-memory`), the declared
//! `max-message-size`, and the groups a flow keeps open.

use super::reassembly::{AttackCounters, Budget, CountStats};
use super::validator::Verdict;
use gpcap_dissect::MessageFragment;
use hashbrown::HashMap;
use std::collections::BTreeMap;

/// Groups a flow keeps, completed markers included: past it the oldest is given up.
pub const MAX_GROUPS: usize = 256;

/// Distinct fragment counts a flow's table keeps (a flood of made-up counts cannot
/// grow it): a fragment of a further count is refused (`count_out_of_range`).
pub const MAX_COUNTS: usize = 1024;

/// What limits a message: `max-message-size`, and `fragment-size` for fragments placed
/// by number.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_message: u32,
    pub fragment_size: u32,
}

#[derive(Debug, Clone)]
struct Group {
    /// Order of opening: the oldest is given up first.
    age: u64,
    /// Completed (or given up whole): kept without data so late copies count as
    /// duplicates.
    done: bool,
    count: u32,
    total: Option<u32>,
    received: u32,
    /// Received numbers: a set, not a bitmap of `count` bits (a count of 2^30 declared
    /// by one fragment would be 128 MiB).
    ids: hashbrown::HashSet<u32>,
    /// The fragments received, in arrival order: their data lies in `data`. Sparse: a
    /// byte at offset 2^30 costs a byte, not the 2^30 before it.
    pieces: Vec<Piece>,
    data: Vec<u8>,
    /// Bytes of data received.
    bytes: u64,
}

/// One fragment received: its number, where its bytes go in the message, where they are
/// in the group's `data`, and the frame that carried it.
#[derive(Debug, Clone, Copy)]
struct Piece {
    id: u32,
    at: u32,
    from: u32,
    len: u32,
    frame: u64,
}

impl Group {
    fn has(&self, n: u32) -> bool {
        self.ids.contains(&n)
    }

    /// Memory it holds, as charged to the budget.
    fn held(&self) -> usize {
        std::mem::size_of::<Group>()
            + 32
            + self.data.capacity()
            + self.ids.allocation_size()
            + self.pieces.capacity() * std::mem::size_of::<Piece>()
    }

    /// The message's length, when the fragments received cover every byte of it (none
    /// overlapping past another's end is needed: a byte received twice counts once);
    /// `None` when there are holes, which would be read as zeros.
    fn whole(&mut self) -> Option<usize> {
        self.pieces.sort_unstable_by_key(|p| (p.at, p.len));
        let end = self
            .pieces
            .iter()
            .map(|p| p.at as u64 + p.len as u64)
            .max()
            .unwrap_or(0);
        let len = self.total.map_or(end, u64::from);
        let mut covered = 0u64;
        for p in &self.pieces {
            if p.at as u64 > covered {
                return None;
            }
            covered = covered.max(p.at as u64 + p.len as u64);
        }
        (covered >= len).then_some(len as usize)
    }

    /// Writes the message (`len` bytes, every one received) into `out`.
    fn assemble(&self, len: usize, out: &mut Vec<u8>) {
        out.clear();
        out.resize(len, 0);
        for p in &self.pieces {
            let (at, from) = (p.at as usize, p.from as usize);
            let n = (p.len as usize).min(len.saturating_sub(at));
            out[at..at + n].copy_from_slice(&self.data[from..from + n]);
        }
    }
}

/// A flow's messages being put back together.
#[derive(Debug, Clone, Default)]
pub struct MessageReassembly {
    groups: HashMap<(u32, [i64; 3]), Group>,
    clock: u64,
    pub bytes_held: usize,
}

/// What a fragment did.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Stored; `opened`: the first received of its message.
    Stored {
        opened: bool,
    },
    /// The message is whole: its bytes and its fragments' frames are in the caller's
    /// buffers.
    Complete {
        count: u32,
        opened: bool,
    },
    Refused,
}

/// The counters a flow's fragments go to (its reassembly's, shared with datagram
/// fragments).
pub struct Counters<'a> {
    pub attacks: &'a mut AttackCounters,
    pub by_count: &'a mut BTreeMap<u32, CountStats>,
}

impl MessageReassembly {
    /// Checks a fragment against the rules every fragment must keep, before it touches
    /// any group.
    fn admissible(f: &MessageFragment, limits: Limits, c: &mut Counters) -> bool {
        let a = &mut *c.attacks;
        let max = limits.max_message;
        let most = match f.total {
            Some(t) => t.min(max),
            None => max.div_ceil(limits.fragment_size.max(1)),
        };
        if f.count == 0 || f.count > most.max(1) {
            a.count_out_of_range += 1;
            return false;
        }
        if f.id >= f.count {
            a.id_out_of_range += 1;
            return false;
        }
        if !c.by_count.contains_key(&f.count) && c.by_count.len() >= MAX_COUNTS {
            a.count_out_of_range += 1;
            return false;
        }
        match (f.offset, f.total) {
            (_, Some(t)) if t > max => {
                a.oversize += 1;
                false
            }
            (Some(o), Some(t)) if o as u64 + f.data_len as u64 > t as u64 => {
                a.offset_past_total += 1;
                false
            }
            (Some(_), Some(_)) => true,
            _ => {
                let size = limits.fragment_size;
                if f.data_len > size {
                    a.oversize += 1;
                    false
                } else if f.id + 1 < f.count && f.data_len < size {
                    a.short_non_last += 1;
                    false
                } else {
                    true
                }
            }
        }
    }

    /// Adds one fragment of message type `ty`, its data `data`, carried by `frame`. On
    /// completion the message is written to `out` and its fragments' frames, by
    /// number, to `frames_out`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        ty: u32,
        f: &MessageFragment,
        data: &[u8],
        frame: u64,
        limits: Limits,
        budget: &mut Budget,
        c: &mut Counters,
        out: &mut Vec<u8>,
        frames_out: &mut Vec<u64>,
    ) -> Pushed {
        if !Self::admissible(f, limits, c) {
            return Pushed::Refused;
        }
        let key = (ty, f.key);
        let mut opened = false;
        if !self.groups.contains_key(&key) {
            if self.groups.len() >= MAX_GROUPS {
                self.evict_oldest(budget, c, false);
            }
            self.clock += 1;
            let g = Group {
                age: self.clock,
                done: false,
                count: f.count,
                total: f.total,
                received: 0,
                ids: hashbrown::HashSet::new(),
                pieces: Vec::new(),
                data: Vec::new(),
                bytes: 0,
            };
            let held = g.held();
            budget.used += held;
            budget.grew();
            self.bytes_held += held;
            self.groups.insert(key, g);
            c.by_count.entry(f.count).or_default().seen += 1;
            opened = true;
        }
        let Some(g) = self.groups.get_mut(&key) else {
            return Pushed::Refused;
        };
        if g.count != f.count || g.total != f.total {
            c.attacks.count_changed += 1;
            return Pushed::Refused;
        }
        if g.done || g.has(f.id) {
            c.attacks.duplicate += 1;
            return Pushed::Refused;
        }
        let at = match f.offset {
            Some(o) => o,
            None => f.id.saturating_mul(limits.fragment_size),
        };
        // Charged as it grows: what a fragment costs is its own bytes and its entry,
        // whatever offset or total it declares.
        let before = g.held();
        g.pieces.push(Piece {
            id: f.id,
            at,
            from: g.data.len() as u32,
            len: data.len() as u32,
            frame,
        });
        g.data.extend_from_slice(data);
        g.ids.insert(f.id);
        g.bytes += data.len() as u64;
        g.received += 1;
        let grown = g.held() - before;
        budget.used += grown;
        budget.grew();
        self.bytes_held += grown;
        if g.received < g.count {
            while budget.used > budget.limit && self.evict_oldest(budget, c, true) {}
            return Pushed::Stored { opened };
        }
        let whole = g.whole();
        if let Some(len) = whole {
            // The message is built from bytes held: counted in the peak while both are.
            budget.used += len;
            budget.grew();
            budget.used -= len;
            g.assemble(len, out);
            g.pieces.sort_unstable_by_key(|p| p.id);
            frames_out.clear();
            frames_out.extend(g.pieces.iter().map(|p| p.frame));
        }
        let freed = g.held();
        let (count, received, bytes) = (g.count, g.received, g.bytes);
        g.data = Vec::new();
        g.pieces = Vec::new();
        g.ids = hashbrown::HashSet::new();
        g.done = true;
        let kept = g.held();
        budget.used -= freed - kept;
        self.bytes_held -= freed - kept;
        let s = c.by_count.entry(count).or_default();
        if whole.is_none() {
            // Every fragment came, but they leave bytes of the declared length unsent.
            c.attacks.with_holes += 1;
            s.fragments_of_lost += received as u64;
            s.bytes_wasted += bytes;
            return Pushed::Stored { opened };
        }
        s.completed += 1;
        Pushed::Complete { count, opened }
    }

    /// Releases a group; one never completed counts as lost.
    fn give_up(&mut self, g: Group, budget: &mut Budget, c: &mut Counters) {
        let held = g.held();
        budget.used -= held;
        self.bytes_held -= held;
        if g.done {
            return;
        }
        let s = c.by_count.entry(g.count).or_default();
        s.fragments_of_lost += g.received as u64;
        s.bytes_wasted += g.bytes;
    }

    /// Frees the oldest group — a completed marker first, else the oldest incomplete
    /// message (counted as evicted for memory or for room); false if there is none.
    pub fn evict_oldest(&mut self, budget: &mut Budget, c: &mut Counters, for_memory: bool) -> bool {
        let oldest = self
            .groups
            .iter()
            .map(|(k, g)| (!g.done, g.age, *k))
            .min_by_key(|&(incomplete, age, _)| (incomplete, age));
        let Some(g) = oldest.and_then(|(_, _, k)| self.groups.remove(&k)) else {
            return false;
        };
        if !g.done {
            if for_memory {
                c.attacks.evicted_for_memory += 1;
            } else {
                c.attacks.evicted_incomplete += 1;
            }
        }
        self.give_up(g, budget, c);
        true
    }

    /// Gives up every message still waiting (end of capture).
    pub fn finish(&mut self, budget: &mut Budget, c: &mut Counters) {
        let all: Vec<Group> = self.groups.drain().map(|(_, g)| g).collect();
        for g in all {
            c.attacks.incomplete_at_end += !g.done as u64;
            self.give_up(g, budget, c);
        }
    }
}

/// The message type a reassembled message of type `ty` is read as, when one is declared.
fn as_type(p: &gpcap_dissect::Program, ty: u32) -> Option<u32> {
    p.params.message_fragment(ty)?.reassembled_as
}

impl super::Engine {
    /// Puts the datagram's message fragments into their flow's messages: sets the
    /// event's `opens` and `completes`, and keeps what completed for
    /// [`Engine::emit_completed`].
    pub(super) fn message_fragments(&mut self, e: &mut super::PacketEvent<'_>, index: u32, payload: &[u8]) {
        self.completed.len = 0;
        let Some(p) = self.cfg.program.as_deref() else {
            return;
        };
        let limits = Limits {
            max_message: p.params.max_message_size,
            fragment_size: p.params.format.fragment_size,
        };
        let Some(fl) = self.flows.get_mut(index as usize) else {
            return;
        };
        let (mut out, mut frames) = (
            std::mem::take(&mut self.reassembled),
            std::mem::take(&mut self.fragment_frames),
        );
        for m in &self.validator.dissection.messages {
            let (Some(ty), Some(f)) = (m.type_id, m.fragment) else {
                continue;
            };
            let Some(data) = payload.get(f.data_at as usize..(f.data_at + f.data_len) as usize) else {
                continue;
            };
            if let Some(part) = &f.run {
                super::msgruns::push(p, fl, ty, part, data, e, &mut self.budget, &mut self.completed);
                continue;
            }
            let mut c = Counters {
                attacks: &mut fl.frags.attacks,
                by_count: &mut fl.frags.by_count,
            };
            let msgs = fl.messages.get_or_insert_default();
            let pushed = msgs.push(
                ty,
                &f,
                data,
                e.frame,
                limits,
                &mut self.budget,
                &mut c,
                &mut out,
                &mut frames,
            );
            match pushed {
                Pushed::Stored { opened } => e.opens |= opened,
                Pushed::Complete { count, opened } => {
                    e.opens |= opened;
                    e.completes.get_or_insert(count);
                    self.completed.keep(&out, &frames, as_type(p, ty));
                }
                Pushed::Refused => {}
            }
        }
        (self.reassembled, self.fragment_frames) = (out, frames);
        if self.budget.used > self.budget.limit {
            self.evict_elsewhere();
        }
    }

    /// The messages the last datagram completed, each as a reassembled packet after the
    /// datagram's own event: bare bytes, not a datagram.
    #[inline]
    pub(super) fn emit_completed<S: super::Sink + ?Sized>(
        &mut self,
        sink: &mut super::Watch<'_, S>,
        e: &super::PacketEvent<'_>,
        record: bool,
    ) {
        if self.completed.len == 0 {
            return;
        }
        let done = &mut self.completed;
        for (i, (bytes, frames)) in done.messages[..done.len].iter().enumerate() {
            let v = match done.types.get(i).copied().flatten() {
                Some(ty) => self.validator.message(ty, bytes, &mut done.dissection),
                None => {
                    done.dissection = Default::default();
                    Verdict {
                        status: super::Status::Ok,
                        ..Verdict::default()
                    }
                }
            };
            sink.pass(&super::PacketEvent {
                kind: super::Kind::Reassembled,
                payload: bytes,
                size: bytes.len() as u32,
                status: v.status,
                crc: None,
                sequence: None,
                packet_type: v.packet_type,
                ack: None,
                ack_bits: None,
                fragment: None,
                fault: v.fault,
                seq_event: None,
                completes: None,
                opens: false,
                fragment_frames: frames,
                dissection: record.then_some(&done.dissection),
                messages: &[],
                ip_fragments: 0,
                truncated: false,
                over_budget: false,
                ..*e
            });
        }
        done.len = 0;
    }

    /// Frees other flows' messages while over the budget.
    pub(super) fn evict_messages_elsewhere(&mut self) {
        for fl in &mut self.flows {
            if let Some(r) = fl.runs.as_mut() {
                let mut c = super::msgruns::Counters {
                    attacks: &mut fl.frags.attacks,
                    by_count: &mut fl.frags.by_count,
                };
                while r.bytes_held > 0 && self.budget.used > self.budget.limit {
                    if !r.evict_oldest_fragment(&mut self.budget, &mut c) {
                        break;
                    }
                }
            }
            let Some(m) = fl.messages.as_mut() else { continue };
            let mut c = Counters {
                attacks: &mut fl.frags.attacks,
                by_count: &mut fl.frags.by_count,
            };
            while m.bytes_held > 0 && self.budget.used > self.budget.limit {
                if !m.evict_oldest(&mut self.budget, &mut c, true) {
                    break;
                }
            }
            if self.budget.used <= self.budget.limit {
                break;
            }
        }
    }

    /// A flow's messages still waiting, given up at the end.
    pub(super) fn finish_messages(fl: &mut super::FlowState, budget: &mut Budget) {
        if let Some(r) = fl.runs.as_mut() {
            let mut c = super::msgruns::Counters {
                attacks: &mut fl.frags.attacks,
                by_count: &mut fl.frags.by_count,
            };
            r.finish(budget, &mut c);
        }
        if let Some(m) = fl.messages.as_mut() {
            let mut c = Counters {
                attacks: &mut fl.frags.attacks,
                by_count: &mut fl.frags.by_count,
            };
            m.finish(budget, &mut c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(id: u32, count: u32, offset: u32, total: u32, len: u32) -> MessageFragment {
        MessageFragment {
            key: [1, 0, 7],
            id,
            count,
            offset: Some(offset),
            total: Some(total),
            data_at: 0,
            data_len: len,
            run: None,
        }
    }

    const LIMITS: Limits = Limits {
        max_message: 1 << 20,
        fragment_size: 4,
    };

    #[test]
    fn fragments_placed_by_offset_in_any_order_make_the_message() {
        let (mut r, mut b) = (MessageReassembly::default(), Budget::new(1 << 20));
        let (mut attacks, mut by_count) = (AttackCounters::default(), BTreeMap::new());
        let mut c = Counters {
            attacks: &mut attacks,
            by_count: &mut by_count,
        };
        let (mut out, mut frames) = (Vec::new(), Vec::new());
        let p = r.push(
            8,
            &frag(1, 2, 3, 5, 2),
            b"de",
            11,
            LIMITS,
            &mut b,
            &mut c,
            &mut out,
            &mut frames,
        );
        assert_eq!(p, Pushed::Stored { opened: true });
        let p = r.push(
            8,
            &frag(1, 2, 3, 5, 2),
            b"de",
            12,
            LIMITS,
            &mut b,
            &mut c,
            &mut out,
            &mut frames,
        );
        assert_eq!(p, Pushed::Refused);
        let p = r.push(
            8,
            &frag(0, 2, 0, 5, 3),
            b"abc",
            13,
            LIMITS,
            &mut b,
            &mut c,
            &mut out,
            &mut frames,
        );
        assert_eq!(
            p,
            Pushed::Complete {
                count: 2,
                opened: false
            }
        );
        assert_eq!(
            (out.as_slice(), frames.as_slice()),
            (&b"abcde"[..], &[13, 11][..])
        );
        // Past the total, over the maximum, a number past the count: refused, counted.
        for f in [
            frag(0, 2, 4, 5, 2),
            frag(0, 2, 0, 2 << 20, 2),
            frag(3, 2, 0, 5, 1),
        ] {
            let p = r.push(9, &f, b"xy", 14, LIMITS, &mut b, &mut c, &mut out, &mut frames);
            assert_eq!(p, Pushed::Refused);
        }
        r.finish(&mut b, &mut c);
        assert_eq!(b.used, 0);
        assert_eq!(
            (
                attacks.duplicate,
                attacks.offset_past_total,
                attacks.oversize,
                attacks.id_out_of_range
            ),
            (1, 1, 1, 1)
        );
        assert_eq!((by_count[&2].seen, by_count[&2].completed), (1, 1));
    }

    /// Numbers up to 32 bits cost what is sent, and a flood of made-up groups is held
    /// within the budget.
    #[test]
    fn memory_stays_within_the_budget() {
        let (mut r, mut b) = (MessageReassembly::default(), Budget::new(64 << 10));
        let (mut attacks, mut by_count) = (AttackCounters::default(), BTreeMap::new());
        let mut c = Counters {
            attacks: &mut attacks,
            by_count: &mut by_count,
        };
        let (mut out, mut frames) = (Vec::new(), Vec::new());
        for i in 0..10_000u32 {
            let mut f = frag(0, 1 << 19, 1 << 19, 1 << 20, 1000);
            f.key = [i as i64, 0, 0];
            f.id = (i * 7919) % (1 << 19);
            r.push(
                12,
                &f,
                &[0; 1000],
                1,
                LIMITS,
                &mut b,
                &mut c,
                &mut out,
                &mut frames,
            );
            assert!(b.used <= b.limit + (1 << 20) + (1 << 17), "{}", b.used);
            assert!(r.groups.len() <= MAX_GROUPS);
        }
        r.finish(&mut b, &mut c);
        assert_eq!(b.used, 0);
        assert!(attacks.evicted_for_memory > 0);
    }
}
