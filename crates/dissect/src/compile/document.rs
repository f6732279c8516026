//! The document: its top-level nodes (`protocol`, `enum`, `struct`, `header`,
//! `fragment`, `messages`, `packet`) compiled into a [`Program`], and `describe`; the
//! packet types' space is `type_space.rs`, the checks that need the whole of it (field
//! limit, fragment widths, Info templates) `whole.rs`.

use super::messages::MessagesDef;
use super::*;

/// Braces of an info template pair up, one level deep.
pub(super) fn template_syntax(t: &str) -> Result<(), String> {
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
pub(super) fn template_indices(paths: &[crate::paths::PathInfo], path: &str) -> Result<(), String> {
    let mut rest = path;
    let mut consumed = 0;
    while let Some(open) = rest.find('[') {
        let close = rest[open..]
            .find(']')
            .map(|c| open + c)
            .ok_or_else(|| format!("`{path}`: a `[` is never closed"))?;
        let before = crate::paths::strip_indices(&path[..consumed + open]);
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
pub(super) struct Outline<'d> {
    /// The header node, named in diagnostics.
    pub(super) h: &'d KdlNode,
    pub(super) header: Block,
    /// Message types' ids follow the datagram kinds' (0 without kinds).
    pub(super) message_base: u32,
    pub(super) messages: Option<MessagesDef>,
    pub(super) fragment: Option<(&'d KdlNode, Block)>,
    pub(super) when: Option<Expr>,
    pub(super) roles: u32,
    pub(super) roles_ok: bool,
    pub(super) typed: bool,
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
    pub(super) fn outline(&mut self, top: &TopLevel<'d>, params: &mut Params) -> Option<Outline<'d>> {
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
            let any = crate::program::MessageFragmentDef::ANY;
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

    /// The program: the compiled tree taken over, types past the packets' for
    /// fragments and whole datagrams, and its plan.
    pub(super) fn program(
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
        program.plan = crate::plan::Plan::build(&program);
        if self.remaining {
            program.params.remaining = true;
            program.plan.interpret_only();
        }
        program.compile_native();
        program
    }

    /// Sorts the document's top-level nodes; structs and enums are registered here.
    pub(super) fn top_level(&mut self, doc: &'d KdlDocument, top: &mut TopLevel<'d>) {
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
    pub(super) fn struct_def(&mut self, n: &'d KdlNode) {
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

    pub(super) fn enum_def(&mut self, n: &KdlNode) {
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
}

/// The document's top-level nodes, sorted by kind.
#[derive(Default)]
pub(super) struct TopLevel<'d> {
    pub(super) protocol: Option<&'d KdlNode>,
    pub(super) header: Option<&'d KdlNode>,
    pub(super) fragment: Option<&'d KdlNode>,
    pub(super) messages: Option<&'d KdlNode>,
    pub(super) packets: Vec<&'d KdlNode>,
    pub(super) plaintext: Vec<&'d KdlNode>,
}
