//! Roles: where `role=` fields are found on a block's paths, whether they take effect,
//! and a field's `stream=`, `remember=` and `order=` properties.

use super::*;

impl<'d> Compiler<'d> {
    /// Roles the engine reads only from the header (sequence, type, crc) or the fragment
    /// block (fragment-*) would be ignored elsewhere: refused where they cannot take
    /// effect. A re-read `header` inside the block is the header's own.
    /// `sequence`: the block is a packet's body, which may carry the datagram's sequence.
    pub(super) fn roles_without_effect(&mut self, block: Block, owner: &str, fragment: bool, sequence: bool) {
        let mut stack = vec![(block, 0u32)];
        while let Some((b, depth)) = stack.pop() {
            if depth > 64 {
                continue;
            }
            let ids = self
                .children
                .get(b.start as usize..(b.start + b.len) as usize)
                .unwrap_or(&[])
                .to_vec();
            for id in ids {
                let node = self.nodes[id as usize].clone();
                if let Kind::Struct { body } = node.kind
                    && Some(body.start) == self.header_block.map(|h| h.start)
                {
                    continue;
                }
                // The messages a datagram kind reads have roles of their own.
                if matches!(node.kind, Kind::Messages { .. }) {
                    continue;
                }
                let misplaced = match node.role {
                    // A message's sequence counts in its stream.
                    Some(Role::Sequence) if node.stream.is_some() => None,
                    Some(Role::Sequence) if sequence => None,
                    Some(r @ (Role::Sequence | Role::Type | Role::Crc)) => Some(r),
                    Some(
                        r @ (Role::FragmentId
                        | Role::FragmentCount
                        | Role::FragmentData
                        | Role::FragmentRemaining
                        | Role::FragmentFirst
                        | Role::FragmentLast),
                    ) if !fragment => Some(r),
                    _ => None,
                };
                if let Some(r) = misplaced {
                    let (name, span) = (node.name.clone(), self.spans[id as usize]);
                    let place = if matches!(r, Role::Sequence | Role::Type | Role::Crc) {
                        "header"
                    } else {
                        "fragment block"
                    };
                    self.error(
                        span,
                        format!("role={} on `{name}` in `{owner}` would be ignored: it is read only in the {place}", r.name()),
                        "no effect here",
                        Some(format!("move the field to the {place}, or remove the role")),
                    );
                }
                for inner in node.kind.blocks() {
                    stack.push((inner, depth + 1));
                }
            }
        }
    }

    /// Every field carrying `role` in `block`, through branches, groups and re-reads.
    pub(super) fn role_nodes(&self, block: Block, role: Role) -> Vec<NodeId> {
        let mut out = Vec::new();
        self.collect_role(block, role, &mut out, 0);
        out
    }

    fn collect_role(&self, block: Block, role: Role, out: &mut Vec<NodeId>, depth: u32) {
        if depth > 64 {
            return;
        }
        let ids = self
            .children
            .get(block.start as usize..(block.start + block.len) as usize)
            .unwrap_or(&[]);
        for &id in ids {
            let node = &self.nodes[id as usize];
            if node.role == Some(role) {
                out.push(id);
            }
            // A datagram kind's messages are the messages block's, checked there.
            if matches!(node.kind, Kind::Messages { .. }) {
                continue;
            }
            for b in node.kind.blocks() {
                self.collect_role(b, role, out, depth + 1);
            }
        }
    }

    /// The fewest and most fields with `role` on one path through `block`, and the
    /// first `if` whose branches differ in it.
    pub(super) fn role_paths(&self, block: Block, role: Role, depth: u32) -> (u32, u32, Option<NodeId>) {
        let ids = self
            .children
            .get(block.start as usize..(block.start + block.len) as usize)
            .unwrap_or(&[]);
        let (mut lo, mut hi, mut split) = (0u32, 0u32, None);
        if depth > 64 {
            return (0, 0, None);
        }
        for &id in ids {
            let node = &self.nodes[id as usize];
            if node.role == Some(role) {
                lo += 1;
                hi += 1;
            }
            let (l, h, sp) = match &node.kind {
                Kind::If { then, otherwise, .. } => {
                    let a = self.role_paths(*then, role, depth + 1);
                    let b = self.role_paths(*otherwise, role, depth + 1);
                    let here = (a.0 != b.0 || a.1 != b.1).then_some(id);
                    (a.0.min(b.0), a.1.max(b.1), a.2.or(b.2).or(here))
                }
                Kind::Struct { body } | Kind::Inline { body } | Kind::Rest { body } => {
                    self.role_paths(*body, role, depth + 1)
                }
                Kind::Array { body, .. } | Kind::List { body, .. } | Kind::RelativeList { body, .. } => {
                    // Repeated: a role inside is read many times on one path.
                    let (_, h, sp) = self.role_paths(*body, role, depth + 1);
                    (0, h * 2, sp)
                }
                _ => (0, 0, None),
            };
            lo += l;
            hi += h;
            split = split.or(sp);
        }
        (lo, hi, split)
    }

