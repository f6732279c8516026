//! Acks per message (ENet's ACKNOWLEDGE, KCP's ACK and `una`): `role=ack`,
//! `ack-below`, `ack-upto`, `ack-range-start` and `nak-range-start` with
//! `stream="NAME" key="…"` ack sequences of a stream of the other direction;
//! `role=ack-time` echoes the send time (`role=send-time`, the datagram's or the
//! message's own) of what they ack. Datagram-level acks of the same kinds ack the other
//! direction's datagram sequence.

use super::{Compiler, closest, prop};
use crate::program::{Block, Params, Role};
use kdl::KdlNode;
use miette::SourceSpan;

/// A message's ack as written: the stream it names, its key fields (names and slots
/// where it is read), and where, resolved once every stream is declared.
#[derive(Debug, Clone)]
pub(super) struct AckedStream {
    name: String,
    span: SourceSpan,
    key: Vec<(String, Option<u16>)>,
    key_span: Option<SourceSpan>,
}

/// The roles an ack-time may echo the time of.
const ACKS: [Role; 5] = [
    Role::Ack,
    Role::AckBelow,
    Role::AckUpTo,
    Role::AckRangeStart,
    Role::NakRangeStart,
];

impl Compiler<'_> {
    /// The stream a message's ack names (`stream=`) and its key fields as read here.
    pub(super) fn acked_stream(&mut self, n: &KdlNode, role: Role) -> Option<AckedStream> {
        let Some(e) = prop(n, "stream") else {
            self.error(
                Self::name_span(n),
                format!("a message's role={} needs `stream=\"NAME\"`: whose sequences it acks", role.name()),
                format!("role={}", role.name()).as_str(),
                Some("for example `bits received_reliable_sequence 16 role=ack stream=\"reliable\" key=\"channel\"`".into()),
            );
            return None;
        };
        let key = prop(n, "key")
            .and_then(|k| k.value().as_string())
            .unwrap_or("")
            .split_whitespace()
            .map(|k| (k.to_string(), self.scope.find(k).flatten()))
            .collect();
        Some(AckedStream {
            name: e.value().as_string().unwrap_or("").to_string(),
            span: e.span(),
            key,
            key_span: prop(n, "key").map(|k| k.span()),
        })
    }

    /// Each message ack's stream, now that every stream is declared: one of them, acked
    /// on its key fields.
    pub(super) fn resolve_acked_streams(&mut self) {
        for (id, a) in std::mem::take(&mut self.pending_acks) {
            let Some(i) = self.streams.iter().position(|s| s.name == a.name) else {
                let hint = closest(&a.name, self.streams.iter().map(|s| s.name.as_str()))
                    .map(|c| format!("did you mean `{c}`?"))
                    .unwrap_or_else(|| "a `role=sequence stream=\"NAME\"` field declares a stream".into());
                self.error(
                    a.span,
                    format!("no stream `{}` is declared", a.name),
                    "stream",
                    Some(hint),
                );
                continue;
            };
            let def = &self.streams[i];
            let same = a.key.len() == def.key.len()
                && (a.key.iter().zip(&def.key)).all(|((k, slot), (name, s))| k == name && *slot == Some(*s));
            if !same {
                let want = def
                    .key
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                self.error(
                    a.key_span.unwrap_or(a.span),
                    format!("an ack of stream `{}` names its key, the fields `{want}`", a.name),
                    "key",
                    Some(format!(
                        "write `key=\"{want}\"`: the ack carries the acked message's key in the same fields"
                    )),
                );
                continue;
            }
            self.streams[i].acked = true;
            self.nodes[id as usize].stream = Some(i as u8);
        }
    }

    /// A message body's acks and echoed time: a single ack, a cumulative one and an
    /// echoed time once at most on a path, ranges as many as they come; the time beside
    /// an ack (in the messages block or the body).
    pub(super) fn message_ack(&mut self, p: &KdlNode, header: Block, body: Block) -> bool {
        let mut scratch = 0u32;
        let mut ok = true;
        for role in [Role::Ack, Role::AckBelow, Role::AckUpTo, Role::AckTime] {
            ok &= self.role_placement(p, body, role, false, &mut scratch);
        }
        ok &= self.ack_ranges(p, body);
        if let Some(&id) = self.role_nodes(body, Role::AckTime).first()
            && ACKS
                .iter()
                .all(|&r| self.role_nodes(body, r).is_empty() && self.role_nodes(header, r).is_empty())
        {
            self.error(
                self.spans[id as usize],
                "role=ack-time echoes the time of what an ack acks: this message has none",
                "no ack",
                None,
            );
            ok = false;
        }
        ok & self.send_time_once(p, header, body)
    }

    /// At most one send time on a path through the messages block and a body.
    fn send_time_once(&mut self, p: &KdlNode, header: Block, body: Block) -> bool {
        let (_, a, _) = self.role_paths(header, Role::SendTime, 0);
        let (_, b, _) = self.role_paths(body, Role::SendTime, 0);
        let mut scratch = 0u32;
        let ok = self.role_placement(p, body, Role::SendTime, false, &mut scratch);
        if a + b > 1
            && let Some(&id) = self.role_nodes(body, Role::SendTime).first()
        {
            self.error(
                self.spans[id as usize],
                "more than one field with role=send-time on one path through the messages block and this message",
                "another send time",
                Some("a message has one send time: its own, or the datagram's in the header".into()),
            );
            return false;
        }
        ok
    }

    /// Range ends follow a start of their kind in the same block's paths: an end with
    /// no start could close nothing.
    pub(super) fn ack_ranges(&mut self, p: &KdlNode, block: Block) -> bool {
        let mut ok = true;
        for (start, end) in [
            (Role::AckRangeStart, Role::AckRangeEnd),
            (Role::NakRangeStart, Role::NakRangeEnd),
        ] {
            let mut scratch = 0u32;
            for role in [start, end] {
                for id in self.role_nodes(block, role) {
                    let kind = self.nodes[id as usize].kind.plain();
                    if !self.ack_kind_fits(&kind) {
                        ok = false;
                        self.error(
                            self.spans[id as usize],
                            format!("the role={} field `{}` is a `{}`", role.name(), self.nodes[id as usize].name, kind.name()),
                            "wrong kind for its role",
                            Some("use `bits N` (N ≤ 32), `int`, `le-uint`/`be-uint` of up to 4 bytes, or `derived`".into()),
                        );
                    }
                }
                Program::declare_role(&mut scratch, role);
            }
            if let Some(&id) = self.role_nodes(block, end).first()
                && self.role_nodes(block, start).is_empty()
            {
                ok = false;
                self.error(
                    self.spans[id as usize],
                    format!("role={} ends a range no role={} starts", end.name(), start.name()),
                    "no start",
                    Some(format!(
                        "mark the range's first sequence `role={}` before its last (a start alone is one sequence)",
                        start.name()
                    )),
                );
            }
            let _ = p;
        }
        ok
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
                    "role=send-time goes in the header or a message; role=ack-time beside an ack in a message"
                        .into(),
                ),
            );
        }
        ok
    }
}

use crate::program::Program;
