//! Rows made from the leaf log ([`gpcap_dissect::leaves`]) instead of a field tree: the
//! columns of a table laid flat once (a slot per column, a group per struct, a scope
//! per list's child table), each logged leaf staged into its slot (the first wins, as
//! in the tree, where two nodes fill a leaf column), and a row appended when it completes — the next element of its list,
//! or the datagram's end. What the log cannot say the same way as the tree (a struct
//! that may be read with no leaf, a leaf of no bits, a struct or list column two nodes
//! fill) leaves the table to the tree, and
//! what the walk gives up on leaves the datagram to it: `logged/tests.rs` holds the
//! two equal, array by array.

use super::children::Key;
use super::columns::{Col, Column, LIST_INDEX, TypeColumns};
use gpcap_dissect::leaves::{GENERAL, LeafLog, compact_parts};
use gpcap_dissect::program::{Block, Kind, NodeId};
use gpcap_dissect::{Label, Program, Value, prims};

/// Where a (group, node) of a scope goes.
#[derive(Debug, Clone, Copy)]
enum Target {
    Leaf(u32),
    Group(u32),
    List { slot: u32, scope: u32 },
}

/// Where a context of the log being read goes.
#[derive(Debug, Clone, Copy)]
enum At {
    Skip,
    Group {
        scope: u32,
        group: u32,
    },
    List {
        scope: u32,
        slot: u32,
        child: u32,
    },
    /// A leaf made of parts (a string: its `data` is its value).
    Leaf {
        scope: u32,
        slot: u32,
    },
}

/// One table's columns (the type's, or a list's child table) laid flat.
struct Scope {
    /// Column places from the root's fields down to this child table (empty: the root).
    path: Vec<u32>,
    targets: hashbrown::HashMap<(u32, NodeId), Target>,
    /// The slot of a relative list element's index.
    index: Option<u32>,
    /// The enum name columns, in the order [`fill`] meets them.
    names: Vec<Name>,
    staged: Vec<Option<(NodeId, Value)>>,
    present: Vec<bool>,
    open: bool,
    /// The element places of the row being staged (the lists above, then its own).
    key: Vec<u32>,
    /// By plan leaf (a compact slot's entry) read in the scope's own group, what
    /// [`Scope::resolve`] found: resolved once, not per record.
    cache: Vec<u32>,
    resolved: Vec<Resolved>,
    /// The groups of each resolved leaf's structs (ranges of it in [`Resolved`]).
    groups: Vec<u32>,
}

/// An enum name column: its group, and each of its nodes with the slot of the value
/// it names (only where that node filled it: [`super::lookup::Lookup`]'s rule).
struct Name {
    group: u32,
    sources: Vec<(NodeId, u32)>,
}

/// A compact slot's leaf in a scope: its slot, node, and the groups it is inside.
#[derive(Debug, Clone, Copy)]
struct Resolved {
    slot: u32,
    node: NodeId,
    groups: (u32, u32),
}

/// [`Scope::cache`]: not resolved yet; no column of this scope.
const UNSET: u32 = u32::MAX;
const NO_COLUMN: u32 = u32::MAX - 1;

/// Plan leaves a scope caches at most (16 KiB, made when the scope first reads a
/// compact leaf: one per table and list that has rows, per worker). A bigger plan's
/// leaves are resolved at each record instead, keeping nothing.
const CACHED_ENTRIES: usize = 1 << 12;

