//! The profile counted from the validation plan: a datagram the plan reads is walked
//! once more over the plan's leaf table ([`crate::dissect::leaves`]), its leaves logged
//! into a reused buffer and counted into the same rows, values and deltas as the field
//! tree's — without the tree. A datagram the plan cannot say (a fault, a fragment, a
//! node only the interpreter reads) is dissected into a tree here and counted as before:
//! `tests/bandwidth_fast.rs` holds the two ways equal.

use super::{Bandwidth, Category, Key, NONE};
use crate::dissect::leaves::LeafLog;
use crate::dissect::plan::NO_ENTRY;
use crate::dissect::{Dissection, Dissector, Label};
use crate::engine::{Config, Kind, PacketEvent, Status};

type SlotKey = (u32, u8, u32, Label);

/// What the plan-counted profile keeps between datagrams.
#[derive(Clone)]
pub struct Fast {
    log: LeafLog,
    /// Datagrams the plan cannot say, dissected here.
    dissector: Dissector,
    tree: Dissection,
    /// Each context's path in the current datagram.
    ctx_paths: Vec<u32>,
    /// By leaf slot ([`crate::dissect::leaves::Logged::slot`]): the (type, direction,
    /// parent path, label) last there, and the row and category it went to.
    slot_rows: Vec<(SlotKey, usize, Category)>,
    /// By packet type: datagrams the walk read, and gave up on.
    walks: Vec<(u32, u32)>,
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
    pub fn new(program: std::sync::Arc<crate::dissect::Program>) -> Self {
        Fast {
            log: LeafLog::default(),
            dissector: Dissector::new(program.clone()),
            tree: Dissection::default(),
            ctx_paths: Vec::new(),
            slot_rows: vec![
                ((NONE, 0, NONE, Label::Index(0)), 0, Category::Field);
                program.plan.leaves.slots()
            ],
            walks: Vec::new(),
            planned: 0,
            trees: 0,
        }
    }
}

/// Walks given up on a type, none read, before its datagrams go straight to a tree.
const HOPELESS: u32 = 64;

/// Types whose walks are tallied (others are always walked).
const TALLIED: usize = 1 << 12;

impl Fast {
    /// Whether to walk a datagram of type `ty`: not when every one of its type so far
    /// made the walk give up (a node only the interpreter reads), which dissected each
    /// twice (example-shooter.kdl, ~10% slower). Either way the rows are the same.
    fn worth(&self, ty: u32) -> bool {
        self.walks
            .get(ty as usize)
            .is_none_or(|&(read, gave_up)| read > 0 || gave_up < HOPELESS)
    }

    fn tally(&mut self, ty: u32, read: bool) {
        let i = ty as usize;
        if i >= TALLIED {
            return;
        }
        if self.walks.len() <= i {
            self.walks.resize(i + 1, (0, 0));
        }
        let w = &mut self.walks[i];
        if read {
            w.0 = w.0.saturating_add(1);
        } else {
            w.1 = w.1.saturating_add(1);
        }
    }
}

impl Bandwidth {
    /// Counts `e` when the engine carries no tree: from the plan, or a tree made here.
    /// A reassembled packet counts only when read field by field, as with trees.
    pub(super) fn packet_untreed(&mut self, e: &PacketEvent<'_>) {
        let (Some(mut f), Some(p)) = (self.fast.take(), self.program.clone()) else {
            return;
        };
        let ty = e.packet_type.unwrap_or(0);
        let walk = e.status == Status::Ok && e.fault.is_none() && e.fragment.is_none() && f.worth(ty);
        let read = walk && f.log.read(&p, e.payload, ty);
        if walk {
            f.tally(ty, read);
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
        for l in &f.log.leaves {
            if l.bits == 0 {
                continue;
            }
            let parent = f.ctx_paths.get(l.ctx as usize).copied().unwrap_or(0);
            // A leaf slot of the plan mostly goes to the same row: the same label (a
            // smallest-three's parts are named by the largest) under the same parent,
            // in datagrams of the same type.
            let key = (at.type_id, at.dir, parent, l.label);
            let (row, cat) = match f.slot_rows.get(l.slot as usize) {
                Some(&(k, row, cat)) if same(k, key) => (row, cat),
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
                    if let Some(c) = f.slot_rows.get_mut(l.slot as usize) {
                        *c = (key, row, cat);
                    }
                    (row, cat)
                }
            };
            let value = l.valued.then_some((l.raw, l.value));
            self.count_row(&mut at, row, cat, l.node, l.kind, l.bits, value);
        }
        self.end_packet_bits(at, None);
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
