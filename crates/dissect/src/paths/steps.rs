//! A path as a filter or an Info template names it (`objects[3].position.x`), resolved to
//! its steps, and which fields of a dissection are occurrences of it.

use crate::model::{Dissection, Label, ROOT};
use crate::program::Program;

/// One step of a path: a field or part name, and an element index if given.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: String,
    /// The definition nodes of that name (sorted).
    pub nodes: Vec<u32>,
    pub index: Option<u32>,
}

/// `objects[3].position.x` → `objects.position.x`.
pub fn strip_indices(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut depth = 0u32;
    for c in word.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The path's steps, each with the definition nodes of its name (a type prefix dropped).
pub fn steps(p: &Program, word: &str, typed: bool) -> Vec<Step> {
    let mut parts: Vec<&str> = word.split('.').collect();
    if typed {
        parts.remove(0);
    }
    parts
        .iter()
        .map(|part| {
            let (name, index) = match part.split_once('[') {
                Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<u32>().ok()),
                None => (*part, None),
            };
            let nodes = p
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.name == name)
                .map(|(i, _)| i as u32)
                .collect();
            Step {
                name: name.to_string(),
                nodes,
                index,
            }
        })
        .collect()
}

/// Whether field `i` is an occurrence of the path: its name and its ancestors' names
/// are the path's steps from the root (elements passed over, or matched to an index).
pub fn is_occurrence(segs: &[Step], d: &Dissection, i: usize) -> bool {
    let Some(last) = segs.last() else { return false };
    let Some(f) = d.fields.get(i) else { return false };
    // An element is an occurrence only of a path that ends in an index.
    if matches!(f.label, Label::Index(_)) && last.index.is_none() {
        return false;
    }
    let mut at = i as u32;
    let mut k = segs.len();
    let mut element: Option<u32> = None;
    // Bounded by the tree's depth: each step goes to a parent, which comes earlier.
    while k > 0 {
        let Some(f) = d.fields.get(at as usize) else {
            return false;
        };
        match f.label {
            Label::Index(n) => {
                element = Some(n);
                at = f.parent;
                continue;
            }
            Label::Node(n) if segs[k - 1].nodes.binary_search(&n).is_ok() => {}
            Label::Part(name) if name == segs[k - 1].name => {}
            _ => return false,
        }
        if segs[k - 1].index.is_some_and(|want| element != Some(want)) {
            return false;
        }
        element = None;
        k -= 1;
        if f.parent >= at && f.parent != ROOT {
            return false;
        }
        at = f.parent;
    }
    at == ROOT
}