    /// Checks where the fields with `role` sit in `block`: each of the right kind, at
    /// most one on any path, and (when `required`) one on every path. Two paths may
    /// use different fields. Records the role as declared.
    pub(super) fn role_placement(
        &mut self,
        owner: &KdlNode,
        block: Block,
        role: Role,
        required: bool,
        roles: &mut u32,
    ) -> bool {
        let name = role.name();
        let owner_name = owner.name().value().to_string();
        let nodes = self.role_nodes(block, role);
        let (lo, hi, split) = self.role_paths(block, role, 0);
        let mut ok = true;
        if nodes.is_empty() {
            if required {
                self.error(
                    Self::name_span(owner),
                    format!("`{owner_name}` has no field with role={name}"),
                    "missing role",
                    Some(match role {
                        Role::FragmentData => "mark the fragment's data, for example `rest data role=fragment-data`".into(),
                        Role::Crc => "mark the CRC, `bits crc 32 role=crc`, or declare `checksum \"none\"` in the protocol block".into(),
                        _ => format!("mark the field, for example `bits {} 16 role={name}`", name.replace('-', "_")),
                    }),
                );
                return false;
            }
            return true;
        }
        Program::declare_role(roles, role);
        for &id in &nodes {
            let node = self.nodes[id as usize].clone();
            let kind_ok = self.kind_fits(role, &node.kind.plain());
            if !kind_ok {
                ok = false;
                self.error(
                    self.spans[id as usize],
                    format!(
                        "the role={name} field `{}` is a `{}`",
                        node.name,
                        node.kind.name()
                    ),
                    "wrong kind for its role",
                    Some(self.kind_hint(role)),
                );
            }
        }
        if hi > 1 {
            ok = false;
            let second = nodes.get(1).copied().unwrap_or(nodes[0]);
            self.error(
                self.spans[second as usize],
                format!("more than one field with role={name} on one path through `{owner_name}`"),
                "another role field on the same path",
                Some("a role is read once per packet: keep one field, or put them in the two branches of an `if`/`else`".into()),
            );
        }
        if required && lo == 0 {
            ok = false;
            let at = split.map_or(Self::name_span(owner), |id| self.spans[id as usize]);
            self.error(
                at,
                format!("on some paths through `{owner_name}` no field has role={name}"),
                "a branch of this `if` has none",
                Some("every path needs one: add the field to each branch (they may be different fields), or move it out of the `if`".into()),
            );
        }
        ok
    }

    /// Whether a field of this kind can carry the role.
    fn kind_fits(&self, role: Role, kind: &Kind) -> bool {
        match (role, kind) {
            (_, Kind::Derived(_)) => role != Role::Crc,
            (Role::Crc, Kind::Bits(32)) => true,
            (Role::AckBits, Kind::Bits(_)) => true,
            (Role::Sequence, Kind::Bits(_) | Kind::Int { .. } | Kind::Uint64 | Kind::LeUint(_)) => true,
            (Role::ProtocolId, Kind::Bits(_) | Kind::Uint64 | Kind::LeUint(_)) => true,
            (r, k) if r == Role::Ack || r.acks_more() => self.ack_kind_fits(k),
            (Role::FragmentId | Role::FragmentCount, Kind::Bits(_) | Kind::LeUint(_) | Kind::Uint64)
                if self.message_roles =>
            {
                true
            }
            (
                Role::FragmentOffset | Role::FragmentTotal | Role::SendTime | Role::AckTime,
                Kind::Bits(_) | Kind::LeUint(_) | Kind::Uint64,
            ) => true,
            (Role::FragmentData, Kind::Bytes(_)) if self.message_roles => true,
            (Role::FragmentRemaining, Kind::Bits(_) | Kind::LeUint(_) | Kind::Int { .. }) => true,
            (Role::FragmentFirst | Role::FragmentLast, Kind::Bits(_) | Kind::Bool | Kind::Int { .. }) => true,
            (Role::Type | Role::FragmentId | Role::FragmentCount, Kind::Bits(b)) => *b <= 16,
            (Role::Type | Role::FragmentId | Role::FragmentCount, Kind::Int { .. }) => true,
            (Role::FragmentData, Kind::Rest { .. }) => true,
            _ => false,
        }
    }

