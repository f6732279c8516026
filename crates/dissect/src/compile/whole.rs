//! The checks that need the whole document: roles read together, acks that cannot
//! work, fragment roles and widths, the field limit, sequence widths, Info templates.

use super::document::*;
use super::*;

impl<'d> Compiler<'d> {
    /// What only the whole definition tells: limits, roles without effect, stand-ins.
    /// Returns the packet of each type; None when the definition has errors.
    pub(super) fn checked_together(
        &mut self,
        o: &Outline<'d>,
        params: &mut Params,
        packets: &[PacketDef],
    ) -> Option<Vec<Option<u16>>> {
        let mut by_type = vec![None; params.format.num_types as usize + usize::from(o.when.is_some())];
        for (i, p) in packets.iter().enumerate() {
            if let Some(slot) = by_type.get_mut(p.type_id as usize) {
                *slot = Some(i as u16);
            }
        }
        if self.slot_count > u16::MAX as usize {
            self.error(Self::name_span(o.h), "too many fields", "", None);
        }
        if Program::role_declared(o.roles, Role::ProtocolId) && params.protocol_id.is_none() {
            self.error(
                Self::name_span(o.h),
                "a field has role=protocol-id, but the protocol block has no `id` to compare it with",
                "protocol id",
                Some("add `id 0x…` to the protocol block".into()),
            );
        }
        self.resolve_acked_streams();
        self.resolve_stand_in(params);
        self.resolve_reassembled_as(params, packets);
        if !o.roles_ok {
            return None;
        }
        for d in packets {
            self.roles_without_effect(d.body, &d.name, d.message, !d.message);
        }
        if let Some((f, block)) = &o.fragment {
            self.roles_without_effect(*block, f.name().value(), true, false);
        }
        self.acks_that_cannot_work(o);
        if let Some(m) = o.messages.as_ref().filter(|_| self.kinds)
            && !packets
                .iter()
                .any(|d| !d.message && self.reads_messages(d.body, 0))
        {
            self.error(
                self.spans[m.node as usize],
                "with datagram kinds (the header's role=type), messages are read where a kind's body says `messages`, and no `packet` does",
                "never read",
                Some("write `packet N \"data\" { …; messages }` for the kinds that carry messages (a `message` is a message type)".into()),
            );
        }
        if o.messages.is_none() && !Program::role_declared(o.roles, Role::Sequence) {
            self.error(
                Self::name_span(o.h),
                "no field has role=sequence, in the header or a packet's body",
                "missing role",
                Some("mark the datagram's sequence, for example `bits sequence 16 role=sequence`".into()),
            );
        }
        if let Some(m) = &o.messages {
            self.messages_advance(m, packets);
        }
        if !self.errors.is_empty() {
            return None;
        }
        Some(by_type)
    }

    /// Whether `block` reads the messages (a bare `messages` in it).
    pub(super) fn reads_messages(&self, block: Block, depth: u32) -> bool {
        let ids = self
            .children
            .get(block.start as usize..(block.start + block.len) as usize);
        depth < 64
            && ids
                .unwrap_or(&[])
                .iter()
                .any(|&id| match &self.nodes[id as usize].kind {
                    Kind::Messages { .. } => true,
                    k => k.blocks().into_iter().any(|b| self.reads_messages(b, depth + 1)),
                })
    }

    /// Ack roles nothing could be matched with: a datagram's ack without any datagram
    /// sequence, ack-bits without an ack, an echoed time without a send time.
    pub(super) fn acks_that_cannot_work(&mut self, o: &Outline<'d>) {
        let first = |c: &Self, role: Role, stream: bool| {
            (c.nodes.iter().enumerate())
                .find(|(_, n)| n.role == Some(role) && n.stream.is_some() == stream)
                .map(|(i, _)| i)
        };
        let sequence = Program::role_declared(o.roles, Role::Sequence);
        let datagram_ack = [
            Role::Ack,
            Role::AckBits,
            Role::AckBelow,
            Role::AckUpTo,
            Role::AckRangeStart,
            Role::NakRangeStart,
        ]
        .into_iter()
        .find_map(|r| first(self, r, false));
        if let Some(i) = datagram_ack
            && !sequence
        {
            self.error(
                self.spans[i],
                format!(
                    "`{}` acks the other direction's datagram sequence, but no datagram has one",
                    self.nodes[i].name
                ),
                "nothing to ack",
                Some("mark the datagram's sequence (`role=sequence` in the header or a packet's body); a message's ack names its stream: `role=ack stream=\"NAME\" key=\"…\"`".into()),
            );
        }
        if let Some(i) = first(self, Role::AckBits, false)
            && first(self, Role::Ack, false).is_none()
        {
            self.error(
                self.spans[i],
                "role=ack-bits counts back from a role=ack field, and there is none",
                "no ack",
                Some("mark the newest sequence acked `role=ack`; bit i of the ack-bits is `ack - i`".into()),
            );
        }
        let send_time = self.nodes.iter().any(|n| n.role == Some(Role::SendTime));
        if let Some(i) = self.nodes.iter().position(|n| n.role == Some(Role::AckTime))
            && !send_time
        {
            self.error(
                self.spans[i],
                "role=ack-time echoes a send time, but no field has role=send-time",
                "no send time",
                Some("mark the send time the ack echoes (`role=send-time`): without it no round trip could be matched".into()),
            );
        }
    }

