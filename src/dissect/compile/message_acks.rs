//! Acks per message (ENet's ACKNOWLEDGE): `role=ack stream="NAME" key="…"` acks one
//! sequence of a stream of the other direction; `role=ack-time` echoes the send time
//! (`role=send-time` in the header) of the datagram that carried it.

use super::{Compiler, closest, prop};
use crate::dissect::program::{Block, Params, Role};
use kdl::KdlNode;

impl Compiler<'_> {
    /// The stream a message's `role=ack` acks: declared by a `role=sequence` before it,
    /// with the same key fields.
    pub(super) fn acked_stream(&mut self, n: &KdlNode) -> Option<u8> {
        let Some(e) = prop(n, "stream") else {
            self.error(
                Self::name_span(n),
                "a message's role=ack needs `stream=\"NAME\"`: whose sequences it acks",
                "role=ack",
                Some("for example `bits received_reliable_sequence 16 role=ack stream=\"reliable\" key=\"channel\"`".into()),
            );
            return None;
        };
        let name = e.value().as_string().unwrap_or("");
        let Some(i) = self.streams.iter().position(|s| s.name == name) else {
            let hint = closest(name, self.streams.iter().map(|s| s.name.as_str()))
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| "a `role=sequence stream=\"NAME\"` field declares a stream".into());
            self.error(
                e.span(),
                format!("no stream `{name}` is declared before this ack"),
                "stream",
                Some(hint),
            );
            return None;
        };
        let key: Vec<&str> = prop(n, "key")
            .and_then(|k| k.value().as_string())
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let def = &self.streams[i];
        let same = key.len() == def.key.len()
            && key
                .iter()
                .zip(&def.key)
                .all(|(k, (name, slot))| k == name && self.scope.find(k).flatten() == Some(*slot));
        if !same {
            let want = def
                .key
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            self.error(
                prop(n, "key").map_or(e.span(), |k| k.span()),
                format!("an ack of stream `{name}` names its key, the fields `{want}`"),
                "key",
                Some(format!(
                    "write `key=\"{want}\"`: the ack carries the acked message's key in the same fields"
                )),
            );
            return None;
        }
        self.streams[i].acked = true;
        Some(i as u8)
    }

    /// A message body's ack and echoed time: one of each at most on a path, the time
    /// only beside an ack.
    pub(super) fn message_ack(&mut self, p: &KdlNode, body: Block) -> bool {
        let mut scratch = 0u32;
        let mut ok = self.role_placement(p, body, Role::Ack, false, &mut scratch);
        ok &= self.role_placement(p, body, Role::AckTime, false, &mut scratch);
        if let Some(&id) = self.role_nodes(body, Role::AckTime).first()
            && self.role_nodes(body, Role::Ack).is_empty()
        {
            self.error(
                self.spans[id as usize],
                "role=ack-time echoes the time of what a role=ack field acks: this message has none",
                "no ack",
                None,
            );
            ok = false;
        }
        ok & self.no_time_roles(body, Role::SendTime)
    }

    /// The header's send time, which message acks echo.
    pub(super) fn send_time(&mut self, h: &KdlNode, header: Block, params: &mut Params) -> bool {
        let mut scratch = 0u32;
        let ok = self.role_placement(h, header, Role::SendTime, false, &mut scratch);
        params.send_time = !self.role_nodes(header, Role::SendTime).is_empty();
        ok & self.no_time_roles(header, Role::AckTime)
    }

    /// `role` has no place in `block`.
    pub(super) fn no_time_roles(&mut self, block: Block, role: Role) -> bool {
        let mut ok = true;
        for id in self.role_nodes(block, role) {
            ok = false;
            self.error(
                self.spans[id as usize],
                format!("role={} has no effect here", role.name()),
                "misplaced",
                Some(
                    "role=send-time goes in the header; role=ack-time in a message with a role=ack field"
                        .into(),
                ),
            );
        }
        ok
    }
}
