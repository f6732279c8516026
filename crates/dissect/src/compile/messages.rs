//! The `messages` block: each message's header, and what may not go with it yet.

use super::*;
use crate::MAX_MESSAGE_STREAMS;

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
        fragment: Option<&KdlNode>,
    ) -> Option<MessagesDef> {
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
        self.check_props(m, &["doc", "count", "length", "types"]);
        // The header's fields are in scope.
        self.scope = self.header_scope.clone();
        self.in_messages = true;
        let block = self.block(m.children(), 0);
        self.in_messages = false;
        let scope = self.scope.clone();
        for role in [Role::Crc, Role::Ack, Role::AckBits] {
            if let Some(&id) = self.role_nodes(block, role).first() {
                self.error(
                    self.spans[id as usize],
                    format!("role={} in a message is not supported yet", role.name()),
                    "role",
                    Some("a message's single ack goes in its type's body (`message N \"name\" { … }`); cumulative acks, ranges and send times may be in the messages block".into()),
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
        self.messages_header = Some(block);
        Some(MessagesDef {
            node: self.nodes.len() as u32 - 1,
            header: block,
            scope,
        })
    }

    /// A bare `messages` in a body: where a datagram kind's messages are read. Only
    /// with datagram kinds (a header `role=type`), and not in a message.
    pub(super) fn messages_use(&mut self, n: &KdlNode) -> Option<Kind> {
        let header = self.messages_header?;
        if !self.kinds || self.in_messages {
            self.error(
                Self::name_span(n),
                "`messages` here would read messages inside a message",
                "messages",
                Some("a bare `messages` goes in the body of a datagram kind: give the header a role=type field, and write `packet N \"data\" { …; messages }` for the kinds that carry messages".into()),
            );
            return None;
        }
        Some(Kind::Messages { header })
    }
}

impl Compiler<'_> {
    /// The set of `mark` bits each path through `block` collects, from the sets `from`
    /// (merged past [`MAX_PATH_SETS`]): which roles a path carries.
    pub(super) fn role_sets(
        &self,
        block: Block,
        from: Vec<u32>,
        mark: &dyn Fn(&Node) -> Option<u32>,
        depth: u32,
    ) -> Vec<u32> {
        let mut sets = from;
        if depth > 64 {
            return sets;
        }
        let ids = self
            .children
            .get(block.start as usize..(block.start + block.len) as usize)
            .unwrap_or(&[]);
        for &id in ids {
            let node = &self.nodes[id as usize];
            if let Some(bit) = mark(node) {
                sets.iter_mut().for_each(|s| *s |= bit);
            }
            sets = match &node.kind {
                Kind::If { then, otherwise, .. } => {
                    let mut a = self.role_sets(*then, sets.clone(), mark, depth + 1);
                    a.extend(self.role_sets(*otherwise, sets, mark, depth + 1));
                    a
                }
                Kind::Struct { body } | Kind::Inline { body } | Kind::Rest { body } => {
                    self.role_sets(*body, sets, mark, depth + 1)
                }
                // A repeated body may be read no time, or more.
                Kind::Array { body, .. } | Kind::List { body, .. } | Kind::RelativeList { body, .. } => {
                    let mut with = self.role_sets(*body, sets.clone(), mark, depth + 1);
                    with.extend(sets);
                    with
                }
                _ => sets,
            };
            sets.sort_unstable();
            sets.dedup();
            if sets.len() > MAX_PATH_SETS {
                let all = sets.iter().fold(0, |a, s| a | s);
                sets = vec![all];
            }
        }
        sets
    }
}

/// Why the stream sequences of one path through a message cannot all count.
pub(super) enum StreamClash {
    /// A second sequence of stream `.1` at node `.0`.
    Twice(NodeId, u8),
    /// A path past [`MAX_MESSAGE_STREAMS`] streams, at node `.0`.
    TooMany(NodeId),
}

/// The stream sets of a block's paths kept at most (more is a definition no one writes;
/// past it, paths are merged and a clash may go unsaid, never a wrong count).
const MAX_PATH_SETS: usize = 256;

impl Compiler<'_> {
    /// The streams each path through `block` counts a message in, starting from the
    /// sets `from`: a stream twice on one path, or more than
    /// [`MAX_MESSAGE_STREAMS`], is a clash.
    pub(super) fn stream_paths(
        &self,
        block: Block,
        from: Vec<u32>,
        depth: u32,
    ) -> Result<Vec<u32>, StreamClash> {
        let mut sets = from;
        if depth > 64 {
            return Ok(sets);
        }
        let ids = self
            .children
            .get(block.start as usize..(block.start + block.len) as usize)
            .unwrap_or(&[]);
        for &id in ids {
            let node = &self.nodes[id as usize];
            if let (Some(Role::Sequence), Some(s)) = (node.role, node.stream) {
                let bit = 1u32 << (s % 32);
                for set in &mut sets {
                    if *set & bit != 0 {
                        return Err(StreamClash::Twice(id, s));
                    }
                    *set |= bit;
                    if set.count_ones() as usize > MAX_MESSAGE_STREAMS {
                        return Err(StreamClash::TooMany(id));
                    }
                }
            }
            sets = match &node.kind {
                Kind::If { then, otherwise, .. } => {
                    let mut a = self.stream_paths(*then, sets.clone(), depth + 1)?;
                    a.extend(self.stream_paths(*otherwise, sets, depth + 1)?);
                    a
                }
                Kind::Struct { body } | Kind::Inline { body } | Kind::Rest { body } => {
                    self.stream_paths(*body, sets, depth + 1)?
                }
                // Repeated: a sequence inside is read again on the same path.
                Kind::Array { body, .. } | Kind::List { body, .. } | Kind::RelativeList { body, .. } => {
                    let once = self.stream_paths(*body, sets.clone(), depth + 1)?;
                    let twice = self.stream_paths(*body, once.clone(), depth + 1)?;
                    sets.extend(once);
                    sets.extend(twice);
                    sets
                }
                _ => sets,
            };
            sets.sort_unstable();
            sets.dedup();
            if sets.len() > MAX_PATH_SETS {
                let all = sets.iter().fold(0, |a, s| a | s);
                sets = vec![all];
            }
        }
        Ok(sets)
    }

    /// Each path through the messages block and a message type's body counts the
    /// message in each of its streams once, in at most [`MAX_MESSAGE_STREAMS`].
    pub(super) fn message_streams(&mut self, name: &str, header: Block, body: Block) -> bool {
        let res = self
            .stream_paths(header, vec![0], 0)
            .and_then(|sets| self.stream_paths(body, sets, 0));
        let (id, message) = match res {
            Ok(_) => return true,
            Err(StreamClash::Twice(id, s)) => {
                let stream = self.streams.get(s as usize).map_or("?", |d| d.name.as_str());
                (
                    id,
                    format!("two sequences of stream `{stream}` on one path through message `{name}`"),
                )
            }
            Err(StreamClash::TooMany(id)) => (
                id,
                format!("message `{name}` counts in more than {MAX_MESSAGE_STREAMS} streams on one path"),
            ),
        };
        self.error(
            self.spans[id as usize],
            message,
            "another sequence on the same path",
            Some("a message counts once in each of its streams: keep one sequence per stream on a path (the two branches of an `if` may each have one)".into()),
        );
        false
    }
}
