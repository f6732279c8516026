//! The `messages` block: each message's header, and what may not go with it yet.

use super::*;

/// A compiled `messages` block: the node that stands for it in the field tree, its
/// header, and the fields it leaves in scope for message bodies.
pub(super) struct MessagesDef {
    pub(super) node: NodeId,
    pub(super) header: Block,
    pub(super) scope: Scope,
}

impl<'d> Compiler<'d> {
    /// `messages { … }`: each message's header. Refuses what cannot go with it yet.
    pub(super) fn messages_block(
        &mut self,
        m: &'d KdlNode,
        header: Block,
        fragment: Option<&KdlNode>,
    ) -> Option<MessagesDef> {
        self.check_props(m, &["doc", "count", "length"]);
        // Read in the header's scope, before the messages' own.
        self.messages_end = match (prop(m, "count"), prop(m, "length")) {
            (Some(c), None) => Some(MessagesEnd::Count(self.expression(c)?)),
            (None, Some(l)) => Some(MessagesEnd::Length(self.expression(l)?)),
            (None, None) => None,
            (Some(_), Some(l)) => {
                self.error(
                    l.span(),
                    "messages end at a count or at a length, not both",
                    "length",
                    Some(
                        "keep `count=\"FIELD\"` (how many messages) or `length=\"FIELD\"` (their bytes)"
                            .into(),
                    ),
                );
                return None;
            }
        };
        if let Some(f) = fragment {
            self.error(
                Self::name_span(f),
                "a datagram-level `fragment` block cannot go with `messages`",
                "fragments",
                Some("fragments inside messages (ENet's SEND_FRAGMENT) are not supported yet: describe the fragment's fields in its message type".into()),
            );
            return None;
        }
        if let Some(&id) = self.role_nodes(header, Role::Type).first() {
            self.error(
                self.spans[id as usize],
                "with `messages`, types are the messages': the header's type selects nothing",
                "role=type",
                Some("move role=type to the type field of the `messages` block".into()),
            );
            return None;
        }
        self.scope.clear();
        self.in_messages = true;
        let block = self.block(m.children(), 0);
        self.in_messages = false;
        let scope = self.scope.clone();
        for role in [
            Role::Crc,
            Role::Ack,
            Role::AckBits,
            Role::FragmentId,
            Role::FragmentCount,
            Role::FragmentData,
            Role::AckTime,
            Role::SendTime,
        ] {
            if let Some(&id) = self.role_nodes(block, role).first() {
                self.error(
                    self.spans[id as usize],
                    format!("role={} in a message is not supported yet", role.name()),
                    "role",
                    Some("a message's fragment fields and its ack go in its type's body (`message N \"name\" { … }`); the send time in the header".into()),
                );
                return None;
            }
        }
        self.spans.push(m.span());
        self.nodes.push(Node {
            name: "messages".into(),
            kind: Kind::Messages { header: block },
            doc: prop(m, "doc")
                .and_then(|e| e.value().as_string())
                .map(str::to_string),
            slot: None,
            enum_id: None,
            role: None,
            type_name: None,
            line: self.line_of(m.span()) as u32,
            remember: None,
            stream: None,
        });
        Some(MessagesDef {
            node: self.nodes.len() as u32 - 1,
            header: block,
            scope,
        })
    }
}
