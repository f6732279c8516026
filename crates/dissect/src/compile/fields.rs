//! Fields: a block of field nodes, a struct's body compiled once, and one field node
//! (its primitive, arguments and properties) compiled into a node.

use super::*;

impl<'d> Compiler<'d> {
    /// Compiles the nodes of a block into a contiguous run of children.
    pub(super) fn block(&mut self, doc: Option<&'d KdlDocument>, depth: u32) -> Block {
        let mut ids: Vec<NodeId> = Vec::new();
        let mut names: HashSet<String> = HashSet::new();
        // The `if` an `else` may follow: the last field, or the last `else if`.
        let mut open_if: Option<NodeId> = None;
        for n in doc.map(|d| d.nodes()).unwrap_or(&[]) {
            if n.name().value() == "else" {
                let Some(target) = open_if.take() else {
                    self.error(Self::name_span(n), "`else` without a preceding `if`", "", None);
                    continue;
                };
                let args = positional(n);
                let otherwise = match args.as_slice() {
                    [] => self.block(n.children(), depth + 1),
                    [kw, cond] if kw.value().as_string() == Some("if") => {
                        // `else if "cond" { … }`: an `if` of its own in the else branch.
                        let Some(cond) = self.expression(cond) else {
                            continue;
                        };
                        let then = self.block(n.children(), depth + 1);
                        self.spans.push(n.span());
                        self.nodes.push(Node {
                            name: "if".into(),
                            kind: Kind::If {
                                cond,
                                then,
                                otherwise: Block::default(),
                            },
                            doc: None,
                            slot: None,
                            enum_id: None,
                            role: None,
                            type_name: None,
                            line: self.line_of(n.span()) as u32,
                            remember: None,
                            stream: None,
                        });
                        let nested = self.nodes.len() as NodeId - 1;
                        open_if = Some(nested);
                        let start = self.children.len() as u32;
                        self.children.push(nested);
                        Block { start, len: 1 }
                    }
                    _ => {
                        self.error(
                            args[0].span(),
                            "`else` takes no condition of its own",
                            "unexpected here",
                            Some("write `else if \"condition\" { … }`, or `else { … }`".into()),
                        );
                        continue;
                    }
                };
                if let Kind::If { otherwise: o, .. } = &mut self.nodes[target as usize].kind {
                    *o = otherwise;
                }
                continue;
            }
            open_if = None;
            if let Some(id) = self.field(n, depth) {
                let name = &self.nodes[id as usize].name;
                let anonymous = matches!(
                    self.nodes[id as usize].kind,
                    Kind::If { .. } | Kind::Align | Kind::Check { .. } | Kind::Inline { .. }
                );
                if !anonymous && !names.insert(name.clone()) {
                    let span = positional(n)
                        .first()
                        .map(|e| e.span())
                        .unwrap_or(Self::name_span(n));
                    self.error(
                        span,
                        format!("field `{name}` is declared twice in this block"),
                        "duplicate",
                        None,
                    );
                }
                if matches!(self.nodes[id as usize].kind, Kind::If { .. }) {
                    open_if = Some(id);
                }
                ids.push(id);
            }
        }
        let start = self.children.len() as u32;
        self.children.extend(&ids);
        Block {
            start,
            len: ids.len() as u32,
        }
    }

    /// The body of struct `name` as compiled where it is used now: a body compiled
    /// before is reused when the fields around it that it reads are the same.
    pub(super) fn struct_body(&mut self, name: &str, at: SourceSpan, depth: u32) -> Option<Block> {
        let def = match self.structs.get(name) {
            Some(StructState::Done(def, bodies)) => {
                if let Some((b, _)) = bodies.iter().find(|(_, deps)| self.scope.resolves_as(deps)) {
                    return Some(*b);
                }
                *def
            }
            Some(StructState::InProgress) => {
                self.error(
                    at,
                    format!("struct `{name}` contains itself"),
                    "recursive use",
                    Some("a struct cannot contain itself; use a list or array of another struct".into()),
                );
                return None;
            }
            Some(StructState::Pending(def)) => *def,
            None => return None,
        };
        let before = self.structs.insert(name.to_string(), StructState::InProgress);
        let saved = self.scope.enter_struct();
        let b = self.block(def.children(), depth + 1);
        let deps = self.scope.leave_struct(saved);
        let mut bodies = match before {
            Some(StructState::Done(_, bodies)) => bodies,
            _ => Vec::new(),
        };
        bodies.push((b, deps));
        self.structs
            .insert(name.to_string(), StructState::Done(def, bodies));
        Some(b)
    }

