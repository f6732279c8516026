//! The profile counted from the validation plan: a datagram the plan reads is walked
//! once more over the plan's leaf table ([`gpcap_dissect::leaves`]), its leaves logged
//! into a reused buffer and counted into the same rows, values and deltas as the field
//! tree's — without the tree. Fixed-width leaves come as compact records (slot,
//! value) whose row and way of counting are resolved once per slot ([`Desc`]), not per
//! occurrence. A datagram the plan cannot say (a fault, a fragment, a
//! node only the interpreter reads) is dissected into a tree here and counted as before:
//! `tests/bandwidth_fast.rs` holds the two ways equal.

use super::slots::Slots;
use super::values::Delta;
use super::{Bandwidth, Category, Counting, Key, NONE};
use gpcap_dissect::leaves::{GENERAL, LADDER_FLAGS, LeafLog, Walks, compact_parts};
use gpcap_dissect::plan::NO_ENTRY;
use gpcap_dissect::program::Kind as NodeKind;
use gpcap_dissect::{Dissection, Dissector, Label, Value, prims};
use gpcap_engine::{Config, Kind, PacketEvent, Status};
use gpcap_wire::bits::{CompressedFloat, smallest_three_component};

type SlotKey = (u32, u8, u32, Label);

/// What the plan-counted profile keeps between datagrams.
#[derive(Clone)]
pub struct Fast {
    /// The profile's program, held here so that a datagram's walk needs no clone of it
    /// (an atomic increment and decrement per datagram).
    program: std::sync::Arc<gpcap_dissect::Program>,
    log: LeafLog,
    /// Datagrams the plan cannot say, dissected here.
    dissector: Dissector,
    tree: Dissection,
    /// Each context's path in the current datagram.
    ctx_paths: Vec<u32>,
    /// By leaf slot ([`gpcap_dissect::leaves::Logged::slot`]): the (type, direction,
    /// parent path, label) last there, and the row and category it went to.
    slot_rows: Slots<(SlotKey, usize, Category)>,
    /// By compact slot ([`gpcap_dissect::leaves::compact_slot`]): where its records go.
    compact: Slots<Desc>,
    /// Descriptors displaced from `compact` by another key (a header's slots take
    /// each packet type's in turn), found again here instead of resolved.
    spare: hashbrown::HashMap<(u32, (u32, u8, u32)), Desc>,
    /// Which types are worth walking.
    walks: Walks,
    /// Datagrams counted from the plan, and from a tree.
    pub planned: u64,
    pub trees: u64,
}

impl std::fmt::Debug for Fast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fast")
            .field("planned", &self.planned)
            .field("trees", &self.trees)
            .finish()
    }
}

/// Whether `cfg`'s profile can be counted from the plan, the engine recording no
/// trees: a definition the plan reads, whose datagrams are read alone (no messages,
/// nothing the conversation tracks, no inner layers).
pub fn eligible(cfg: &Config) -> bool {
    cfg.stack.is_none()
        && cfg.program.as_deref().is_some_and(|p| {
            p.messages.is_none() && !p.params.tracks() && !p.params.msb && p.plan.header != NO_ENTRY
        })
}

impl Fast {
    pub fn new(program: std::sync::Arc<gpcap_dissect::Program>) -> Self {
        Fast {
            program: program.clone(),
            log: LeafLog::default(),
            dissector: Dissector::new(program.clone()),
            tree: Dissection::default(),
            ctx_paths: Vec::new(),
            slot_rows: Slots::new(
                slot_limit(program.plan.leaves.slots()),
                ((NONE, 0, NONE, Label::Index(0)), 0, Category::Field),
            ),
            compact: Slots::new(slot_limit(program.plan.leaves.slots() * 4), Desc::UNSET),
            spare: hashbrown::HashMap::new(),
            walks: Walks::default(),
            planned: 0,
            trees: 0,
        }
    }
}

/// `n` slots as a limit (a definition past `u32` slots names no more).
fn slot_limit(n: usize) -> u32 {
    n.min(u32::MAX as usize) as u32
}

