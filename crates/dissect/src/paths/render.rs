//! A field's path as people read it (`objects[3].position.x`), rendered from the labels
//! of a dissection's field tree.

use crate::model::{Dissection, Label};
use crate::program::Program;

/// A label's name: its node's, a part's, or nothing for an element index.
pub fn label_name(p: &Program, l: Label) -> &str {
    match l {
        Label::Node(n) => p.nodes.get(n as usize).map(|n| n.name.as_str()).unwrap_or("?"),
        Label::Index(_) => "",
        Label::Part(s) => s,
    }
}

/// Labels from field `i` up to the root.
pub(crate) fn ancestors(d: &Dissection, i: u32) -> impl Iterator<Item = Label> + '_ {
    let mut at = i;
    std::iter::from_fn(move || {
        let f = d.fields.get(at as usize)?;
        at = f.parent;
        Some(f.label)
    })
}

/// Joins labels given leaf first: `objects[3].position.x`.
pub(crate) fn render_path(p: &Program, leaf_first: &[Label]) -> String {
    let mut s = String::new();
    for l in leaf_first.iter().rev() {
        match l {
            Label::Index(i) => s.push_str(&format!("[{i}]")),
            other => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(label_name(p, *other));
            }
        }
    }
    s
}

/// The path of field `i`, e.g. `objects[3].position.x`.
pub fn path_of(p: &Program, d: &Dissection, i: usize) -> String {
    let labels: Vec<Label> = ancestors(d, i as u32).collect();
    render_path(p, &labels)
}