impl Scope {
    fn new(path: Vec<u32>) -> Scope {
        Scope {
            path,
            targets: hashbrown::HashMap::new(),
            index: None,
            names: Vec::new(),
            staged: Vec::new(),
            present: vec![false],
            open: false,
            key: Vec::new(),
            cache: Vec::new(),
            resolved: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// The leaf compact slot `slot` reads under group `group`, with the groups of its
    /// structs (None: no column of this scope).
    fn resolve(&mut self, p: &Program, slot: u32, mut group: u32) -> Option<Resolved> {
        let table = &p.plan.leaves;
        let (leaf, _, _) = compact_parts(slot);
        let e = table.entries.get((leaf / 8) as usize)?;
        let chain = table
            .chains
            .get(e.chain.0 as usize..(e.chain.0 + e.chain.1) as usize)
            .unwrap_or(&[]);
        let first = self.groups.len();
        for &st in chain {
            match self.targets.get(&(group, st)).copied() {
                Some(Target::Group(g)) => {
                    self.groups.push(g);
                    group = g;
                }
                _ => {
                    self.groups.truncate(first);
                    return None;
                }
            }
        }
        let Some(Target::Leaf(at)) = self.targets.get(&(group, e.node)).copied() else {
            self.groups.truncate(first);
            return None;
        };
        Some(Resolved {
            slot: at,
            node: e.node,
            groups: (first as u32, (self.groups.len() - first) as u32),
        })
    }

    /// [`Scope::resolve`], through the cache when `group` is the scope's own (a
    /// compact record's always is: its context is the run's, the root or an element);
    /// whether the answer is cached (if not, its groups are to be let go once used).
    #[inline]
    fn resolved(&mut self, p: &Program, slot: u32, group: u32) -> Option<(Resolved, bool)> {
        let entries = p.plan.leaves.entries.len();
        if group != 0 || entries > CACHED_ENTRIES {
            return self.resolve(p, slot, group).map(|r| (r, false));
        }
        if self.cache.is_empty() {
            self.cache = vec![UNSET; entries];
        }
        let entry = (compact_parts(slot).0 / 8) as usize;
        let at = match self.cache.get(entry).copied() {
            Some(UNSET) => {
                let at = match self.resolve(p, slot, group) {
                    Some(r) => {
                        self.resolved.push(r);
                        self.resolved.len() as u32 - 1
                    }
                    None => NO_COLUMN,
                };
                self.cache[entry] = at;
                at
            }
            Some(at) => at,
            // A list's index ladder: no column.
            None => return None,
        };
        self.resolved.get(at as usize).map(|r| (*r, true))
    }

    fn stage(&mut self, slot: u32, node: NodeId, value: Value) {
        if let Some(s @ None) = self.staged.get_mut(slot as usize) {
            *s = Some((node, value));
        }
    }
}

/// A table's rows from leaf logs.
pub(super) struct LogRows {
    scopes: Vec<Scope>,
    at: Vec<At>,
    parts: [u64; 4],
    key: Key,
}

impl LogRows {
    /// The flat layout of `columns` (laid out from `blocks` of `p`), or None when the
    /// log cannot fill them as the tree does.
    pub fn new(p: &Program, columns: &TypeColumns, blocks: &[Block]) -> Option<LogRows> {
        if !blocks.iter().all(|b| loggable(p, *b)) || !one_node_each(&columns.fields) {
            return None;
        }
        let mut scopes = vec![Scope::new(Vec::new())];
        lay(&columns.fields, 0, 0, &mut Vec::new(), &mut scopes);
        Some(LogRows {
            scopes,
            at: Vec::new(),
            parts: [0; 4],
            key: Key::default(),
        })
    }

    /// [`LogRows::new`] for the header's columns, which the tree fills from whichever
    /// root field has a header node: None too when a body reads a node of the header
    /// (an inline struct in both), whose value the tree may take from the body.
    pub fn header(p: &Program, columns: &TypeColumns, header: Block) -> Option<LogRows> {
        let mut nodes = hashbrown::HashSet::new();
        block_nodes(p, header, &mut nodes);
        let mut bodies = hashbrown::HashSet::new();
        for def in &p.packets {
            block_nodes(p, def.body, &mut bodies);
        }
        if let Some(b) = p.message_header() {
            block_nodes(p, b, &mut bodies);
        }
        if nodes.iter().any(|n| bodies.contains(n)) {
            return None;
        }
        LogRows::new(p, columns, &[header])
    }

    /// Appends the rows of the datagram whose leaves `log` holds: one to `columns`, and
    /// one per element to the child tables. `key`: the root row's frame and place.
    /// `header`: only the header's leaves (the packets table's `header` column).
    #[allow(clippy::too_many_arguments)]
    pub fn append(
        &mut self,
        columns: &mut TypeColumns,
        p: &Program,
        log: &LeafLog,
        payload: &[u8],
        key: &Key,
        header: bool,
    ) {
        self.key.frame = key.frame;
        self.key.row = key.row;
        open(&mut self.scopes, 0);
        self.at.clear();
        self.at.push(At::Group { scope: 0, group: 0 });
        let (recs, ctxs) = match header {
            true => log.header,
            false => (log.recs.len(), log.ctxs.len()),
        };
        for r in log.recs.get(..recs).unwrap_or(&[]) {
            if r.slot == GENERAL {
                let Some(l) = log.leaves.get(r.value as usize) else {
                    continue;
                };
                if l.ctx as usize >= self.at.len() {
                    self.activate(columns, log, l.ctx, payload);
                }
                self.general(l.ctx, l.label, l.node, l.value);
            } else {
                if r.ctx as usize >= self.at.len() {
                    self.activate(columns, log, r.ctx, payload);
                }
                self.compact(p, r.slot, r.ctx, r.value);
            }
        }
        self.activate(columns, log, (ctxs as u32).saturating_sub(1), payload);
        for s in (0..self.scopes.len()).rev() {
            if self.scopes[s].open {
                self.complete(columns, s, payload);
            }
        }
    }

    /// Resolves every context up to `ctx` (in the order the walk made them).
    #[inline(never)]
    fn activate(&mut self, columns: &mut TypeColumns, log: &LeafLog, ctx: u32, payload: &[u8]) {
        while (self.at.len() as u32) <= ctx {
            let Some(&(parent, label)) = log.ctxs.get(self.at.len()) else {
                return;
            };
            let parent = self.at.get(parent as usize).copied().unwrap_or(At::Skip);
            let at = self.resolve(columns, parent, label, payload);
            self.at.push(at);
        }
    }

    fn resolve(&mut self, columns: &mut TypeColumns, parent: At, label: Label, payload: &[u8]) -> At {
        match (parent, label) {
            (At::Group { scope, group }, Label::Node(n)) => {
                let s = &mut self.scopes[scope as usize];
                match s.targets.get(&(group, n)).copied() {
                    Some(Target::Group(g)) => {
                        s.present[g as usize] = true;
                        At::Group { scope, group: g }
                    }
                    Some(Target::List { slot, scope: child }) => {
                        s.stage(slot, n, Value::UInt(0));
                        At::List { scope, slot, child }
                    }
                    Some(Target::Leaf(slot)) => At::Leaf { scope, slot },
                    None => At::Skip,
                }
            }
            (At::List { scope, slot, child }, Label::Index(k)) => {
                if let Some(Some((_, Value::UInt(n)))) =
                    self.scopes[scope as usize].staged.get_mut(slot as usize)
                {
                    *n += 1;
                }
                if self.scopes[child as usize].open {
                    self.complete(columns, child as usize, payload);
                }
                let (parent, child) = (scope as usize, child as usize);
                let mut key = std::mem::take(&mut self.scopes[child].key);
                key.clear();
                key.extend_from_slice(&self.scopes[parent].key);
                key.push(k);
                self.scopes[child].key = key;
                open(&mut self.scopes, child);
                At::Group {
                    scope: child as u32,
                    group: 0,
                }
            }
            _ => At::Skip,
        }
    }

    /// A field the walk logged as the tree holds it.
    fn general(&mut self, ctx: u32, label: Label, node: NodeId, value: Value) {
        match (self.at.get(ctx as usize).copied().unwrap_or(At::Skip), label) {
            (At::Group { scope, group }, Label::Node(n)) => {
                let s = &mut self.scopes[scope as usize];
                if let Some(Target::Leaf(slot)) = s.targets.get(&(group, n)).copied() {
                    s.stage(slot, n, value);
                }
            }
            (At::Group { scope, group: 0 }, Label::Part("index")) => {
                let s = &mut self.scopes[scope as usize];
                if let Some(slot) = s.index {
                    s.stage(slot, node, value);
                }
            }
            (At::Leaf { scope, slot }, Label::Part("data")) => {
                self.scopes[scope as usize].stage(slot, node, value);
            }
            _ => {}
        }
    }

    /// A fixed-width leaf or part, logged by its plan slot.
    #[inline]
    fn compact(&mut self, p: &Program, slot: u32, ctx: u32, value: i64) {
        let At::Group { scope, group } = self.at.get(ctx as usize).copied().unwrap_or(At::Skip) else {
            return;
        };
        let s = &mut self.scopes[scope as usize];
        let Some((r, cached)) = s.resolved(p, slot, group) else {
            return;
        };
        for k in r.groups.0..r.groups.0 + r.groups.1 {
            if let Some(&g) = s.groups.get(k as usize) {
                s.present[g as usize] = true;
            }
        }
        if !cached {
            s.groups.truncate(r.groups.0 as usize);
        }
        let Some(kind) = p.nodes.get(r.node as usize).map(|n| &n.kind) else {
            return;
        };
        let (_, part, _) = compact_parts(slot);
        if part == 0 {
            s.stage(r.slot, r.node, prims::single(kind, value as u64, true).1);
            return;
        }
        if let Some(x) = self.parts.get_mut(part as usize - 1) {
            *x = value as u64;
        }
        let last = match kind {
            Kind::CompressedVector(_) => 3,
            Kind::SmallestThree(_) => 4,
            _ => return,
        };
        if part == last {
            let v = prims::parts_of(kind, &prims::Raw(self.parts), 0, true, &mut |_| {});
            s.stage(r.slot, r.node, v);
        }
    }

    /// Appends scope `s`'s staged row.
    fn complete(&mut self, columns: &mut TypeColumns, s: usize, payload: &[u8]) {
        let scope = &mut self.scopes[s];
        scope.open = false;
        if s == 0 {
            fill(&mut columns.fields, scope, &mut Cursor::default(), payload);
            columns.rows += 1;
            return;
        }
        let Some(child) = super::columns::child_in(&mut columns.fields, &scope.path) else {
            return;
        };
        self.key.path.clear();
        self.key.path.extend_from_slice(&scope.key);
        child.keys(&self.key);
        fill(&mut child.columns.fields, scope, &mut Cursor::default(), payload);
        child.columns.rows += 1;
    }
}

/// Starts scope `s`'s row: nothing staged, only its root group read.
fn open(scopes: &mut [Scope], s: usize) {
    let scope = &mut scopes[s];
    scope.staged.iter_mut().for_each(|x| *x = None);
    scope.present.iter_mut().for_each(|x| *x = false);
    scope.present[0] = true;
    scope.open = true;
    if s == 0 {
        scope.key.clear();
    }
}

/// Lays `fields` (group `group` of scope `scope`, at `path`) flat: slots and groups in
/// the order [`fill`] appends them.
fn lay(fields: &[Column], scope: usize, group: u32, path: &mut Vec<u32>, scopes: &mut Vec<Scope>) {
    for (i, c) in fields.iter().enumerate() {
        path.push(i as u32);
        match &c.col {
            Col::Group { fields, .. } => {
                let s = &mut scopes[scope];
                let g = s.present.len() as u32;
                s.present.push(false);
                for &n in &c.nodes {
                    s.targets.entry((group, n)).or_insert(Target::Group(g));
                }
                lay(fields, scope, g, path, scopes);
            }
            Col::List { child, .. } => {
                let child_scope = scopes.len() as u32;
                let s = &mut scopes[scope];
                let slot = s.staged.len() as u32;
                s.staged.push(None);
                for &n in &c.nodes {
                    s.targets.entry((group, n)).or_insert(Target::List {
                        slot,
                        scope: child_scope,
                    });
                }
                scopes.push(Scope::new(path.clone()));
                lay(&child.columns.fields, child_scope as usize, 0, path, scopes);
            }
            Col::EnumName { .. } => {
                let s = &mut scopes[scope];
                // A slot of its own, never staged: its value is read where it names.
                s.staged.push(None);
                // Its nodes for now: their value columns may come after it.
                s.names.push(Name {
                    group,
                    sources: c.nodes.iter().map(|&n| (n, u32::MAX)).collect(),
                });
            }
            _ => {
                let s = &mut scopes[scope];
                let slot = s.staged.len() as u32;
                s.staged.push(None);
                if c.nodes.is_empty() && c.name == LIST_INDEX && group == 0 {
                    s.index = Some(slot);
                }
                for &n in &c.nodes {
                    s.targets.entry((group, n)).or_insert(Target::Leaf(slot));
                }
            }
        }
        path.pop();
    }
    // Each name column's nodes, now that the group is laid, with their value columns.
    let s = &mut scopes[scope];
    for name in &mut s.names {
        if name.group == group {
            name.sources
                .retain_mut(|(n, at)| match s.targets.get(&(group, *n)) {
                    Some(Target::Leaf(v)) => {
                        *at = *v;
                        true
                    }
                    _ => false,
                });
        }
    }
}

/// Where [`fill`] is in a scope's flat layout: its slot, group and name column.
#[derive(Default)]
struct Cursor {
    slot: usize,
    group: usize,
    name: usize,
}

/// Appends a row of `fields` from `scope`'s staged slots, from `at` on.
fn fill(fields: &mut [Column], scope: &Scope, at: &mut Cursor, payload: &[u8]) {
    for c in fields {
        match &mut c.col {
            Col::Group { fields, valid, .. } => {
                at.group += 1;
                valid.push(scope.present.get(at.group).copied().unwrap_or(false));
                fill(fields, scope, at, payload);
                continue;
            }
            Col::EnumName { .. } => {
                let value = scope.names.get(at.name).and_then(|name| {
                    name.sources
                        .iter()
                        .find_map(|&(node, from)| match scope.staged.get(from as usize) {
                            Some(Some((n, v))) if *n == node => Some(*v),
                            _ => None,
                        })
                });
                c.col.append_value(value, payload);
                at.name += 1;
            }
            _ => {
                let value = scope.staged.get(at.slot).copied().flatten().map(|(_, v)| v);
                c.col.append_value(value, payload);
            }
        }
        at.slot += 1;
    }
}

/// Whether the log fills block `b`'s columns as the tree does: no leaf of no bits (the
/// tree holds its value, the log nothing), no struct that may be read with no leaf (the
/// tree holds it, empty).
fn loggable(p: &Program, b: Block) -> bool {
    p.block(b).iter().all(|&id| {
        let Some(node) = p.nodes.get(id as usize) else {
            return true;
        };
        match &node.kind {
            Kind::Struct { body } => loggable(p, *body) && never_empty(p, *body),
            k if zero_width(k) => false,
            k => k.blocks().into_iter().all(|b| loggable(p, b)),
        }
    })
}

/// Whether each struct and list column is filled by one node: one read of it per row.
/// A column two nodes fill (a struct in two branches, an inline struct used twice) is
/// filled in the tree by the first field only, with only that field's children; the
/// log, whose leaves name their struct but not which reading of it, cannot tell them
/// apart.
fn one_node_each(fields: &[Column]) -> bool {
    fields.iter().all(|c| match &c.col {
        Col::Group { fields, .. } => c.nodes.len() == 1 && one_node_each(fields),
        Col::List { child, .. } => c.nodes.len() == 1 && one_node_each(&child.columns.fields),
        _ => true,
    })
}

/// Every node of block `b` and of the blocks inside it, into `out`.
fn block_nodes(p: &Program, b: Block, out: &mut hashbrown::HashSet<NodeId>) {
    for &id in p.block(b) {
        if !out.insert(id) {
            continue;
        }
        if let Some(node) = p.nodes.get(id as usize) {
            for inner in node.kind.blocks() {
                block_nodes(p, inner, out);
            }
        }
    }
}

/// Whether reading block `b` always logs something.
fn never_empty(p: &Program, b: Block) -> bool {
    p.block(b).iter().any(|&id| {
        let Some(node) = p.nodes.get(id as usize) else {
            return false;
        };
        match &node.kind {
            Kind::If { .. } | Kind::Derived(_) => false,
            Kind::Struct { body } | Kind::Inline { body } => never_empty(p, *body),
            k => !zero_width(k),
        }
    })
}

fn zero_width(k: &Kind) -> bool {
    match k {
        Kind::Bits(n) => *n == 0,
        Kind::Int { min, max } => min == max,
        Kind::CompressedFloat(cf) | Kind::CompressedVector(cf) => cf.bits == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