/// Displaced descriptors kept at most (then forgotten: they are resolved again).
const SPARE: usize = 1 << 16;

impl Bandwidth {
    /// Counts `e` when the engine carries no tree: from the plan, or a tree made here.
    /// A reassembled packet counts only when read field by field, as with trees.
    pub(super) fn packet_untreed(&mut self, e: &PacketEvent<'_>) {
        let Some(mut f) = self.fast.take() else {
            return;
        };
        let ty = e.packet_type.unwrap_or(0);
        let walk = e.status == Status::Ok && e.fault.is_none() && e.fragment.is_none() && f.walks.worth(ty);
        let read = walk && f.log.read(&f.program, e.payload, ty);
        if walk {
            f.walks.tally(ty, read);
        }
        if read {
            f.planned += 1;
            if e.kind == Kind::Reassembled {
                self.reassembled += e.payload.len() as u64 * 8;
            }
            self.packet_leaves(e, &mut f);
        } else {
            f.trees += 1;
            f.dissector.dissect_into(e.payload, &mut f.tree);
            let tree = std::mem::take(&mut f.tree);
            if e.kind != Kind::Reassembled || !tree.fields.is_empty() {
                if e.kind == Kind::Reassembled {
                    self.reassembled += e.payload.len() as u64 * 8;
                }
                self.packet_bits(e, &tree);
            }
            f.tree = tree;
        }
        self.fast = Some(f);
    }

    /// The logged leaves of `e` into their rows.
    fn packet_leaves(&mut self, e: &PacketEvent<'_>, f: &mut Fast) {
        let mut at = self.begin_packet(e);
        f.ctx_paths.clear();
        for &(parent, label) in &f.log.ctxs {
            let pid = match f.ctx_paths.get(parent as usize) {
                Some(&parent) => self.label_path(parent, label),
                None => 0,
            };
            f.ctx_paths.push(pid);
        }
        for r in &f.log.recs {
            if r.slot != GENERAL {
                let parent = f.ctx_paths.get(r.ctx as usize).copied().unwrap_or(0);
                let key = (at.type_id, at.dir, parent);
                let Some(d) = f.compact.get_mut(r.slot) else {
                    continue;
                };
                if d.key != key {
                    let new = match f.spare.remove(&(r.slot, key)) {
                        Some(d) => d,
                        None => self.resolve(r.slot, &at, parent),
                    };
                    let mut old = std::mem::replace(d, new);
                    if old.key.1 != u8::MAX {
                        // Kept folded: what it counted is in its row.
                        self.fold_desc(&mut old);
                        debug_assert_eq!(old.occurrences, 0, "spare descriptors are folded");
                        if f.spare.len() >= SPARE {
                            f.spare.clear();
                        }
                        f.spare.insert((r.slot, old.key), old);
                    }
                }
                // Unset: the table has no such leaf, which the walk never logs.
                debug_assert!(d.key.1 != u8::MAX, "compact slot {} resolved", r.slot);
                if d.key.1 != u8::MAX {
                    self.count_compact(&mut at, d, r.value);
                }
                continue;
            }
            let Some(l) = f.log.leaves.get(r.value as usize) else {
                continue;
            };
            if l.bits == 0 {
                continue;
            }
            let parent = f.ctx_paths.get(l.ctx as usize).copied().unwrap_or(0);
            // A leaf slot of the plan mostly goes to the same row: the same label (a
            // smallest-three's parts are named by the largest) under the same parent,
            // in datagrams of the same type.
            let key = (at.type_id, at.dir, parent, l.label);
            let (row, cat) = match f.slot_rows.get(l.slot) {
                Some((k, row, cat)) if same(k, key) => (row, cat),
                _ => {
                    let pid = self.label_path(parent, l.label);
                    let cat = self.category(l.kind, l.node);
                    let row = self.row(Key {
                        dir: at.dir,
                        type_id: at.type_id,
                        msg_type: NONE,
                        path: pid,
                        cat,
                    });
                    f.slot_rows.set(l.slot, (key, row, cat));
                    (row, cat)
                }
            };
            let value = l.valued.then_some((l.raw, l.value));
            self.count_row(&mut at, row, cat, l.node, l.kind, l.bits, value);
        }
        self.end_packet_bits(at, None);
    }
}

