//! How many fields a definition becomes once every struct is written out where it is
//! used. A struct is compiled once and shared, but paths, validation plans and export
//! columns copy it at each use: ten uses of a struct of ten uses are a hundred copies.
//! The field limit counts these copies, so a short definition cannot expand into
//! billions of fields (an array's element is counted once: its copies are read, not laid
//! out).

use super::program::{Block, Kind, Node, NodeId};

/// Nesting followed at most (the compiler refuses deeper definitions first).
const MAX_DEPTH: u32 = 64;

/// Expanded field counts of a compiled definition's nodes, each computed once.
pub struct Expansion<'a> {
    nodes: &'a [Node],
    children: &'a [NodeId],
    memo: Vec<Option<u64>>,
}

impl<'a> Expansion<'a> {
    pub fn new(nodes: &'a [Node], children: &'a [NodeId]) -> Self {
        Expansion {
            nodes,
            children,
            memo: vec![None; nodes.len()],
        }
    }

    fn ids(&self, b: Block) -> &'a [NodeId] {
        self.children
            .get(b.start as usize..(b.start as usize).saturating_add(b.len as usize))
            .unwrap_or(&[])
    }

    /// Fields node `id` expands to, itself included (saturating).
    pub fn node(&mut self, id: NodeId, depth: u32) -> u64 {
        if let Some(n) = self.memo.get(id as usize).copied().flatten() {
            return n;
        }
        let Some(node) = self.nodes.get(id as usize) else {
            return 0;
        };
        let mut n = 1u64;
        if depth < MAX_DEPTH {
            for b in node.kind.blocks() {
                n = n.saturating_add(self.block(b, depth + 1));
            }
        }
        if let Some(m) = self.memo.get_mut(id as usize) {
            *m = Some(n);
        }
        n
    }

    /// Fields `b` expands to.
    pub fn block(&mut self, b: Block, depth: u32) -> u64 {
        self.ids(b)
            .iter()
            .fold(0u64, |n, &id| n.saturating_add(self.node(id, depth)))
    }

    /// Where `b` passes the `left` fields still allowed (which it lowers): the innermost
    /// struct use on the way to the field that crosses, else that field. None: it fits.
    pub fn crossing(&mut self, b: Block, left: &mut u64, depth: u32) -> Option<NodeId> {
        for &id in self.ids(b) {
            let n = self.node(id, depth);
            if n <= *left {
                *left -= n;
                continue;
            }
            *left = left.saturating_sub(1);
            if depth < MAX_DEPTH {
                for inner in self.nodes[id as usize].kind.blocks() {
                    if let Some(x) = self.crossing(inner, left, depth + 1) {
                        let leaf = self.nodes[x as usize].kind.blocks().is_empty();
                        let group = matches!(
                            self.nodes[id as usize].kind,
                            Kind::Struct { .. } | Kind::Inline { .. }
                        );
                        return Some(if leaf && group { id } else { x });
                    }
                }
            }
            return Some(id);
        }
        None
    }
}
