//! Fragments inside messages (ENet's SEND_FRAGMENT): which fields group a message's
//! fragments, and where its number, count, byte offset and total length are read.

use super::{Compiler, closest, positional, prop};
use crate::program::{Block, MessageFragmentDef, PacketDef, Params, Role};
use kdl::KdlNode;

/// The most fields a message fragment's key may name (the message type is always part).
const MAX_KEY_FIELDS: usize = 3;

/// The roles of a fragment inside messages.
const FRAGMENT_ROLES: [Role; 8] = [
    Role::FragmentId,
    Role::FragmentCount,
    Role::FragmentData,
    Role::FragmentOffset,
    Role::FragmentTotal,
    Role::FragmentRemaining,
    Role::FragmentFirst,
    Role::FragmentLast,
];

/// A role's bit in a path's set of fragment roles.
fn bit(r: Role) -> u32 {
    1u32 << FRAGMENT_ROLES.iter().position(|&x| x == r).unwrap_or(0)
}

/// The sets of fragment roles a path may carry, one per way of fragmenting: by number
/// and count (placed by number, or by byte offset and total), counting down, flagged
/// first and last. A path carries one of them or none.
fn schemes() -> [u32; 4] {
    let core = bit(Role::FragmentId) | bit(Role::FragmentCount) | bit(Role::FragmentData);
    [
        core,
        core | bit(Role::FragmentOffset) | bit(Role::FragmentTotal),
        bit(Role::FragmentRemaining) | bit(Role::FragmentData),
        bit(Role::FragmentFirst) | bit(Role::FragmentLast) | bit(Role::FragmentData),
    ]
}

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

    /// A message type's fragment roles, when its messages block and body have any:
    /// on each path, the id, count and data together (with the offset and total, both
    /// or neither) or none of them — a message is a fragment where a flag says so.
    pub(super) fn message_fragment(
        &mut self,
        p: &KdlNode,
        (header, body): (Block, Block),
        type_id: u32,
        params: &mut Params,
    ) -> bool {
        let blocks = [header, body];
        if FRAGMENT_ROLES
            .iter()
            .all(|&r| blocks.iter().all(|&b| self.role_nodes(b, r).is_empty()))
        {
            return true;
        }
        self.message_roles = true;
        let mut scratch = 0u32;
        let mut ok = true;
        for &b in &blocks {
            for &role in &FRAGMENT_ROLES {
                ok &= self.role_placement(p, b, role, false, &mut scratch);
            }
        }
        self.message_roles = false;
        ok &= self.fragment_paths(p, &blocks);
        if !ok {
            return false;
        }
        let first = |c: &Self, r| blocks.iter().find_map(|&b| c.role_nodes(b, r).first().copied());
        let key = first(self, Role::FragmentId)
            .and_then(|id| self.fragment_keys.get(&id).cloned())
            .unwrap_or_default();
        let slot = |c: &Self, r: Role| first(c, r).and_then(|i| c.nodes[i as usize].slot);
        let def = MessageFragmentDef {
            type_id,
            key,
            offset: slot(self, Role::FragmentOffset),
            total: slot(self, Role::FragmentTotal),
            remaining: slot(self, Role::FragmentRemaining),
            first: slot(self, Role::FragmentFirst),
            last: slot(self, Role::FragmentLast),
            reassembled_as: None,
        };
        // Count-down and flagged fragments are ordered by the message's stream sequence.
        let ordered = def.remaining.is_some() || def.first.is_some();
        let stream = blocks.iter().any(|&b| {
            (self.role_nodes(b, Role::Sequence).iter()).any(|&i| self.nodes[i as usize].stream.is_some())
        });
        if ordered && !stream {
            let id = first(self, Role::FragmentRemaining)
                .or(first(self, Role::FragmentFirst))
                .unwrap_or(0);
            self.error(
                self.spans[id as usize],
                "fragments counting down or flagged first and last follow one another in a stream, and this message counts in none",
                "no stream",
                Some("give the message its stream sequence: `role=sequence stream=\"NAME\" key=\"…\"` (its first stream orders the fragments)".into()),
            );
            return false;
        }
        params.message_fragments.push(def);
        true
    }

    /// Each path through `blocks` carries a whole set of fragment roles or none: the
    /// id, count and data (with the offset and total, or without both), the remaining
    /// count and data, or the first and last flags and data.
    fn fragment_paths(&mut self, p: &KdlNode, blocks: &[Block]) -> bool {
        let mut sets = vec![0u32];
        for &b in blocks {
            sets = self.role_sets(
                b,
                sets,
                &|n: &crate::program::Node| n.role.and_then(|r| FRAGMENT_ROLES.contains(&r).then(|| bit(r))),
                0,
            );
        }
        let Some(&bad) = sets.iter().find(|&&m| m != 0 && !schemes().contains(&m)) else {
            return true;
        };
        let nodes = |c: &Self, r: Role| {
            blocks
                .iter()
                .flat_map(|&b| c.role_nodes(b, r))
                .collect::<Vec<_>>()
        };
        let placed = bit(Role::FragmentOffset) | bit(Role::FragmentTotal);
        let half = bad & placed;
        if half != 0 && half != placed {
            let id = nodes(self, Role::FragmentOffset)
                .first()
                .or(nodes(self, Role::FragmentTotal).first())
                .copied()
                .unwrap_or(0);
            self.error(
                self.spans[id as usize],
                "a fragment placed by byte offset needs both role=fragment-offset and role=fragment-total",
                "offset and total go together",
                Some("mark the message's total length `role=fragment-total` and the fragment's byte offset `role=fragment-offset`, or neither (fragments are then placed by number × fragment-size)".into()),
            );
            return false;
        }
        let owner = match positional(p).get(1).and_then(|e| e.value().as_string()) {
            Some(name) => format!("{} \"{name}\"", p.name().value()),
            None => p.name().value().to_string(),
        };
        // The way of fragmenting the path comes nearest to: the one it shares most with.
        let declared = sets.iter().fold(0, |a, s| a | s);
        let want = schemes()
            .into_iter()
            .max_by_key(|s| {
                (
                    (s & bad).count_ones(),
                    (s & declared).count_ones(),
                    std::cmp::Reverse((s ^ bad).count_ones()),
                )
            })
            .unwrap_or(0);
        let lacking: Vec<Role> = FRAGMENT_ROLES
            .iter()
            .copied()
            .filter(|&r| want & !bad & bit(r) != 0)
            .collect();
        let extra: Vec<Role> = FRAGMENT_ROLES
            .iter()
            .copied()
            .filter(|&r| bad & !want & bit(r) != 0)
            .collect();
        if let Some(&r) = lacking.iter().find(|&&r| nodes(self, r).is_empty())
            && extra.is_empty()
        {
            self.error(
                Self::name_span(p),
                format!("`{owner}` has no field with role={}", r.name()),
                "missing role",
                Some(format!(
                    "a fragment inside a message has its data with an id and a count, a remaining count, or first and last flags: mark the field, for example `bits {} 16 role={}`",
                    r.name().replace('-', "_"),
                    r.name()
                )),
            );
            return false;
        }
        let names = |roles: &mut dyn Iterator<Item = Role>| {
            roles
                .map(|r| format!("role={}", r.name()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let present = names(&mut FRAGMENT_ROLES.iter().copied().filter(|&r| bad & bit(r) != 0));
        let message = match (lacking.is_empty(), extra.is_empty()) {
            (false, _) => format!(
                "on some path through `{owner}` a message has {present} without {}",
                names(&mut lacking.into_iter())
            ),
            (true, _) => format!(
                "on some path through `{owner}` a message has {present}: {} go with another way of fragmenting",
                names(&mut extra.into_iter())
            ),
        };
        self.error(
            Self::name_span(p),
            message,
            "fragment roles apart",
            Some("a fragment has its data with an id and a count, or a remaining count, or first and last flags — together on every path that has any: put them under the same `if`".into()),
        );
        false
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