/// How a compact record's value is counted.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Not at all (a row without value estimates).
    None,
    /// An integer (int, bits, bool, a smallest-three's largest).
    Int,
    /// A compressed float's integer, and its float (no resolution to quantize at): the
    /// floats' range is made from the integers' when folded, dequantizing being
    /// monotonic (each step a correctly rounded operation by a constant) and finite on
    /// every integer it can carry (`CompressedFloat::new` holds the range finite).
    Quantized(CompressedFloat),
    /// As the tree's field would be: a compressed float at a `--what-if` resolution.
    Float(CompressedFloat),
    /// A smallest-three's component (its float only, its range from the integers').
    Component(u32),
    /// As the tree's field would be: a component at a `--what-if` resolution.
    ComponentAt(u32),
}

/// Where a compact slot's records go, for the key it was resolved for: (type,
/// direction, path of the run's context).
///
/// What its records add to the row is kept here and folded into the row when the
/// descriptor is displaced or the profile read ([`Bandwidth::fold_desc`]): a row's
/// counters, range and packets were a line or three to touch per record.
#[derive(Debug, Clone, Copy)]
struct Desc {
    key: (u32, u8, u32),
    row: usize,
    bits: u64,
    node: u32,
    mode: Mode,
    /// Records since the last fold.
    occurrences: u64,
    /// Values since the last fold (of the modes whose range is kept here), their range.
    values: u64,
    min: i64,
    max: i64,
    /// The packet it last counted in its row's packets.
    last_packet: u64,
    /// Its row's distinct values are capped: no more to count there.
    capped: bool,
    /// Its row's index among its type's, where previous values are kept.
    local: u32,
    /// Deltas since the last fold.
    delta: Delta,
}

impl Desc {
    const UNSET: Desc = Desc {
        key: (NONE, u8::MAX, NONE),
        row: 0,
        bits: 0,
        node: NONE,
        mode: Mode::None,
        occurrences: 0,
        values: 0,
        min: 0,
        max: 0,
        last_packet: 0,
        capped: false,
        local: 0,
        delta: Delta {
            samples: 0,
            bits: 0,
            width: 0,
            not_tracked: 0,
        },
    };

    /// One more value in the range kept here.
    #[inline(always)]
    fn range(&mut self, v: i64) {
        if self.values == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.values += 1;
    }
}