    /// One field node: its kind, properties, role and slot, pushed as a [`Node`].
    fn field(&mut self, n: &'d KdlNode, depth: u32) -> Option<NodeId> {
        let kind_name = n.name().value();
        if !self.room_for_field(n, depth) {
            return None;
        }
        let inline_struct = self.structs.contains_key(kind_name) && positional(n).is_empty();
        // `header` alone in a fragment or packet reads the protocol's header again.
        let header_reread = kind_name == "header"
            && self.header_block.is_some()
            && !self.structs.contains_key("header")
            && positional(n).is_empty();
        let messages_use =
            kind_name == "messages" && !self.structs.contains_key("messages") && positional(n).is_empty();
        let named = !matches!(kind_name, "align" | "if" | "check")
            && !inline_struct
            && !header_reread
            && !messages_use;
        let name = if named {
            self.arg_str(n, 0, "the field's name")?
        } else {
            kind_name.to_string()
        };
        let mut allowed = vec!["doc"];
        let shape = Shape {
            keyword: kind_name,
            inline_struct,
            header_reread,
            messages_use,
        };
        let kind = self.kind(n, shape, depth, &mut allowed)?;
        let expected = Self::expected_arguments(n, &kind, header_reread);
        self.extra_arguments(n, expected, &usage(kind_name));
        let kind = self.ordered(n, kind, &mut allowed)?;
        let remember = self.remember(n, &kind, &mut allowed);
        self.role_props(n, &mut allowed);
        self.check_props(n, &allowed);
        let role = self.role_of(n);
        let enum_id = self.enum_of(n);
        let slot = if named && is_integer(&kind) {
            Some(self.slot_for(&name, role))
        } else {
            None
        };
        let stream = match role {
            Some(Role::Sequence) => self.stream(n, &kind)?,
            _ => None,
        };
        // A message's ack names the stream it acks, resolved once every stream is known.
        let acked = match role {
            Some(
                r @ (Role::Ack | Role::AckBelow | Role::AckUpTo | Role::AckRangeStart | Role::NakRangeStart),
            ) if self.in_messages => Some(self.acked_stream(n, r)?),
            _ => None,
        };
        let fragment_key = match role {
            Some(Role::FragmentId) if self.in_messages => Some(self.fragment_key(n)?),
            _ => None,
        };
        if named {
            self.scope.push(name.clone(), slot);
        }
        if let Some(s) = slot {
            let w = self.kind_width(&kind);
            let e = self.slot_widths.entry(s).or_insert(w);
            *e = (*e).max(w);
        }
        let type_name = matches!(kind, Kind::Struct { .. }).then(|| kind_name.to_string());
        self.spans.push(n.span());
        self.nodes.push(Node {
            name,
            kind,
            doc: prop(n, "doc")
                .and_then(|e| e.value().as_string())
                .map(str::to_string),
            slot,
            enum_id,
            role,
            type_name,
            line: self.line_of(n.span()) as u32,
            remember,
            stream,
        });
        let id = self.nodes.len() as u32 - 1;
        if let Some(a) = acked {
            self.pending_acks.push((id, a));
        }
        if let Some(k) = fragment_key {
            self.fragment_keys.insert(id, k);
        }
        if let Some(layer) = prop(n, "dissect-as").and_then(|e| e.value().as_string()) {
            self.dissect_as.push((id, layer.to_string()));
        }
        if let (Some(Role::FragmentData), true) = (role, self.in_messages) {
            self.reassembled_as_of(n);
        }
        Some(self.nodes.len() as u32 - 1)
    }

    /// Whether another field fits: nesting depth and the definition's field count.
    fn room_for_field(&mut self, n: &KdlNode, depth: u32) -> bool {
        if depth > 32 {
            self.error(
                Self::name_span(n),
                "definition nests more than 32 levels deep",
                "",
                None,
            );
            return false;
        }
        if self.nodes.len() >= MAX_NODES {
            self.error(
                Self::name_span(n),
                format!("too many fields: a definition declares at most {MAX_NODES}"),
                "this one is over",
                None,
            );
            return false;
        }
        true
    }

