//! Which column each field of a row fills, found in one pass over the row's fields.

use super::columns::{Col, Column};
use gpcap_dissect::{Dissection, Label, program::NodeId};

/// Places the fields of a row (or of a group's children) in their columns in one pass:
/// each column searching the fields made a 5,000-field type quadratic (25 s for 900
/// rows), and searching a group's children for each of its columns was a tenth of the
/// rows' CPU.
pub(super) struct Lookup {
    /// The column each definition node fills, indexed by node id less `base`
    /// (`u32::MAX`: none; hashing each field was 1% of an export).
    base: u32,
    column_of: Vec<u32>,
    /// (node, column), sorted, instead of `column_of` when the nodes are few and far
    /// apart (a group whose fields' ids span a big definition: a table over the span
    /// per group could take gigabytes).
    sparse: Vec<(NodeId, u32)>,
    /// The column of a relative list element's `index`, which no node fills.
    index: Option<u32>,
    /// Per enum name column: each of its nodes with the value column that node fills
    /// (the name is read from that column's field). A value column merged from two
    /// branches (`if` → an enum, `else` → a plain int of the same name) fills the name
    /// only where the enum's node was read; a name column shared by two enums' value
    /// columns reads each from its own, never from another name column.
    same_as: Vec<Option<Vec<(NodeId, u32)>>>,
    /// Per column: the field that fills it in the row being appended (reused).
    pub(super) at: Vec<Option<u32>>,
}

impl Lookup {
    pub(super) fn new(fields: &[Column]) -> Lookup {
        let nodes = || fields.iter().flat_map(|c| c.nodes.iter().copied());
        let base = nodes().min().unwrap_or(0);
        let size = nodes().max().map_or(0, |n| (n - base) as usize + 1);
        // Each node's value column (one: `add` puts a node in one); an enum's name
        // column reads the field its value column found.
        let is_name = |c: &Column| matches!(c.col, Col::EnumName { .. });
        let mut first: hashbrown::HashMap<NodeId, u32> = hashbrown::HashMap::new();
        let mut index = None;
        for (i, c) in fields.iter().enumerate() {
            if c.nodes.is_empty() && c.name == super::columns::LIST_INDEX {
                index = Some(i as u32);
            }
            if !is_name(c) {
                for &n in &c.nodes {
                    first.entry(n).or_insert(i as u32);
                }
            }
        }
        let same_as = fields
            .iter()
            .map(|c| {
                is_name(c).then(|| {
                    c.nodes
                        .iter()
                        .filter_map(|n| Some((*n, *first.get(n)?)))
                        .collect()
                })
            })
            .collect();
        let (mut column_of, mut sparse) = (Vec::new(), Vec::new());
        if size > 16 * first.len() + 256 {
            sparse = first.into_iter().collect();
            sparse.sort_unstable();
        } else {
            column_of = vec![u32::MAX; size];
            for (n, c) in first {
                if let Some(x) = column_of.get_mut((n - base) as usize) {
                    *x = c;
                }
            }
        }
        Lookup {
            base,
            column_of,
            sparse,
            index,
            same_as,
            at: vec![None; fields.len()],
        }
    }

    /// Finds each column's field among `fields` (the first that fills it).
    pub(super) fn place(&mut self, d: &Dissection, fields: impl Iterator<Item = u32>) {
        self.at.iter_mut().for_each(|a| *a = None);
        for i in fields {
            let c = match d.fields[i as usize].label {
                Label::Node(n) if self.column_of.is_empty() => self
                    .sparse
                    .binary_search_by_key(&n, |p| p.0)
                    .ok()
                    .and_then(|k| self.sparse.get(k))
                    .map(|p| p.1),
                Label::Node(n) => n
                    .checked_sub(self.base)
                    .and_then(|k| self.column_of.get(k as usize))
                    .copied()
                    .filter(|&c| c != u32::MAX),
                Label::Part("index") => self.index,
                _ => None,
            };
            if let Some(at) = c.and_then(|c| self.at.get_mut(c as usize)) {
                at.get_or_insert(i);
            }
        }
        for c in 0..self.at.len() {
            if let Some(sources) = &self.same_as[c] {
                let found = sources.iter().find_map(|&(node, from)| {
                    let i = (*self.at.get(from as usize)?)?;
                    matches!(d.fields[i as usize].label, Label::Node(n) if n == node).then_some(i)
                });
                self.at[c] = found;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{BooleanBuilder, UInt16Builder};
    use std::sync::Arc;

    /// A group whose few nodes lie far apart in a big definition is looked up in a
    /// sorted list, not a table over the whole span (which a hostile definition could
    /// make gigabytes); the first column of a node fills it, a later one reads it.
    #[test]
    fn few_far_nodes_are_looked_up_sparsely() {
        let column = |name: &str, nodes: Vec<NodeId>| Column {
            name: name.into(),
            nodes,
            col: Col::Bool(BooleanBuilder::new()),
            values: None,
        };
        let name = |name: &str, nodes: Vec<NodeId>| Column {
            col: Col::EnumName {
                names: Arc::new([]),
                keys: UInt16Builder::new(),
            },
            ..column(name, nodes)
        };
        let far = [column("a", vec![3, 60_000]), name("a_name", vec![3])];
        let l = Lookup::new(&far);
        assert!(l.column_of.is_empty());
        assert_eq!(l.sparse, [(3, 0), (60_000, 0)]);
        assert_eq!(l.same_as[1], Some(vec![(3, 0)]));
        // A name column shared by two enums' value columns reads each node from its own.
        let three = [
            column("s", vec![1]),
            column("s_2", vec![2]),
            name("s_name", vec![2, 4]),
            column("s_3", vec![4]),
        ];
        let l = Lookup::new(&three);
        assert_eq!(l.same_as, [None, None, Some(vec![(2, 1), (4, 3)]), None]);
        let near = [column("a", vec![3, 9]), column("b", vec![5])];
        let l = Lookup::new(&near);
        assert_eq!(l.column_of, [0, u32::MAX, 1, u32::MAX, u32::MAX, u32::MAX, 0]);
        assert!(l.sparse.is_empty());
    }
}
