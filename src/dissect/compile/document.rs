//! The document: its top-level nodes (`protocol`, `enum`, `struct`, `header`,
//! `fragment`, `messages`, `packet`) compiled into a [`Program`], the checks that need
//! the whole of it (field limit, fragment widths, Info templates), and `describe`.

use super::messages::MessagesDef;
use super::*;

/// Braces of an info template pair up, one level deep.
fn template_syntax(t: &str) -> Result<(), String> {
    let mut open = None;
    for (i, c) in t.char_indices() {
        match (c, open) {
            ('{', Some(_)) => return Err(format!("`{{` at byte {i} is inside a placeholder")),
            ('{', None) => open = Some(i),
            ('}', None) => return Err(format!("`}}` at byte {i} closes no placeholder")),
            ('}', Some(_)) => open = None,
            _ => {}
        }
    }
    match open {
        Some(i) => Err(format!("the `{{` at byte {i} is never closed")),
        None => Ok(()),
    }
}

/// Element indices in a placeholder (`{objects[3].x}`) follow a list or array and fit
/// its element limit.
fn template_indices(paths: &[crate::dissect::paths::PathInfo], path: &str) -> Result<(), String> {
    let mut rest = path;
    let mut consumed = 0;
    while let Some(open) = rest.find('[') {
        let close = rest[open..]
            .find(']')
            .map(|c| open + c)
            .ok_or_else(|| format!("`{path}`: a `[` is never closed"))?;
        let before = crate::dissect::paths::strip_indices(&path[..consumed + open]);
        let index = &rest[open + 1..close];
        if !paths.iter().any(|p| p.path == before && p.indexed) {
            return Err(format!(
                "`{path}`: `{before}` is not a list or array, so it has no element [{index}]"
            ));
        }
        match index.trim().parse::<u64>() {
            Ok(n) if n < Limits::default().max_elements => {}
            _ => {
                return Err(format!(
                    "`{path}`: element index `{index}` is not a number below {}",
                    Limits::default().max_elements
                ));
            }
        }
        consumed += close + 1;
        rest = &rest[close + 1..];
    }
    Ok(())
}

/// The `{…}` placeholders of an info template, in order.
pub fn template_fields(t: &str) -> impl Iterator<Item = &str> {
    t.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(f, _)| f.trim()))
}

/// Names a [`HeaderFormat`] for reports.
pub fn describe(p: &Program) -> String {
    let format = &p.params.format;
    let mut order = String::new();
    if p.params.msb {
        order.push_str(", read most significant bit first");
    }
    if let Some(rule) = p.params.describe_rule() {
        order.push_str(&format!(", checksum {rule}"));
    }
    if p.kinds {
        return format!(
            "datagram kinds by the header's type, several messages in those that say `messages`{order}"
        );
    }
    if p.messages.is_some() {
        return format!("several messages per datagram{order}");
    }
    if p.fragment.is_none() {
        return format!("{} types, no fragments{order}", format.num_types);
    }
    format!(
        "{} types, fragments of {} bytes (at most {}), count written as {}{order}",
        format.num_types,
        format.fragment_size,
        format.max_fragments,
        match format.count_encoding {
            CountEncoding::Count => "the count",
            CountEncoding::CountMinusOne => "count-1",
        }
    )
}

/// What the header, messages and fragment blocks declare: the frame every packet's
/// body is read in, and the roles found so far.
struct Outline<'d> {
    /// The header node, named in diagnostics.
    h: &'d KdlNode,
    header: Block,
    /// Message types' ids follow the datagram kinds' (0 without kinds).
    message_base: u32,
    messages: Option<MessagesDef>,
    fragment: Option<(&'d KdlNode, Block)>,
    when: Option<Expr>,
    roles: u32,
    roles_ok: bool,
    typed: bool,
}

