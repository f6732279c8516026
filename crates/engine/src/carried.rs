//! What inner layers read in one outer packet, kept for the commands that show or select
//! packets (`dissect`, its filter, the TUI): each carried datagram and each packet an
//! inner layer reassembled, as that layer's engine emitted it, with its own field tree
//! and what it carried in turn. Recorded only when the engine records field trees.

use super::{Flow, Kind, PacketEvent, Sink, SinkError};
use gpcap_dissect::program::NodeId;
use gpcap_dissect::{Dissection, MessageInfo, Program};
use std::sync::Arc;

/// A packet of an inner layer, read in the outer packet it arrived in.
#[derive(Debug, Clone)]
pub struct Carried {
    /// The layer's definition (its name, types and fields).
    pub layer: Arc<Program>,
    /// The outer field that carried it: its node and bit offset in the outer bytes.
    pub carrier: (NodeId, u64),
    /// Where its first bit is in the outer bytes; `None` for a packet the layer
    /// reassembled from fragments (its bytes were never in one datagram).
    pub at: Option<u64>,
    /// The event the layer's engine emitted, without what it borrowed.
    event: PacketEvent<'static>,
    pub payload: Vec<u8>,
    pub fragment_frames: Vec<u64>,
    pub tree: Option<Dissection>,
    pub messages: Vec<MessageInfo>,
    /// What it carried in turn (a further layer).
    pub inner: Vec<Carried>,
}

impl Carried {
    /// The packet as an event of its layer: its flow, sequence, fields and status.
    pub fn event(&self) -> PacketEvent<'_> {
        PacketEvent {
            payload: &self.payload,
            fragment_frames: &self.fragment_frames,
            dissection: self.tree.as_ref(),
            messages: &self.messages,
            carried: &self.inner,
            ..self.event
        }
    }

    pub fn kind(&self) -> Kind {
        self.event.kind
    }

    /// The layer's name (`reliable`).
    pub fn name(&self) -> &str {
        &self.layer.params.name
    }

    /// Where this packet's first bit is, given where the bytes that carried it start.
    pub fn place(&self, outer: Anchor) -> Anchor {
        match self.at {
            Some(at) => Anchor {
                bit: outer.bit + at,
                ..outer
            },
            None => Anchor {
                bit: 0,
                captured: false,
            },
        }
    }
}

/// Where a packet's bits are counted from: the captured datagram, or (inside a packet a
/// layer reassembled, whose bytes were never in one datagram) that packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// The packet's first bit, counted from the anchor's.
    pub bit: u64,
    /// The anchor is the captured datagram.
    pub captured: bool,
}

impl Anchor {
    /// The captured datagram's own first bit.
    pub const DATAGRAM: Anchor = Anchor {
        bit: 0,
        captured: true,
    };

    /// The bit in the captured datagram, when the anchor is the datagram.
    pub fn in_datagram(self) -> Option<u64> {
        self.captured.then_some(self.bit)
    }
}

/// Keeps the game packets an inner engine emits for one carrier field.
pub(super) struct Recorder<'a> {
    pub out: &'a mut Vec<Carried>,
    pub layer: &'a Arc<Program>,
    pub carrier: (NodeId, u64),
    /// The carried bytes' first bit in the outer bytes.
    pub at: u64,
}

impl Sink for Recorder<'_> {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if !e.is_game() {
            return Ok(Flow::Continue);
        }
        self.out.push(Carried {
            layer: self.layer.clone(),
            carrier: self.carrier,
            at: (e.kind == Kind::Game).then_some(self.at),
            event: e.detached(),
            payload: e.payload.to_vec(),
            fragment_frames: e.fragment_frames.to_vec(),
            tree: e.dissection.cloned(),
            messages: e.messages.to_vec(),
            inner: e.carried.to_vec(),
        });
        Ok(Flow::Continue)
    }
}

/// Calls `f` on every packet `carried` holds, at any depth, with where it lies (`at`:
/// where `carried`'s own bytes start).
pub fn each(carried: &[Carried], at: Anchor, f: &mut dyn FnMut(&Carried, Anchor)) {
    for c in carried {
        let here = c.place(at);
        f(c, here);
        each(&c.inner, here, f);
    }
}