    /// Whether an ack's field is up to 32 bits (acks are extended at 32 bits at most).
    pub(super) fn ack_kind_fits(&self, kind: &Kind) -> bool {
        match kind {
            Kind::Derived(_) | Kind::Int { .. } => true,
            Kind::Bits(b) => *b <= 32,
            Kind::LeUint(Count::Const(n)) => *n <= 4,
            _ => false,
        }
    }

    /// What a field of the role may be, for the diagnostic when it is not.
    fn kind_hint(&self, role: Role) -> String {
        match role {
            Role::Crc => "the CRC is `bits 32`".into(),
            Role::FragmentData if self.message_roles => "fragment data is `bytes` or `rest`".into(),
            Role::FragmentData => "fragment data is `rest`".into(),
            Role::FragmentOffset | Role::FragmentTotal | Role::SendTime | Role::AckTime => {
                "use `bits N`, `le-uint` or `derived`".into()
            }
            Role::FragmentId | Role::FragmentCount if self.message_roles => {
                "use `bits N` (N ≤ 32), `int MIN MAX`, `le-uint` or `derived`".into()
            }
            Role::AckBits => "use `bits N` (N ≤ 32) or `derived`".into(),
            Role::Sequence => "use `bits N`, `int`, `uint64`, `le-uint` or `derived`".into(),
            Role::ProtocolId => "use `bits N`, `uint64` or `le-uint`".into(),
            Role::Ack => {
                "use `bits N` (N ≤ 32), `int`, `le-uint`/`be-uint` of up to 4 bytes, or `derived`".into()
            }
            _ => "use `bits N` (N ≤ 16), `int MIN MAX` or `derived`".into(),
        }
    }

    /// Bits an integer field's values take, where a sequence or ack read from it wraps:
    /// its width on the wire; for a `derived` one, the width of the one field it copies
    /// (`"sn"`), or the mask it ends with (`"… & 0xffff"`: 16), else 64.
    pub(super) fn kind_width(&self, kind: &Kind) -> u32 {
        match kind.plain() {
            Kind::Bits(b) => b,
            Kind::Bool => 1,
            Kind::Int { min, max } => int_width(min, max).unwrap_or(64),
            Kind::LeUint(Count::Const(n)) => (n as u32 * 8).clamp(8, 64),
            Kind::Derived(e) => self.derived_width(e),
            _ => 64,
        }
    }

    fn derived_width(&self, e: Expr) -> u32 {
        let code = self
            .code
            .get(e.start as usize..(e.start + e.len) as usize)
            .unwrap_or(&[]);
        match code {
            [expr::Op::Slot(s)] => self.slot_widths.get(s).copied().unwrap_or(64),
            [.., expr::Op::Const(m), expr::Op::Bin(expr::BinOp::BitAnd)]
                if *m > 0 && (*m as u64).wrapping_add(1).is_power_of_two() =>
            {
                (*m as u64).count_ones()
            }
            _ => 64,
        }
    }