    /// The properties a field's role brings (`stream`, `key`, `reassembled-as`).
    fn role_props(&self, n: &KdlNode, allowed: &mut Vec<&'static str>) {
        match prop(n, "role").and_then(|e| e.value().as_string()) {
            Some("sequence") => allowed.extend(["stream", "key"]),
            Some("fragment-id") if self.in_messages => allowed.push("key"),
            Some("fragment-data") if self.in_messages => allowed.push("reassembled-as"),
            Some("ack" | "ack-below" | "ack-upto" | "ack-range-start" | "nak-range-start")
                if self.in_messages =>
            {
                allowed.extend(["stream", "key"])
            }
            _ => {}
        }
    }

    /// The slot a named integer field writes. A role field writes its role's slot; a
    /// field named like an earlier one (the other branch of an `if`) shares its slot,
    /// so expressions read whichever was read.
    fn slot_for(&mut self, name: &str, role: Option<Role>) -> u16 {
        let earlier = self
            .scope
            .find(name)
            .flatten()
            .filter(|&s| s as usize >= ROLE_SLOTS);
        // A message's ack and sequence are its own, not the datagram's roles.
        let role_slot = match role {
            Some(Role::Ack | Role::Sequence) if self.in_messages => None,
            r => r.and_then(Role::slot),
        };
        match (role_slot, earlier) {
            (Some(r), _) => r,
            (None, Some(s)) => s,
            (None, None) => {
                let s = self.slot_count as u16;
                self.slot_count += 1;
                s
            }
        }
    }

    /// `role=NAME`: the role a field plays, or an error listing the roles.
    fn role_of(&mut self, n: &KdlNode) -> Option<Role> {
        match prop(n, "role").map(|e| (e, e.value().as_string())) {
            None => None,
            Some((e, s)) => {
                let r = match s {
                    Some("crc") => Some(Role::Crc),
                    Some("sequence") => Some(Role::Sequence),
                    Some("type") => Some(Role::Type),
                    Some("fragment-id") => Some(Role::FragmentId),
                    Some("fragment-count") => Some(Role::FragmentCount),
                    Some("fragment-data") => Some(Role::FragmentData),
                    Some("ack") => Some(Role::Ack),
                    Some("ack-bits") => Some(Role::AckBits),
                    Some("protocol-id") => Some(Role::ProtocolId),
                    Some("fragment-offset") => Some(Role::FragmentOffset),
                    Some("fragment-total") => Some(Role::FragmentTotal),
                    Some("send-time") => Some(Role::SendTime),
                    Some("ack-time") => Some(Role::AckTime),
                    Some("ack-below") => Some(Role::AckBelow),
                    Some("ack-upto") => Some(Role::AckUpTo),
                    Some("ack-range-start") => Some(Role::AckRangeStart),
                    Some("ack-range-end") => Some(Role::AckRangeEnd),
                    Some("nak-range-start") => Some(Role::NakRangeStart),
                    Some("nak-range-end") => Some(Role::NakRangeEnd),
                    Some("fragment-remaining") => Some(Role::FragmentRemaining),
                    Some("fragment-first") => Some(Role::FragmentFirst),
                    Some("fragment-last") => Some(Role::FragmentLast),
                    _ => None,
                };
                if r.is_none() {
                    self.error(
                        e.span(),
                        "unknown role",
                        "",
                        Some(format!("roles: {}", Role::ALL.map(Role::name).join(", "))),
                    );
                }
                r
            }
        }
    }

    /// `enum=NAME`: the enum that names the field's values, or an error with the nearest.
    fn enum_of(&mut self, n: &KdlNode) -> Option<u16> {
        match prop(n, "enum") {
            None => None,
            Some(e) => {
                let en = e.value().as_string().unwrap_or("");
                match self.enum_index.get(en) {
                    Some(id) => Some(*id),
                    None => {
                        let hint = closest(en, self.enum_index.keys().map(|s| s.as_str()))
                            .map(|c| format!("did you mean `{c}`?"))
                            .unwrap_or_else(|| {
                                "declare it at the top level: `enum NAME { value 0 … }`".into()
                            });
                        self.error(e.span(), format!("unknown enum `{en}`"), "", Some(hint));
                        None
                    }
                }
            }
        }
    }
}

/// Kinds read as one integer, which get a slot expressions can read.
fn is_integer(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Bits(_)
            | Kind::Bool
            | Kind::Int { .. }
            | Kind::Uint64
            | Kind::Derived(_)
            | Kind::LeUint(_)
            | Kind::Msb(_)
            | Kind::ByteInt { .. }
            | Kind::Varint { .. }
    )
}
