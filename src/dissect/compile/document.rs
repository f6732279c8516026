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
    messages: Option<MessagesDef>,
    fragment: Option<(&'d KdlNode, Block)>,
    when: Option<Expr>,
    roles: u32,
    roles_ok: bool,
    sequence_bits: u32,
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
        // With messages, a datagram sequence is optional and types are the messages'.
        let mut roles_ok =
            self.role_placement(h, header, Role::Sequence, messages_node.is_none(), &mut roles);
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
        let messages = messages_node.and_then(|m| self.messages_block(m, header, top.fragment));
        if messages_node.is_some() && messages.is_none() {
            return None;
        }
        let type_block = messages.as_ref().map_or(header, |m| m.header);
        roles_ok &= match messages_node {
            Some(m) => self.role_placement(m, type_block, Role::Type, false, &mut roles),
            None => self.role_placement(h, header, Role::Type, false, &mut roles),
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
        for role in [Role::Ack, Role::AckBits, Role::ProtocolId] {
            roles_ok &= self.role_placement(h, header, role, false, &mut roles);
        }
        let sequence_bits = self.sequence_bits(header);
        let (fragment, when) = self.fragment_block(top.fragment)?;
        roles_ok &= self.no_offset_roles(header);
        roles_ok &= self.send_time(h, header, params);
        roles_ok &= self.fragment_roles(fragment, when.is_some(), header, &params.format, &mut roles);
        let typed = Program::role_declared(roles, Role::Type);

        // The type field's range fixes the number of packet types.
        let type_node = self.role_nodes(type_block, Role::Type).first().copied();
        let derived_types = type_node.and_then(|id| match self.nodes[id as usize].kind.plain() {
            Kind::Int { min: 0, max } if max < 1 << 16 => Some(max as u32 + 1),
            Kind::Bits(b) if b <= 16 => Some(1u32 << b),
            _ => None,
        });
        self.type_count(params, derived_types, typed, type_node, top.protocol, h);
        Some(Outline {
            h,
            header,
            messages,
            fragment,
            when,
            roles,
            roles_ok,
            sequence_bits,
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
        for p in nodes {
            let Some((id, name)) = self.packet_id(p, params.format.num_types, fragment_zero, &mut seen)
            else {
                continue;
            };
            let index = packets.len();
            if let Some(d) = self.packet_def(p, (id as u32, name), index, o, params, spaces, info_spans) {
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
        index: usize,
        o: &mut Outline<'d>,
        params: &mut Params,
        spaces: &[SequenceSpace],
        info_spans: &mut Vec<(usize, SourceSpan)>,
    ) -> Option<PacketDef> {
        self.extra_arguments(p, 2, &usage("packet"));
        self.scope.clear();
        if let Some(m) = &o.messages {
            // A message's body reads its own header's fields.
            self.scope = m.scope.clone();
        }
        self.check_props(p, &["doc", "from", "sequence-space", "info"]);
        let info = self.packet_info(p, index, info_spans);
        let space = self.packet_space(p, spaces);
        let from = self.packet_side(p);
        self.in_messages = o.messages.is_some();
        let body = self.block(p.children(), 0);
        if !self.within_field_limit(body, Self::name_span(p)) {
            return None;
        }
        self.in_messages = false;
        for role in [Role::Ack, Role::AckBits, Role::ProtocolId] {
            if role == Role::Ack && o.messages.is_some() {
                o.roles_ok &= self.message_ack(p, body);
                continue;
            }
            o.roles_ok &= self.role_placement(p, body, role, false, &mut o.roles);
        }
        if let Some(m) = &o.messages {
            let header = m.header;
            o.roles_ok &= self.message_streams(&name, header, body);
            o.roles_ok &= self.message_fragment(p, body, type_id, params);
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
        })
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
        self.resolve_stand_in(params);
        self.resolve_reassembled_as(params, packets);
        if !o.roles_ok {
            return None;
        }
        for d in packets {
            self.roles_without_effect(d.body, &d.name, o.messages.is_some());
        }
        if let Some((f, block)) = &o.fragment {
            self.roles_without_effect(*block, f.name().value(), true);
        }
        if !self.errors.is_empty() {
            return None;
        }
        Some(by_type)
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
        let datagram_type = o.messages.as_ref().map(|_| {
            params.format.num_types += 1;
            params.format.num_types - 1
        });
        params.dissect_as = std::mem::take(&mut self.dissect_as);
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
            sequence_bits: o.sequence_bits,
            spaces,
            packets,
            by_type,
            enums: std::mem::take(&mut self.enums),
            slot_count: self.slot_count,
            limits: Limits::default(),
            messages: o.messages.map(|m| m.node),
            datagram_type,
            plan: Default::default(),
        };
        program.plan = crate::dissect::plan::Plan::build(&program);
        if self.remaining {
            program.params.remaining = true;
            program.plan.interpret_only();
        }
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
                    let _ = id;
                    self.error(
                        Self::name_span(h),
                        "the type field must be `int 0 N` or `bits N` (N ≤ 16)",
                        "type field",
                        None,
                    );
                }
            }
            _ => {}
        }
    }

    /// The header's sequence width in bits (16 without a sequence field).
    fn sequence_bits(&self, header: Block) -> u32 {
        self.role_nodes(header, Role::Sequence)
            .iter()
            .map(|&id| match self.nodes[id as usize].kind.plain() {
                Kind::Bits(b) => b,
                Kind::Int { min, max } => int_width(min, max).unwrap_or(32),
                Kind::Uint64 | Kind::LeUint(_) => 64,
                _ => 0,
            })
            .max()
            .filter(|&b| b > 0)
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
                    let near = crate::dissect::paths::nearest(&paths, path)
                        .map(|n| format!("did you mean `{{{hash}{n}}}`?"))
                        .unwrap_or_else(|| "name a field of the packet, like `{a}` or `{#items}`".into());
                    self.error(
                        span,
                        format!("packet {} has no field `{path}` for its info", d.name),
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