impl Bandwidth {
    /// The row of compact slot `slot` under a run whose context has path `parent`, and
    /// how its values count: the path the tree would give it (the run's structs, the
    /// leaf, its part).
    #[cold]
    fn resolve(&mut self, slot: u32, at: &Counting, parent: u32) -> Desc {
        let Some(p) = self.program.clone() else {
            return Desc::UNSET;
        };
        let (leaf, part, largest) = compact_parts(slot);
        let table = &p.plan.leaves;
        let n = table.entries.len() as u32;
        if leaf / 8 >= n {
            // A relative list's index flag: `index.plus_one` under the list's path.
            let Some(e) = table.entries.get((leaf / 8 - n) as usize).copied() else {
                return Desc::UNSET;
            };
            let Some(&flag) = LADDER_FLAGS.get(part as usize) else {
                return Desc::UNSET;
            };
            let path = self.label_path(parent, Label::Part("index"));
            let path = self.label_path(path, Label::Part(flag));
            return self.compact_row(at, parent, path, e.node, ("bool", 1, Mode::Int));
        }
        let Some(e) = table.entries.get((leaf / 8) as usize).copied() else {
            return Desc::UNSET;
        };
        let Some(kind) = p.nodes.get(e.node as usize).map(|n| &n.kind) else {
            return Desc::UNSET;
        };
        let mut path = parent;
        for &s in table
            .chains
            .get(e.chain.0 as usize..(e.chain.0 + e.chain.1) as usize)
            .unwrap_or(&[])
        {
            path = self.label_path(path, Label::Node(s));
        }
        path = self.label_path(path, Label::Node(e.node));
        let (name, bits, mode) = match *kind {
            NodeKind::CompressedVector(cf) if part > 0 => {
                path = self.label_path(path, Label::Part(prims::part_name(kind, part as usize - 1, 0)));
                ("compressed-float", cf.bits, Mode::Quantized(cf))
            }
            NodeKind::SmallestThree(b) if part > 0 => {
                let k = part as usize - 1;
                path = self.label_path(path, Label::Part(prims::part_name(kind, k, u64::from(largest))));
                let mode = if k == 0 { Mode::Int } else { Mode::Component(b) };
                ("bits", if k == 0 { 2 } else { b }, mode)
            }
            NodeKind::CompressedFloat(cf) => ("compressed-float", cf.bits, Mode::Quantized(cf)),
            NodeKind::Bits(n) => ("bits", n, Mode::Int),
            NodeKind::Bool => ("bool", 1, Mode::Int),
            NodeKind::Int { min, max } => (
                "int",
                gpcap_wire::bits::int_width(min, max).unwrap_or(0),
                Mode::Int,
            ),
            _ => return Desc::UNSET,
        };
        self.compact_row(at, parent, path, e.node, (name, bits, mode))
    }

