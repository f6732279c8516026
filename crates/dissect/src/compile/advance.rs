//! Whether a message can read no bits: then the messages loop never advances (a
//! datagram read as 65,535 empty messages), so `check` refuses it. What this cannot
//! prove (a count read from a field, a condition) the reader stops at run time.

use super::*;

impl<'d> Compiler<'d> {
    /// Refuses a `messages` header that can read nothing followed by a message body that
    /// can read nothing: no datagram could be read as messages that end.
    pub(super) fn messages_advance(&mut self, m: &super::messages::MessagesDef, packets: &[PacketDef]) {
        if !self.can_read_nothing(m.header) {
            return;
        }
        let Some(empty) = packets.iter().find(|d| self.can_read_nothing(d.body)) else {
            return;
        };
        self.error(
            self.spans[m.node as usize],
            format!(
                "a message can read no bits: the `messages` header and message {} \"{}\" may both be empty, so the messages never advance",
                empty.type_id, empty.name
            ),
            "messages",
            Some("give each message at least one field that reads bits (a type field `bits type 8 role=type`)".into()),
        );
    }

    /// True when some input makes `block` read no bits (a lower bound of 0 that an input
    /// reaches): fields of no width, `align`, `derived`, zero counts, an empty branch.
    fn can_read_nothing(&self, block: Block) -> bool {
        let ids = &self.children[block.start as usize..(block.start + block.len) as usize];
        ids.iter().all(|&id| self.node_can_read_nothing(id))
    }

    fn node_can_read_nothing(&self, id: NodeId) -> bool {
        match &self.nodes[id as usize].kind {
            Kind::Bits(n) => *n == 0,
            Kind::Int { min, max } => min == max,
            Kind::CompressedFloat(cf) | Kind::CompressedVector(cf) => cf.bits == 0,
            Kind::Align | Kind::Derived(_) | Kind::Messages { .. } => true,
            Kind::Bytes(c) | Kind::Text { len: c } => matches!(c, Count::Const(0)),
            Kind::Struct { body } | Kind::Inline { body } | Kind::List { body, .. } => {
                self.can_read_nothing(*body)
            }
            Kind::Array { count, body } => matches!(count, Count::Const(0)) || self.can_read_nothing(*body),
            Kind::If { then, otherwise, .. } => {
                self.can_read_nothing(*then) || self.can_read_nothing(*otherwise)
            }
            _ => false,
        }
    }
}
