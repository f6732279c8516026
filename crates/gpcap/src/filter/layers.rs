//! Filters by an inner layer's name (`reliable.sequence > 10`): the test holds when a
//! packet of the layer that the outer packet carried satisfies it — a datagram the
//! layer read in it (`dissect-as`, or `rest` fields with a stack of `-d`), or a packet
//! the layer reassembled from fragments when this one brought the last.

use gpcap_dissect::Program;
use gpcap_engine::{PacketEvent, carried};
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

/// Whether `test` holds for a packet of layer `want` carried (at any depth) by `e`:
/// each datagram the layer read in it and each packet the layer reassembled there, as
/// the layer's engine read them (the engine records them with the field tree).
pub fn any_carried(s: &Stacked, want: usize, e: &PacketEvent, test: &dyn Fn(&PacketEvent) -> bool) -> bool {
    let Some(name) = s.layers.get(want).map(|l| l.params.name.as_str()) else {
        return false;
    };
    let mut found = false;
    carried::each(e.carried, carried::Anchor::DATAGRAM, &mut |c, _| {
        found = found || (c.name() == name && test(&c.event()));
    });
    found
}