    /// `role=sequence stream="NAME" key="FIELD FIELD"` in a message: one counter per
    /// flow and value of the key fields. A stream used again keeps its key.
    pub(super) fn stream(&mut self, n: &KdlNode, kind: &Kind) -> Option<Option<u8>> {
        use crate::program::StreamDef;
        let Some(e) = prop(n, "stream") else {
            if self.in_messages {
                self.error(
                    Self::name_span(n),
                    "a message's role=sequence needs `stream=\"NAME\"`: which counter it counts in",
                    "role=sequence",
                    Some("for example `bits reliable_sequence 16 role=sequence stream=\"reliable\" key=\"channel\"`".into()),
                );
                return None;
            }
            if let Some(k) = prop(n, "key") {
                self.error(k.span(), "`key` goes with `stream`", "", None);
                return None;
            }
            return Some(None);
        };
        if !self.in_messages {
            self.error(
                e.span(),
                "streams are per message: `stream` needs the protocol's `messages`",
                "stream",
                Some("a datagram's own sequence is `role=sequence` in the header, without `stream`".into()),
            );
            return None;
        }
        let name = e.value().as_string().unwrap_or("").to_string();
        let key = self.key_fields(n, 2, "a stream's key is at most two fields")?;
        let bits = self.kind_width(kind);
        let names = |k: &[(String, u16)]| k.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        if let Some(i) = self.streams.iter().position(|s| s.name == name) {
            let want = names(&self.streams[i].key);
            if want != names(&key) {
                self.error(
                    e.span(),
                    format!(
                        "stream `{name}` is keyed by `{}` where it is first used",
                        want.join(" ")
                    ),
                    "key",
                    None,
                );
                return None;
            }
            return Some(Some(i as u8));
        }
        if self.streams.len() >= 16 {
            self.error(e.span(), "at most 16 streams", "", None);
            return None;
        }
        self.streams.push(StreamDef {
            name,
            acked: false,
            key,
            bits,
        });
        Some(Some(self.streams.len() as u8 - 1))
    }

    /// `remember="NAME"` on a field of at most 8 whole bytes.
    pub(super) fn remember(
        &mut self,
        n: &KdlNode,
        kind: &Kind,
        allowed: &mut Vec<&'static str>,
    ) -> Option<u8> {
        let e = prop(n, "remember")?;
        allowed.push("remember");
        let bytes = match kind.plain() {
            Kind::Bits(b) if b % 8 == 0 => true,
            Kind::Uint64 | Kind::LeUint(_) | Kind::ByteInt { .. } => true,
            Kind::Bytes(Count::Const(c)) => (1..=8).contains(&c),
            _ => false,
        };
        let Some(name) = e.value().as_string().filter(|_| bytes) else {
            self.error(
                e.span(),
                "`remember` takes a name, on a field of 1 to 8 whole bytes",
                "remember",
                Some("for example `le-uint connect_id 4 remember=\"connect_id\"`".into()),
            );
            return None;
        };
        if let Some(i) = self.remembered.iter().position(|r| r == name) {
            return Some(i as u8);
        }
        if self.remembered.len() >= 8 {
            self.error(e.span(), "a conversation remembers at most 8 values", "", None);
            return None;
        }
        self.remembered.push(name.to_string());
        Some(self.remembered.len() as u8 - 1)
    }

    /// The bit order of a field: `order="msb"`/`"lsb"` on it, else the protocol's
    /// `bit-order`. Kinds with an MSB-first form take it; the rest keep the articles'
    /// packing, and saying `order` on them is an error.
    pub(super) fn ordered(
        &mut self,
        n: &KdlNode,
        kind: Kind,
        allowed: &mut Vec<&'static str>,
    ) -> Option<Kind> {
        let has_msb_form = matches!(
            kind,
            Kind::Bits(_) | Kind::Bool | Kind::Int { .. } | Kind::Float | Kind::Double | Kind::Uint64
        );
        let msb = match prop(n, "order").map(|e| (e, e.value().as_string())) {
            None => self.msb,
            Some((_, Some("msb" | "big"))) if has_msb_form => true,
            Some((_, Some("lsb" | "little"))) if has_msb_form => false,
            Some((e, _)) if !has_msb_form => {
                self.error(
                    e.span(),
                    format!("`{}` has one bit order; `order` applies to bits, bool, int, float, double and uint64", n.name().value()),
                    "order",
                    Some("for whole-byte integers write be-uint, le-uint, be-int or le-int".into()),
                );
                return None;
            }
            Some((e, _)) => {
                self.error(e.span(), "`order` is \"msb\" or \"lsb\"", "order", None);
                return None;
            }
        };
        allowed.push("order");
        Some(match kind {
            Kind::Bits(b) if msb => Kind::Msb(Msb::Bits(b)),
            Kind::Bool if msb => Kind::Msb(Msb::Bool),
            Kind::Int { min, max } if msb => Kind::Msb(Msb::Int { min, max }),
            Kind::Float if msb => Kind::Msb(Msb::Float),
            Kind::Double if msb => Kind::Msb(Msb::Double),
            Kind::Uint64 if msb => Kind::Msb(Msb::Uint64),
            k => k,
        })
    }
}
