//! Fragments inside messages (ENet's SEND_FRAGMENT): which fields group a message's
//! fragments, and where its number, count, byte offset and total length are read.

use super::{Compiler, closest, prop};
use crate::dissect::program::{Block, MessageFragmentDef, PacketDef, Params, Role};
use kdl::KdlNode;

/// The most fields a message fragment's key may name (the message type is always part).
const MAX_KEY_FIELDS: usize = 3;

impl Compiler<'_> {
    /// `key="FIELD …"` on a message's `role=fragment-id`: integer fields read before it.
    pub(super) fn fragment_key(&mut self, n: &KdlNode) -> Option<Vec<(String, u16)>> {
        self.key_fields(n, MAX_KEY_FIELDS, "a fragment's key is at most three fields")
    }

    /// `key="FIELD …"`: at most `most` integer fields read before this node, by name.
    pub(super) fn key_fields(
        &mut self,
        n: &KdlNode,
        most: usize,
        too_many: &str,
    ) -> Option<Vec<(String, u16)>> {
        let mut key = Vec::new();
        let Some(k) = prop(n, "key") else {
            return Some(key);
        };
        for field in k.value().as_string().unwrap_or("").split_whitespace() {
            match self.scope.find(field).flatten() {
                Some(slot) if key.len() < most => key.push((field.to_string(), slot)),
                Some(_) => {
                    self.error(k.span(), too_many, "key", None);
                    return None;
                }
                None => {
                    let hint = closest(field, self.scope.names()).map(|c| format!("did you mean `{c}`?"));
                    self.error(
                        k.span(),
                        format!("the key field `{field}` is not an integer field read before this one"),
                        "key",
                        hint,
                    );
                    return None;
                }
            }
        }
        Some(key)
    }

    /// A message type's fragment roles, when it has any: id, count and data on every
    /// path, offset and total together or not at all.
    pub(super) fn message_fragment(
        &mut self,
        p: &KdlNode,
        body: Block,
        type_id: u32,
        params: &mut Params,
    ) -> bool {
        let roles = [
            Role::FragmentId,
            Role::FragmentCount,
            Role::FragmentData,
            Role::FragmentOffset,
            Role::FragmentTotal,
        ];
        if roles.iter().all(|&r| self.role_nodes(body, r).is_empty()) {
            return true;
        }
        self.message_roles = true;
        let mut scratch = 0u32;
        let mut ok = true;
        for (i, &role) in roles.iter().enumerate() {
            ok &= self.role_placement(p, body, role, i < 3, &mut scratch);
        }
        self.message_roles = false;
        let first = |c: &Self, r| c.role_nodes(body, r).first().copied();
        let (offset, total) = (
            first(self, Role::FragmentOffset),
            first(self, Role::FragmentTotal),
        );
        if offset.is_some() != total.is_some() {
            let id = offset.or(total).unwrap_or(0);
            self.error(
                self.spans[id as usize],
                "a fragment placed by byte offset needs both role=fragment-offset and role=fragment-total",
                "offset and total go together",
                Some("mark the message's total length `role=fragment-total` and the fragment's byte offset `role=fragment-offset`, or neither (fragments are then placed by number × fragment-size)".into()),
            );
            return false;
        }
        if !ok {
            return false;
        }
        let key = first(self, Role::FragmentId)
            .and_then(|id| self.fragment_keys.get(&id).cloned())
            .unwrap_or_default();
        let slot = |c: &Self, id: Option<u32>| id.and_then(|i| c.nodes[i as usize].slot);
        let (offset, total) = (slot(self, offset), slot(self, total));
        params.message_fragments.push(MessageFragmentDef {
            type_id,
            key,
            offset,
            total,
            reassembled_as: None,
        });
        true
    }

    /// `reassembled-as="TYPE"` on a message's fragment data (the field just compiled),
    /// kept until every message type is known.
    pub(super) fn reassembled_as_of(&mut self, n: &KdlNode) {
        let Some(e) = prop(n, "reassembled-as") else {
            return;
        };
        match e.value().as_string() {
            Some(name) => {
                let id = self.nodes.len() as u32 - 1;
                self.reassembled_as.insert(id, (name.to_string(), e.span()));
            }
            None => self.error(
                e.span(),
                "`reassembled-as` names a message type",
                "reassembled-as",
                Some("for example `reassembled-as=\"chat\"` with `message 14 \"chat\" { … }`".into()),
            ),
        }
    }

    /// Each fragment-carrying message type's `reassembled-as`, by type id: a declared
    /// message type, else an error with the nearest name.
    pub(super) fn resolve_reassembled_as(&mut self, params: &mut Params, packets: &[PacketDef]) {
        for def in &mut params.message_fragments {
            let Some(body) = packets.iter().find(|p| p.type_id == def.type_id).map(|p| p.body) else {
                continue;
            };
            let named = self
                .role_nodes(body, Role::FragmentData)
                .into_iter()
                .find_map(|id| self.reassembled_as.get(&id).cloned());
            let Some((name, span)) = named else { continue };
            match packets.iter().find(|p| p.name == name) {
                Some(p) => def.reassembled_as = Some(p.type_id),
                None => {
                    let hint = closest(&name, packets.iter().map(|p| p.name.as_str()))
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("declare it: `message N \"{name}\" {{ … }}`"));
                    self.error(
                        span,
                        format!("no message type is named `{name}`"),
                        "reassembled-as",
                        Some(hint),
                    );
                }
            }
        }
    }

    /// `fragment-offset` and `fragment-total` are a message's: refused elsewhere.
    pub(super) fn no_offset_roles(&mut self, block: Block) -> bool {
        let mut ok = true;
        for role in [Role::FragmentOffset, Role::FragmentTotal] {
            for id in self.role_nodes(block, role) {
                ok = false;
                self.error(
                    self.spans[id as usize],
                    format!("role={} is for fragments inside messages", role.name()),
                    "not in a message",
                    Some("datagram fragments are placed by number × fragment-size; with `messages`, mark the fragment fields in the message type's body".into()),
                );
            }
        }
        ok
    }
}
