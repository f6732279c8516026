//! Packet types: their definitions, their ids and ranges, and the space the header's
//! type field leaves for them.

use super::document::*;
use super::*;

impl<'d> Compiler<'d> {
    /// Every `packet` (and `message`) block that compiles, in order.
    pub(super) fn packet_defs(
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
    pub(super) fn packet_def(
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
    pub(super) fn datagram_ranges(
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
    pub(super) fn kind_sequence(&mut self, p: &KdlNode, header: Block, body: Block, roles: &mut u32) -> bool {
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

    /// The number of packet types: the type field's range, or `types N` in the protocol
    /// block when they agree.
    pub(super) fn type_count(
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
    pub(super) fn types_of(&self, id: NodeId) -> Option<u32> {
        match self.nodes[id as usize].kind.plain() {
            Kind::Int { min: 0, max } if (0..1 << 16).contains(&max) => Some(max as u32 + 1),
            Kind::Bits(b) if b <= 16 => Some(1u32 << b),
            _ => None,
        }
    }

    /// With datagram kinds, the number of message types: the messages' type field's
    /// range, or `types=N` on the messages block.
    pub(super) fn message_type_count(&mut self, m: &KdlNode, header: Block) -> Option<u32> {
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
}