    /// The row of path `path` for a compact slot of node `node`, as `name` in `bits`
    /// bits counted as `mode`: the kind and step its values say set, as `values` would
    /// set them on the first.
    fn compact_row(
        &mut self,
        at: &Counting,
        parent: u32,
        path: u32,
        node: u32,
        (name, bits, mode): (&'static str, u32, Mode),
    ) -> Desc {
        let cat = self.category(name, node);
        let row = self.row(Key {
            dir: at.dir,
            type_id: at.type_id,
            msg_type: NONE,
            path,
            cat,
        });
        let r = &mut self.rows[row];
        let mode = match mode {
            _ if !cat.has_values() => Mode::None,
            Mode::Quantized(cf) if r.resolution.is_some() => Mode::Float(cf),
            Mode::Component(b) if r.resolution.is_some() => Mode::ComponentAt(b),
            m => m,
        };
        if cat.has_values() && r.kind.is_empty() {
            // What `values` would have set on the first value.
            r.kind = name;
            r.step = match mode {
                Mode::Quantized(cf) | Mode::Float(cf) if cf.max_int > 0 => {
                    f64::from(cf.max - cf.min) / f64::from(cf.max_int)
                }
                _ => 0.0,
            };
        }
        Desc {
            key: (at.type_id, at.dir, parent),
            row,
            bits: u64::from(bits),
            node,
            mode,
            local: self.rows[row].local,
            ..Desc::UNSET
        }
    }

    /// One compact record of value `v` for the row `d` names: counted in `d`, the
    /// distinct values and the delta in the row.
    #[inline]
    fn count_compact(&mut self, at: &mut Counting, d: &mut Desc, v: i64) {
        let row = d.row;
        d.occurrences += 1;
        at.covered += d.bits;
        if d.last_packet != self.events {
            d.last_packet = self.events;
            self.count_packet(row);
        }
        let value = match d.mode {
            Mode::None => return,
            Mode::Component(_) => {
                // A float, no resolution: no integer, no delta.
                d.range(v);
                return;
            }
            Mode::Int | Mode::Quantized(_) => {
                d.range(v);
                let v = i128::from(v);
                if !d.capped
                    && let Some(r) = self.rows.get_mut(row)
                {
                    let s = r.ints.get_or_insert_with(Default::default);
                    s.tally(v);
                    d.capped = s.capped;
                }
                // The row's integers are there (made by the first value): its delta.
                let ord = self.ordinal(d.local);
                let seen = self.previous(&mut at.prev, at.keep, d.local, ord, v);
                d.delta.see(seen);
                return;
            }
            Mode::Float(cf) => {
                let f = Value::Float(cf.dequantize(v as u32));
                match self.values(row, d.node, "compressed-float", v as u64, f) {
                    Some(x) => x,
                    None => return,
                }
            }
            Mode::ComponentAt(b) => {
                let f = Value::Float(smallest_three_component(v as u32, b));
                match self.values(row, d.node, "bits", v as u64, f) {
                    Some(x) => x,
                    None => return,
                }
            }
        };
        self.delta(&mut at.prev, at.keep, row, value);
    }

    /// What `d` counted since its last fold, into its row: as many records counted
    /// there one by one would have left it.
    fn fold_desc(&mut self, d: &mut Desc) {
        let (occurrences, n, lo, hi, delta) = (d.occurrences, d.values, d.min, d.max, d.delta);
        d.occurrences = 0;
        d.values = 0;
        d.delta = Delta::default();
        if occurrences == 0 {
            return;
        }
        let Some(r) = self.rows.get_mut(d.row) else {
            return;
        };
        r.bits += occurrences * d.bits;
        r.occurrences += occurrences;
        r.declared = r.declared.max(d.bits);
        if n == 0 {
            return;
        }
        if matches!(d.mode, Mode::Int | Mode::Quantized(_)) {
            let s = r.ints.get_or_insert_with(Default::default);
            s.absorb(n, lo.into(), hi.into());
            s.delta.merge(&delta);
        }
        let float = |v: i64| match d.mode {
            Mode::Quantized(cf) => Some(f64::from(cf.dequantize(v as u32))),
            Mode::Component(b) => Some(f64::from(smallest_three_component(v as u32, b))),
            _ => None,
        };
        if let (Some(a), Some(b)) = (float(lo), float(hi)) {
            r.floats.get_or_insert_with(Default::default).absorb(n, a, b);
        }
    }

    /// Every descriptor's counts into its row, before the rows are read or merged.
    pub(super) fn fold_fast(&mut self) {
        let Some(mut f) = self.fast.take() else {
            return;
        };
        for d in f.compact.values_mut() {
            self.fold_desc(d);
        }
        self.fast = Some(f);
    }
}

/// Whether two slot keys are one: part names by address (they are the primitives'
/// constants; another address of the same name only misses the cache), without the
/// string comparison that was a twentieth of `--bits`.
#[inline(always)]
fn same(a: SlotKey, b: SlotKey) -> bool {
    let label = match (a.3, b.3) {
        (Label::Part(x), Label::Part(y)) => std::ptr::eq(x.as_ptr(), y.as_ptr()) && x.len() == y.len(),
        (x, y) => x == y,
    };
    label && (a.0, a.1, a.2) == (b.0, b.1, b.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A big definition's profile holds the slots its datagrams reach, not the span of
    /// its slots: nothing up front (every slot's row was allocated at the start), and
    /// one entry for a slot past all the others (as a relative list's index flags are),
    /// where the table grew to it (about 100 MB per shard for 60k fields).
    #[test]
    fn a_big_definition_costs_the_slots_met() {
        let mut text = String::from(
            "protocol \"big\" {\n    id 1\n    ports 1\n    types 2\n}\nheader {\n    bits crc 32 role=crc\n    bits sequence 16 role=sequence\n    int type 0 1 role=type\n}\npacket 1 \"p\" {\n",
        );
        for i in 0..3000 {
            text.push_str(&format!("    bool f{i}\n"));
        }
        text.push_str("}\n");
        let program = crate::compile_definition("big.kdl", &text).unwrap();
        let span = program.plan.leaves.slots() * 4;
        assert!(span > super::super::slots::DENSE_SLOTS as usize, "{span}");
        let mut f = Fast::new(program);
        assert_eq!(f.slot_rows.held() + f.compact.held(), 0);
        assert!(f.compact.get_mut(span as u32 - 1).is_some());
        assert_eq!(f.compact.held(), 1);
    }
}