    /// The fragment block (if any) and its `when` condition. None: over the field limit.
    #[allow(clippy::type_complexity)]
    pub(super) fn fragment_block(
        &mut self,
        node: Option<&'d KdlNode>,
    ) -> Option<(Option<(&'d KdlNode, Block)>, Option<Expr>)> {
        let when = node
            .and_then(|f| prop(f, "when"))
            .and_then(|e| self.expression(e));
        let fragment = node.map(|f| {
            self.check_props(f, &["when", "doc"]);
            let b = self.block(f.children(), 0);
            (f, b)
        });
        if let Some((f, b)) = fragment
            && !self.within_field_limit(b, Self::name_span(f))
        {
            return None;
        }
        Some((fragment, when))
    }

    /// The fragment block's roles and widths (fragments without a type field need a
    /// condition), and fragment roles refused outside it.
    pub(super) fn fragment_roles(
        &mut self,
        fragment: Option<(&KdlNode, Block)>,
        when: bool,
        header: Block,
        format: &HeaderFormat,
        roles: &mut u32,
    ) -> bool {
        let mut ok = true;
        if let Some((f, b)) = fragment {
            ok &= self.no_offset_roles(b);
            for role in [Role::FragmentId, Role::FragmentCount, Role::FragmentData] {
                ok &= self.role_placement(f, b, role, true, roles);
            }
            for role in [Role::Ack, Role::AckBits] {
                ok &= self.role_placement(f, b, role, false, roles);
            }
            for role in [Role::FragmentRemaining, Role::FragmentFirst, Role::FragmentLast] {
                for id in self.role_nodes(b, role) {
                    ok = false;
                    self.error(
                        self.spans[id as usize],
                        format!("role={} is for fragments inside messages", role.name()),
                        "not in a message",
                        Some("a datagram's fragments have an id and a count (`role=fragment-id`, `role=fragment-count`); count-down and flagged fragments follow a message's stream".into()),
                    );
                }
            }
            self.fragment_widths(f, b, format);
            if !when && !Program::role_declared(*roles, Role::Type) {
                self.error(
                    Self::name_span(f),
                    "without a type field, fragments need a condition",
                    "which datagrams are fragments?",
                    Some("write `fragment when=\"prefix & 1\" { … }` with a condition on header fields, or give the header a role=type field (fragments are then type 0)".into()),
                );
            }
        }
        for role in [Role::FragmentId, Role::FragmentCount, Role::FragmentData] {
            if fragment.is_none()
                && let Some(id) = self.role_nodes(header, role).first()
            {
                self.error(
                    self.spans[*id as usize],
                    format!("role={} belongs in the `fragment` block", role.name()),
                    "outside the fragment block",
                    Some("declare `fragment { … }` with the fragment id, count and data".into()),
                );
            }
        }
        ok
    }

    /// The datagram sequence's width in bits, over the header and the packets' bodies
    /// (16 without a sequence field).
    pub(super) fn sequence_bits(&self, blocks: impl IntoIterator<Item = Block>) -> u32 {
        blocks
            .into_iter()
            .flat_map(|b| self.role_nodes(b, Role::Sequence))
            .filter(|&id| self.nodes[id as usize].stream.is_none())
            .map(|id| self.kind_width(&self.nodes[id as usize].kind))
            .max()
            .unwrap_or(16)
    }

    /// The field limit counts fields as laid out, every struct copied where it is used
    /// ([`super::expand`]), over the header, fragment and packets compiled so far: a
    /// block that passes it is refused at the struct use where it does, before anything
    /// walks it expanded. Past the limit, later blocks are refused without more errors.
    pub(super) fn within_field_limit(&mut self, block: Block, owner: SourceSpan) -> bool {
        let limit = MAX_NODES as u64;
        if self.expanded > limit {
            return false;
        }
        let mut x = crate::expand::Expansion::new(&self.nodes, &self.children);
        let n = x.block(block, 0);
        if self.expanded.saturating_add(n) <= limit {
            self.expanded += n;
            return true;
        }
        let mut left = limit - self.expanded;
        let at = x.crossing(block, &mut left, 0);
        let (span, what, size) = match at {
            Some(id) => {
                let node = &self.nodes[id as usize];
                let what = match &node.kind {
                    Kind::Struct { .. } | Kind::Inline { .. } => {
                        format!("this use of a struct (`{}`)", node.name)
                    }
                    _ => format!("`{}`", node.name),
                };
                (
                    self.spans.get(id as usize).copied().unwrap_or(owner),
                    what,
                    x.node(id, 0),
                )
            }
            None => (owner, "this block".to_string(), n),
        };
        let total = if n == u64::MAX {
            "more than 2^64".to_string()
        } else {
            (self.expanded + n).to_string()
        };
        self.error(
            span,
            format!(
                "too many fields: {what} takes the definition past {limit} fields once structs are expanded"
            ),
            "past the field limit",
            Some(format!(
                "a struct counts once per use: {size} fields here; the definition so far expands to {total}"
            )),
        );
        self.expanded = limit + 1;
        false
    }

    /// The fragment id and count fields must hold every value `max-fragments` allows:
    /// a field too narrow fails only later, when a large packet is written.
    pub(super) fn fragment_widths(&mut self, f: &KdlNode, block: Block, format: &HeaderFormat) {
        let max = format.max_fragments as i64;
        let count_max = match format.count_encoding {
            CountEncoding::Count => max,
            CountEncoding::CountMinusOne => max - 1,
        };
        for (role, need, what) in [
            (Role::FragmentId, max - 1, "fragment ids up to"),
            (Role::FragmentCount, count_max, "the fragment count up to"),
        ] {
            let Some(&id) = self.role_nodes(block, role).first() else {
                continue;
            };
            let node = &self.nodes[id as usize];
            let holds = match node.kind {
                Kind::Bits(b) => (1i64 << b) - 1,
                Kind::Int { max, .. } => max,
                _ => continue,
            };
            if holds < need {
                let message = format!(
                    "the field `{}` ({}) holds at most {holds}, but max-fragments {max} needs {what} {need}",
                    node.name,
                    node.kind.name()
                );
                let at = f
                    .children()
                    .and_then(|c| {
                        c.nodes().iter().find(|c| {
                            positional(c).first().and_then(|e| e.value().as_string()) == Some(&node.name)
                        })
                    })
                    .map_or(Self::name_span(f), |c| c.span());
                self.error(
                    at,
                    message,
                    "field too narrow",
                    Some(format!(
                        "widen the field or lower `max-fragments` in the protocol block to {}",
                        match role {
                            Role::FragmentId => holds + 1,
                            _ if format.count_encoding == CountEncoding::CountMinusOne => holds + 1,
                            _ => holds,
                        }
                    )),
                );
            }
        }
    }

    /// Every `{path}` of an `info` template names a field of its packet type.
    pub(super) fn info_templates(&mut self, program: &Program, spans: &[(usize, SourceSpan)]) {
        if spans.is_empty() {
            return;
        }
        let paths = crate::paths::catalog(program);
        for &(i, span) in spans {
            let Some(d) = program.packets.get(i) else { continue };
            let Some(t) = &d.info else { continue };
            if let Err(why) = template_syntax(t) {
                self.error(
                    span,
                    format!("packet {}'s info: {why}", d.name),
                    "info template",
                    Some("placeholders are `{path}` and `{#path}`; braces do not nest".into()),
                );
                continue;
            }
            for part in template_fields(t) {
                let hash = if part.starts_with('#') { "#" } else { "" };
                let part = format!(
                    "{hash}{}",
                    crate::paths::info_path(program, d, part.trim_start_matches('#'))
                );
                let part = part.as_str();
                if let Err(why) = template_indices(&paths, part.trim_start_matches('#')) {
                    self.error(
                        span,
                        format!("packet {}'s info: {why}", d.name),
                        "info template",
                        None,
                    );
                    continue;
                }
                let path = part.trim_start_matches('#');
                let known = paths.iter().any(|e| {
                    e.path == crate::paths::strip_indices(path)
                        && (e.types.is_empty() || e.types.contains(&d.type_id))
                });
                if !known {
                    let hash = if part.starts_with('#') { "#" } else { "" };
                    // A message's template names its own fields, without `messages.`.
                    let own = |n: &str| match d.message {
                        true => n.strip_prefix("messages.").unwrap_or(n).to_string(),
                        false => n.to_string(),
                    };
                    let near = crate::paths::nearest(&paths, path)
                        .map(|n| format!("did you mean `{{{hash}{}}}`?", own(n)))
                        .unwrap_or_else(|| "name a field of the packet, like `{a}` or `{#items}`".into());
                    let what = if d.message { "message" } else { "packet" };
                    self.error(
                        span,
                        format!("{what} {} has no field `{}` for its info", d.name, own(path)),
                        "unknown field",
                        Some(near),
                    );
                }
            }
        }
    }
}