impl<'d> Compiler<'d> {
    /// The whole definition: protocol, header, messages and fragment blocks, then each
    /// packet, checked together and planned.
    pub(super) fn document(&mut self, doc: &'d KdlDocument) -> Option<Program> {
        let mut params = Params::default();
        let mut top = TopLevel::default();
        self.top_level(doc, &mut top);
        if self.plaintext_view {
            top.packets.extend(top.plaintext.iter().copied());
        }
        // Space 0 is each flow's own counter.
        let mut spaces = vec![SequenceSpace {
            name: "flow".into(),
            per_sender: false,
        }];
        if let Some(p) = top.protocol {
            self.protocol(p, &mut params, &mut spaces);
        }
        if let (Some(n), None) = (top.plaintext.first(), &params.encryption) {
            self.error(
                Self::name_span(n),
                "a `plaintext` block needs the protocol's `encryption`",
                "no encryption declared",
                Some("add `encryption \"netcode-1.02\"` to the protocol block".into()),
            );
        }
        let mut outline = self.outline(&top, &mut params)?;
        let mut info_spans: Vec<(usize, SourceSpan)> = Vec::new();
        let packets = self.packet_defs(&top.packets, &mut outline, &mut params, &spaces, &mut info_spans);
        let by_type = self.checked_together(&outline, &mut params, &packets)?;
        let program = self.program(outline, params, spaces, packets, by_type);
        self.info_templates(&program, &info_spans);
        Some(program)
    }

