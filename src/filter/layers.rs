//! Filters by an inner layer's name (`reliable.sequence > 10`): the outer datagram's
//! fields that carry the layer (`dissect-as`, or `rest` fields with a stack of `-d`) are
//! dissected with the layer's definition when the filter is tested, and the test holds
//! when any carried datagram satisfies it. Each carried datagram is read alone: a packet
//! an inner layer reassembles from fragments is not (its fragments are tested one by one).

use crate::dissect::program::Kind as FieldKind;
use crate::dissect::{Dissection, Dissector, Program};
use crate::engine::PacketEvent;
use std::sync::Arc;

/// The outer definition and the layers inside it, outermost first.
#[derive(Clone)]
pub struct Stacked {
    pub outer: Arc<Program>,
    pub layers: Vec<Arc<Program>>,
}

impl std::fmt::Debug for Stacked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stacked({} layers)", self.layers.len())
    }
}

impl PartialEq for Stacked {
    fn eq(&self, o: &Stacked) -> bool {
        Arc::ptr_eq(&self.outer, &o.outer)
            && self.layers.len() == o.layers.len()
            && self.layers.iter().zip(&o.layers).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// The layer a field of `p` carries (an index in `stack`), as the engine's stack hands
/// it on: a declared `dissect-as` name, else a `rest` field without role to the first.
fn carried(p: &Program, stack: &[usize], layers: &[Arc<Program>], node: u32) -> Option<usize> {
    if !p.params.dissect_as.is_empty() {
        let (_, name) = p.params.dissect_as.iter().find(|(n, _)| *n == node)?;
        return stack.iter().copied().find(|&i| layers[i].params.name == *name);
    }
    let n = p.nodes.get(node as usize)?;
    (matches!(n.kind, FieldKind::Rest { .. }) && n.role.is_none())
        .then(|| stack.first().copied())
        .flatten()
}

/// Whether `test` holds for a datagram of layer `want` carried (at any depth) by `e`.
pub fn any_carried(s: &Stacked, want: usize, e: &PacketEvent, test: &dyn Fn(&PacketEvent) -> bool) -> bool {
    let Some(tree) = e.dissection else {
        return false;
    };
    let stack: Vec<usize> = (0..s.layers.len()).collect();
    walk(s, &s.outer, &stack, want, e, tree, e.payload, test, 0)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    s: &Stacked,
    p: &Program,
    stack: &[usize],
    want: usize,
    e: &PacketEvent,
    tree: &Dissection,
    data: &[u8],
    test: &dyn Fn(&PacketEvent) -> bool,
    depth: usize,
) -> bool {
    if depth > s.layers.len() {
        return false;
    }
    for fd in &tree.fields {
        let Some(at) = carried(p, stack, &s.layers, fd.node) else {
            continue;
        };
        let (a, b) = (
            (fd.bit_offset / 8) as usize,
            ((fd.bit_offset + fd.bit_len) / 8) as usize,
        );
        let Some(bytes) = data.get(a..b) else {
            continue;
        };
        let layer = &s.layers[at];
        let mut inner = Dissection::default();
        Dissector::new(layer.clone()).dissect_into(bytes, &mut inner);
        if at == want {
            let ev = PacketEvent {
                dissection: Some(&inner),
                payload: bytes,
                packet_type: inner.packet_type,
                sequence: inner.sequence,
                ..*e
            };
            if test(&ev) {
                return true;
            }
            continue;
        }
        let rest: Vec<usize> = stack.iter().copied().filter(|&i| i != at).collect();
        if walk(s, layer, &rest, want, e, &inner, bytes, test, depth + 1) {
            return true;
        }
    }
    false
}