    /// The header, messages and fragment blocks, their roles, and the number of types.
    fn outline(&mut self, top: &TopLevel<'d>, params: &mut Params) -> Option<Outline<'d>> {
        let messages_node = top.messages;
        let Some(h) = top.header else {
            self.error(
                SourceSpan::from(0..0),
                "the definition has no `header` block",
                "expected a header",
                Some("add `header { bits crc 32 role=crc; bits sequence 16 role=sequence; int type 0 5 role=type }`".into()),
            );
            return None;
        };
        self.scope.clear();
        let header = self.block(h.children(), 0);
        self.header_scope = self.scope.clone();
        self.header_block = Some(header);
        if !self.within_field_limit(header, Self::name_span(h)) {
            return None;
        }
        let with_crc = params.checksum != Checksum::None;
        // The condition reads header fields, which are in scope now.
        if let Some(e) = self.stand_in_when {
            let when = self.expression(e);
            if let Some(rule) = &mut params.rule {
                rule.when = when;
            }
        }
        let mut roles = 0u32;
        // Datagram kinds beside messages: the header's type names the kind.
        self.kinds = messages_node.is_some() && !self.role_nodes(header, Role::Type).is_empty();
        // With messages, a datagram sequence is optional and types are the messages'.
        // Fragments are grouped by the sequence: then every header path has one.
        let fragments = top.fragment.is_some() && messages_node.is_none();
        let mut roles_ok = self.role_placement(h, header, Role::Sequence, fragments, &mut roles);
        if messages_node.is_none()
            && let Some(m) = top.packets.iter().find(|p| p.name().value() == "message")
        {
            self.error(
                Self::name_span(m),
                "`message` types need a `messages` block: what each message starts with",
                "no messages block",
                Some("add `messages { bits type 8 role=type }` (the fields before each message's body), or write `packet` for one message per datagram".into()),
            );
        }
        let messages = messages_node.and_then(|m| self.messages_block(m, top.fragment));
        if messages_node.is_some() && messages.is_none() {
            return None;
        }
        // Fragment roles of the messages block: any message type carries them.
        if let (Some(m), Some(def)) = (messages_node, &messages) {
            let any = crate::dissect::program::MessageFragmentDef::ANY;
            roles_ok &= self.message_fragment(m, (def.header, Block::default()), any, params);
        }
        roles_ok &= match (messages_node, &messages) {
            (Some(m), Some(def)) if self.kinds => {
                self.role_placement(h, header, Role::Type, false, &mut roles)
                    & self.role_placement(m, def.header, Role::Type, false, &mut roles)
            }
            (Some(m), Some(def)) => self.role_placement(m, def.header, Role::Type, false, &mut roles),
            _ => self.role_placement(h, header, Role::Type, false, &mut roles),
        };
        if with_crc {
            roles_ok &= self.role_placement(h, header, Role::Crc, true, &mut roles);
            roles_ok &= self.checksum_position(header, params);
        } else if let Some(id) = self.role_nodes(header, Role::Crc).first() {
            let name = self.nodes[*id as usize].name.clone();
            self.error(
                self.spans[*id as usize],
                format!("the field `{name}` has role=crc, but the protocol declares `checksum \"none\"`"),
                "role=crc",
                Some("remove role=crc, or declare `checksum \"crc32\"` in the protocol block".into()),
            );
        }
        for role in [
            Role::Ack,
            Role::AckBits,
            Role::ProtocolId,
            Role::AckBelow,
            Role::AckUpTo,
        ] {
            roles_ok &= self.role_placement(h, header, role, false, &mut roles);
        }
        roles_ok &= self.datagram_ranges(h, header, &mut roles, params);
        let (fragment, when) = self.fragment_block(top.fragment)?;
        roles_ok &= self.no_offset_roles(header);
        roles_ok &= self.send_time(h, header, params);
        roles_ok &= self.fragment_roles(fragment, when.is_some(), header, &params.format, &mut roles);
        let typed = Program::role_declared(roles, Role::Type);

        // The type field's range fixes the number of packet types (with datagram kinds,
        // the header's; the messages' follow them).
        let type_block = match &messages {
            Some(m) if !self.kinds => m.header,
            _ => header,
        };
        let type_node = self.role_nodes(type_block, Role::Type).first().copied();
        let derived_types = type_node.and_then(|id| self.types_of(id));
        self.type_count(params, derived_types, typed, type_node, top.protocol, h);
        let message_base = match (&messages, messages_node) {
            (Some(m), Some(node)) if self.kinds => {
                let base = params.format.num_types;
                let count = self.message_type_count(node, m.header)?;
                params.format.num_types = base + count;
                base
            }
            _ => 0,
        };
        Some(Outline {
            h,
            header,
            message_base,
            messages,
            fragment,
            when,
            roles,
            roles_ok,
            typed,
        })
    }

    /// The fragment block (if any) and its `when` condition. None: over the field limit.
    #[allow(clippy::type_complexity)]
    fn fragment_block(
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

    /// Every `packet` (and `message`) block that compiles, in order.
    fn packet_defs(
        &mut self,
        nodes: &[&'d KdlNode],
        o: &mut Outline<'d>,
        params: &mut Params,
        spaces: &[SequenceSpace],
        info_spans: &mut Vec<(usize, SourceSpan)>,
    ) -> Vec<PacketDef> {
        let mut packets: Vec<PacketDef> = Vec::new();
        let mut seen: HashMap<u32, (String, usize)> = HashMap::new();
        let fragment_zero = o.fragment.is_some() && o.when.is_none() && o.typed;
        let base = o.message_base;
        for p in nodes {
            // With datagram kinds, `packet` is a kind and `message` a message type, whose
            // ids follow the kinds'; otherwise every type is a message's, or a packet's.
            let message = o.messages.is_some() && (!self.kinds || p.name().value() == "message");
            let (range, base) = match (self.kinds, message) {
                (true, true) => (params.format.num_types - base, base),
                (true, false) => (base, 0),
                _ => (params.format.num_types, 0),
            };
            let Some((id, name)) = self.packet_id(p, range, base, fragment_zero, &mut seen) else {
                continue;
            };
            let index = packets.len();
            let ty = (id as u32 + base, name);
            if let Some(d) = self.packet_def(p, ty, message, index, o, params, spaces, info_spans) {
                packets.push(d);
            }
        }
        packets
    }

    /// One packet's body, its roles and its properties. None: over the field limit.
    #[allow(clippy::too_many_arguments)]
    fn packet_def(
        &mut self,
        p: &'d KdlNode,
        (type_id, name): (u32, String),
        message: bool,
        index: usize,
        o: &mut Outline<'d>,
        params: &mut Params,
        spaces: &[SequenceSpace],
        info_spans: &mut Vec<(usize, SourceSpan)>,
    ) -> Option<PacketDef> {
        self.extra_arguments(p, 2, &usage("packet"));
        // A body reads the header's fields, and a message's its messages block's.
        self.scope = match &o.messages {
            Some(m) if message => m.scope.clone(),
            _ => self.header_scope.clone(),
        };
        self.check_props(p, &["doc", "from", "sequence-space", "info"]);
        let info = self.packet_info(p, index, info_spans);
        let space = self.packet_space(p, spaces);
        let from = self.packet_side(p);
        self.in_messages = message;
        let body = self.block(p.children(), 0);
        if !self.within_field_limit(body, Self::name_span(p)) {
            return None;
        }
        self.in_messages = false;
        if let Some(m) = o.messages.as_ref().filter(|_| message) {
            let header = m.header;
            o.roles_ok &= self.message_ack(p, header, body);
            o.roles_ok &= self.role_placement(p, body, Role::ProtocolId, false, &mut o.roles);
            o.roles_ok &= self.role_placement(p, body, Role::AckBits, false, &mut o.roles);
        } else {
            for role in [
                Role::Ack,
                Role::AckBits,
                Role::ProtocolId,
                Role::AckBelow,
                Role::AckUpTo,
            ] {
                o.roles_ok &= self.role_placement(p, body, role, false, &mut o.roles);
            }
            o.roles_ok &= self.datagram_ranges(p, body, &mut o.roles, params);
        }
        if !message {
            o.roles_ok &= self.kind_sequence(p, o.header, body, &mut o.roles);
        }
        if let Some(m) = o.messages.as_ref().filter(|_| message) {
            let header = m.header;
            o.roles_ok &= self.message_streams(&name, header, body);
            o.roles_ok &= self.message_fragment(p, (header, body), type_id, params);
        } else {
            o.roles_ok &= self.no_offset_roles(body);
            o.roles_ok &= self.no_time_roles(body, Role::SendTime);
            o.roles_ok &= self.no_time_roles(body, Role::AckTime);
        }
        Some(PacketDef {
            type_id,
            name,
            doc: prop(p, "doc")
                .and_then(|e| e.value().as_string())
                .map(str::to_string),
            from,
            space,
            body,
            info,
            message,
        })
    }

    /// A datagram's ranges and NAKs in `block`, and whether it acks beyond one sequence
    /// (its fields are then read one by one).
    fn datagram_ranges(
        &mut self,
        owner: &KdlNode,
        block: Block,
        roles: &mut u32,
        params: &mut Params,
    ) -> bool {
        let ok = self.ack_ranges(owner, block);
        for role in [
            Role::AckBelow,
            Role::AckUpTo,
            Role::AckRangeStart,
            Role::NakRangeStart,
        ] {
            if !self.role_nodes(block, role).is_empty() {
                Program::declare_role(roles, role);
                params.datagram_acks = true;
            }
        }
        ok
    }

    /// A packet's body may carry the datagram's sequence (a datagram kind's own), never
    /// beside one of the header on the same path.
    fn kind_sequence(&mut self, p: &KdlNode, header: Block, body: Block, roles: &mut u32) -> bool {
        let mut ok = self.role_placement(p, body, Role::Sequence, false, roles);
        let (_, in_header, _) = self.role_paths(header, Role::Sequence, 0);
        let (_, in_body, _) = self.role_paths(body, Role::Sequence, 0);
        if in_header > 0
            && in_body > 0
            && let Some(&id) = self.role_nodes(body, Role::Sequence).first()
        {
            ok = false;
            self.error(
                self.spans[id as usize],
                format!(
                    "more than one field with role=sequence on one path through the header and `{}`",
                    positional(p).get(1).and_then(|e| e.value().as_string()).unwrap_or("packet")
                ),
                "another role field on the same path",
                Some("a datagram has one sequence: keep it in the header, or in the bodies of the kinds whose header has none".into()),
            );
        }
        ok
    }

    /// What only the whole definition tells: limits, roles without effect, stand-ins.
    /// Returns the packet of each type; None when the definition has errors.
    fn checked_together(
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
    fn reads_messages(&self, block: Block, depth: u32) -> bool {
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
    fn acks_that_cannot_work(&mut self, o: &Outline<'d>) {
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

    /// The program: the compiled tree taken over, types past the packets' for
    /// fragments and whole datagrams, and its plan.
    fn program(
        &mut self,
        o: Outline<'d>,
        mut params: Params,
        spaces: Vec<SequenceSpace>,
        packets: Vec<PacketDef>,
        by_type: Vec<Option<u16>>,
    ) -> Program {
        // With a condition, fragments get a type of their own, one past the packets'.
        let fragment_type = if o.when.is_some() {
            params.format.num_types += 1;
            params.format.num_types - 1
        } else {
            crate::validate::FRAGMENT_TYPE
        };
        // Whole datagrams of a protocol with messages: a type past the messages'.
        let datagram_type = o.messages.as_ref().filter(|_| !self.kinds).map(|_| {
            params.format.num_types += 1;
            params.format.num_types - 1
        });
        params.dissect_as = std::mem::take(&mut self.dissect_as);
        params.ack_width = (self.nodes.iter())
            .filter(|n| n.role.is_some_and(|r| r == Role::Ack || r.acks_more()) && n.stream.is_none())
            .map(|n| self.kind_width(&n.kind).min(32))
            .max()
            .unwrap_or(16);
        let bodies = packets.iter().filter(|d| !d.message).map(|d| d.body);
        let sequence_bits = self.sequence_bits(std::iter::once(o.header).chain(bodies));
        // A datagram may carry no sequence: with messages, or where no field on its
        // header's path has one (a kind's body may, or none).
        let sequence_optional = o.messages.is_some() || self.role_paths(o.header, Role::Sequence, 0).0 == 0;
        let mut program = Program {
            params,
            nodes: std::mem::take(&mut self.nodes),
            children: std::mem::take(&mut self.children),
            code: std::mem::take(&mut self.code),
            header: o.header,
            fragment: o.fragment.map(|f| f.1),
            fragment_when: o.when,
            fragment_type,
            roles: o.roles,
            sequence_bits,
            spaces,
            packets,
            by_type,
            enums: std::mem::take(&mut self.enums),
            slot_count: self.slot_count,
            limits: Limits::default(),
            messages: o.messages.map(|m| m.node),
            datagram_type,
            kinds: self.kinds,
            message_base: o.message_base,
            sequence_optional,
            plan: Default::default(),
            native: Default::default(),
        };
        program.plan = crate::dissect::plan::Plan::build(&program);
        if self.remaining {
            program.params.remaining = true;
            program.plan.interpret_only();
        }
        program.compile_native();
        program
    }

    /// The fragment block's roles and widths (fragments without a type field need a
    /// condition), and fragment roles refused outside it.
    fn fragment_roles(
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

    /// Sorts the document's top-level nodes; structs and enums are registered here.
    fn top_level(&mut self, doc: &'d KdlDocument, top: &mut TopLevel<'d>) {
        for n in doc.nodes() {
            match n.name().value() {
                "protocol" => top.protocol = Some(n),
                "enum" => self.enum_def(n),
                "struct" => self.struct_def(n),
                "header" => top.header = Some(n),
                "fragment" => top.fragment = Some(n),
                "messages" => top.messages = Some(n),
                "packet" | "message" => top.packets.push(n),
                "plaintext" => top.plaintext.push(n),
                other => {
                    let hint = closest(
                    other,
                    ["protocol", "enum", "struct", "header", "fragment", "packet", "messages", "message", "plaintext"],
                )
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| {
                    "top-level nodes are protocol, enum, struct, header, fragment, packet, messages and message".into()
                });
                    self.error(
                        Self::name_span(n),
                        format!("unknown top-level node `{other}`"),
                        "not a definition",
                        Some(hint),
                    );
                }
            }
        }
    }

    /// `struct NAME { … }`: registered, compiled when first used.
    fn struct_def(&mut self, n: &'d KdlNode) {
        let Some(name) = self.arg_str(n, 0, "the struct's name") else {
            return;
        };
        if PRIMITIVES.contains(&name.as_str()) {
            self.error(
                positional(n)[0].span(),
                format!("struct name `{name}` clashes with the primitive `{name}`"),
                "rename this struct",
                None,
            );
        } else if self
            .structs
            .insert(name.clone(), StructState::Pending(n))
            .is_some()
        {
            self.error(
                positional(n)[0].span(),
                format!("struct `{name}` is defined twice"),
                "second definition",
                None,
            );
        }
    }

    /// The number of packet types: the type field's range, or `types N` in the protocol
    /// block when they agree.
    fn type_count(
        &mut self,
        params: &mut Params,
        derived_types: Option<u32>,
        typed: bool,
        type_node: Option<NodeId>,
        protocol_node: Option<&KdlNode>,
        h: &KdlNode,
    ) {
        match (derived_types, params.format.num_types) {
            (Some(d), n) if n != d && n != 0 => {
                let span = protocol_node
                    .and_then(|p| p.children())
                    .and_then(|c| c.get("types").map(|v| v.span()))
                    .unwrap_or(Self::name_span(h));
                self.error(
                    span,
                    format!("`types {n}` disagrees with the header's type field, which holds {d} types"),
                    "number of packet types",
                    Some("the type field is `int(0, types-1)`; make the two agree".into()),
                );
            }
            (Some(d), _) => params.format.num_types = d,
            (None, 0) if !typed => params.format.num_types = 1,
            (None, 0) => {
                if let Some(id) = type_node {
                    let node = &self.nodes[id as usize];
                    let message = match node.kind {
                        Kind::Derived(_) => format!(
                            "the type field `{}` is derived: how many types there are is not known",
                            node.name
                        ),
                        _ => format!(
                            "the type field `{}` (a `{}`) gives no number of types",
                            node.name,
                            node.kind.name()
                        ),
                    };
                    self.error(
                        self.spans[id as usize],
                        message,
                        "type field",
                        Some("say how many with `types N` in the protocol block, or make the field `int 0 N` or `bits N` (N ≤ 16)".into()),
                    );
                }
            }
            _ => {}
        }
    }

    /// The number of types a type field's range gives (`int 0 N`, `bits N` with N ≤ 16).
    fn types_of(&self, id: NodeId) -> Option<u32> {
        match self.nodes[id as usize].kind.plain() {
            Kind::Int { min: 0, max } if (0..1 << 16).contains(&max) => Some(max as u32 + 1),
            Kind::Bits(b) if b <= 16 => Some(1u32 << b),
            _ => None,
        }
    }

    /// With datagram kinds, the number of message types: the messages' type field's
    /// range, or `types=N` on the messages block.
    fn message_type_count(&mut self, m: &KdlNode, header: Block) -> Option<u32> {
        let node = self.role_nodes(header, Role::Type).first().copied();
        let given = prop(m, "types").map(|e| (e.span(), e.value().as_integer()));
        match (node.and_then(|id| self.types_of(id)), given) {
            (_, Some((_, Some(n)))) if (1..=65536).contains(&n) => Some(n as u32),
            (_, Some((span, _))) => {
                self.error(span, "`types` is 1..=65536", "types", None);
                None
            }
            (Some(n), None) => Some(n),
            // No type field: every message is type 0.
            (None, None) if node.is_none() => Some(1),
            (None, None) => {
                self.error(
                    node.map_or(Self::name_span(m), |id| self.spans[id as usize]),
                    "the messages' type field gives no number of message types",
                    "message types",
                    Some("make it `int 0 N` or `bits N` (N ≤ 16), or write `messages types=N { … }`".into()),
                );
                None
            }
        }
    }

    /// The datagram sequence's width in bits, over the header and the packets' bodies
    /// (16 without a sequence field).
    fn sequence_bits(&self, blocks: impl IntoIterator<Item = Block>) -> u32 {
        blocks
            .into_iter()
            .flat_map(|b| self.role_nodes(b, Role::Sequence))
            .filter(|&id| self.nodes[id as usize].stream.is_none())
            .map(|id| self.kind_width(&self.nodes[id as usize].kind))
            .max()
            .unwrap_or(16)
    }

    /// A packet's `sequence-space` names a space the protocol block declares.
    pub(super) fn unknown_space(&mut self, span: SourceSpan, name: &str, spaces: &[SequenceSpace]) {
        let declared: Vec<&str> = spaces.iter().skip(1).map(|s| s.name.as_str()).collect();
        let help = match closest(name, declared.iter().copied()) {
            Some(c) => format!("did you mean `{c}`?"),
            None if declared.is_empty() => {
                "declare it in the protocol block: `sequence-space \"NAME\" per=\"flow\"` (or per=\"sender\")"
                    .into()
            }
            None => format!("the protocol block declares: {}", declared.join(", ")),
        };
        self.error(
            span,
            format!("sequence space `{name}` is not declared"),
            "unknown space",
            Some(help),
        );
    }

    /// `id` is 32 bits, or 64 with `bits=64`: another width would be read as one of them.
    pub(super) fn id_width(&mut self, n: &KdlNode, v: i128) {
        let Some(e) = prop(n, "bits") else { return };
        let ok = match e.value().as_integer() {
            Some(64) => true,
            Some(32) => v <= u32::MAX as i128,
            _ => false,
        };
        if !ok {
            self.error(
                e.span(),
                "a protocol id is 32 bits (`bits=32`, the value at most 0xffffffff) or 64 (`bits=64`)",
                "id width",
                None,
            );
        }
    }

    /// The field limit counts fields as laid out, every struct copied where it is used
    /// ([`super::expand`]), over the header, fragment and packets compiled so far: a
    /// block that passes it is refused at the struct use where it does, before anything
    /// walks it expanded. Past the limit, later blocks are refused without more errors.
    fn within_field_limit(&mut self, block: Block, owner: SourceSpan) -> bool {
        let limit = MAX_NODES as u64;
        if self.expanded > limit {
            return false;
        }
        let mut x = crate::dissect::expand::Expansion::new(&self.nodes, &self.children);
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
    fn fragment_widths(&mut self, f: &KdlNode, block: Block, format: &HeaderFormat) {
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

    fn enum_def(&mut self, n: &KdlNode) {
        let Some(name) = self.arg_str(n, 0, "the enum's name") else {
            return;
        };
        let mut values: Vec<(i64, String)> = Vec::new();
        for v in n.children().map(|c| c.nodes()).unwrap_or(&[]) {
            self.extra_arguments(v, 1, "`NAME VALUE` inside an enum");
            let value_name = v.name().value();
            match positional(v).first().and_then(|e| e.value().as_integer()) {
                Some(x) if x >= i64::MIN as i128 && x <= i64::MAX as i128 => {
                    if let Some((_, first)) = values.iter().find(|(y, _)| *y == x as i64) {
                        self.error(
                            positional(v)[0].span(),
                            format!("enum `{name}` gives the value {x} to both `{first}` and `{value_name}`"),
                            "value used twice",
                            Some("each value names one thing; renumber one of them".into()),
                        );
                    } else if values.iter().any(|(_, other)| other == value_name) {
                        self.error(
                            Self::name_span(v),
                            format!("enum `{name}` names `{value_name}` twice"),
                            "name used twice",
                            None,
                        );
                    }
                    values.push((x as i64, value_name.to_string()))
                }
                _ => self.error(
                    Self::name_span(v),
                    format!("enum value `{}` needs an integer", v.name().value()),
                    "value name",
                    Some("write `name 3`".into()),
                ),
            }
        }
        if self.enum_index.contains_key(&name) {
            self.error(
                positional(n)[0].span(),
                format!("enum `{name}` is defined twice"),
                "",
                None,
            );
            return;
        }
        self.enum_index.insert(name.clone(), self.enums.len() as u16);
        self.enums.push(EnumDef { name, values });
    }

    /// Every `{path}` of an `info` template names a field of its packet type.
    fn info_templates(&mut self, program: &Program, spans: &[(usize, SourceSpan)]) {
        if spans.is_empty() {
            return;
        }
        let paths = crate::dissect::paths::catalog(program);
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
                    crate::dissect::paths::info_path(program, d, part.trim_start_matches('#'))
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
                    e.path == crate::dissect::paths::strip_indices(path)
                        && (e.types.is_empty() || e.types.contains(&d.type_id))
                });
                if !known {
                    let hash = if part.starts_with('#') { "#" } else { "" };
                    // A message's template names its own fields, without `messages.`.
                    let own = |n: &str| match d.message {
                        true => n.strip_prefix("messages.").unwrap_or(n).to_string(),
                        false => n.to_string(),
                    };
                    let near = crate::dissect::paths::nearest(&paths, path)
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

/// The document's top-level nodes, sorted by kind.
#[derive(Default)]
struct TopLevel<'d> {
    protocol: Option<&'d KdlNode>,
    header: Option<&'d KdlNode>,
    fragment: Option<&'d KdlNode>,
    messages: Option<&'d KdlNode>,
    packets: Vec<&'d KdlNode>,
    plaintext: Vec<&'d KdlNode>,
}
