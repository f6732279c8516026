//! Fields: a block of field nodes, a struct's body compiled once, and one field node
//! (its primitive, arguments and properties) compiled into a node.

use super::*;

pub(super) const PRIMITIVES: &[&str] = &[
    "bits",
    "bool",
    "int",
    "uint64",
    "float",
    "double",
    "compressed-float",
    "vector",
    "compressed-vector",
    "quaternion",
    "smallest-three",
    "align",
    "bytes",
    "string",
    "check",
    "rest",
    "derived",
    "le-uint",
    "be-uint",
    "le-int",
    "be-int",
    "varint",
    "zigzag",
    "text",
    "cstring",
    "array",
    "list",
    "relative-list",
    "if",
    "else",
];

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

    fn struct_body(&mut self, name: &str, at: SourceSpan, depth: u32) -> Option<Block> {
        match self.structs.get(name) {
            Some(StructState::Done(b)) => Some(*b),
            Some(StructState::InProgress) => {
                self.error(
                    at,
                    format!("struct `{name}` contains itself"),
                    "recursive use",
                    Some("a struct cannot contain itself; use a list or array of another struct".into()),
                );
                None
            }
            Some(StructState::Pending(def)) => {
                let def = *def;
                self.structs.insert(name.to_string(), StructState::InProgress);
                let saved = std::mem::take(&mut self.scope);
                let b = self.block(def.children(), depth + 1);
                self.scope = saved;
                self.structs.insert(name.to_string(), StructState::Done(b));
                Some(b)
            }
            None => None,
        }
    }

    fn field(&mut self, n: &'d KdlNode, depth: u32) -> Option<NodeId> {
        let kind_name = n.name().value();
        if depth > 32 {
            self.error(
                Self::name_span(n),
                "definition nests more than 32 levels deep",
                "",
                None,
            );
            return None;
        }
        if self.nodes.len() >= MAX_NODES {
            self.error(
                Self::name_span(n),
                format!("too many fields: a definition declares at most {MAX_NODES}"),
                "this one is over",
                None,
            );
            return None;
        }
        let inline_struct = self.structs.contains_key(kind_name) && positional(n).is_empty();
        // `header` alone in a fragment or packet reads the protocol's header again.
        let header_reread = kind_name == "header"
            && self.header_block.is_some()
            && !self.structs.contains_key("header")
            && positional(n).is_empty();
        let named = !matches!(kind_name, "align" | "if" | "check") && !inline_struct && !header_reread;
        let name = if named {
            self.arg_str(n, 0, "the field's name")?
        } else {
            kind_name.to_string()
        };
        let mut allowed = vec!["doc"];
        let kind = match kind_name {
            "bits" => {
                allowed.extend(["role", "enum"]);
                let b = self.arg_int(n, 1, "the width in bits")?;
                if !(1..=32).contains(&b) {
                    self.error(
                        positional(n)[1].span(),
                        format!("bits width {b} is outside 1..=32"),
                        "width",
                        Some("use uint64 for 64-bit values".into()),
                    );
                    return None;
                }
                Kind::Bits(b as u32)
            }
            "bool" => Kind::Bool,
            "int" => {
                allowed.extend(["role", "enum"]);
                let min = self.arg_int(n, 1, "the minimum")?;
                let max = self.arg_int(n, 2, "the maximum")?;
                if min > max {
                    self.error(
                        SourceSpan::from(
                            positional(n)[1].span().offset()
                                ..positional(n)[2].span().offset() + positional(n)[2].span().len(),
                        ),
                        format!("int range has min {min} > max {max}"),
                        "min > max",
                        Some("write the smaller bound first: `int NAME MIN MAX`".into()),
                    );
                    return None;
                }
                if int_width(min, max).is_none() {
                    self.error(
                        positional(n)[2].span(),
                        format!("int range {min}..={max} needs more than 32 bits"),
                        "range too wide",
                        Some("int(min,max) is sent in bits_required(min,max) ≤ 32 bits; use uint64 or two fields".into()),
                    );
                    return None;
                }
                Kind::Int { min, max }
            }
            "uint64" => {
                allowed.push("role");
                Kind::Uint64
            }
            "float" => Kind::Float,
            "double" => Kind::Double,
            "compressed-float" | "compressed-vector" => {
                let min = self.arg_f32(n, 1, "the minimum")?;
                let max = self.arg_f32(n, 2, "the maximum")?;
                let res = self.arg_f32(n, 3, "the resolution")?;
                let Some(cf) = CompressedFloat::new(min, max, res) else {
                    self.error(
                        SourceSpan::from(positional(n)[1].span().offset()..positional(n)[3].span().offset() + positional(n)[3].span().len()),
                        format!("compressed float range ({min}, {max}, {res}) is empty, reversed or needs over 32 bits"),
                        "bad range",
                        Some("need min < max and 0 < resolution, with (max-min)/resolution < 2^32".into()),
                    );
                    return None;
                };
                if kind_name == "compressed-float" {
                    Kind::CompressedFloat(cf)
                } else {
                    Kind::CompressedVector(cf)
                }
            }
            "vector" => Kind::Vector,
            "quaternion" => Kind::Quaternion,
            "smallest-three" => {
                let b = self.arg_int(n, 1, "the bits per component")?;
                if !(2..=10).contains(&b) {
                    self.error(
                        positional(n)[1].span(),
                        format!("smallest-three takes 2..=10 bits per component, not {b}"),
                        "bits",
                        None,
                    );
                    return None;
                }
                Kind::SmallestThree(b as u32)
            }
            "align" => Kind::Align,
            "bytes" => {
                // A message's fragment data.
                if self.in_messages {
                    allowed.push("role");
                }
                Kind::Bytes(self.count_within(n, 65_535, "bytes a UDP datagram can hold")?)
            }
            "string" => {
                let max = self.arg_int(n, 1, "the maximum length (buffer size)")?;
                if !(1..=1 << 20).contains(&max) {
                    self.error(
                        positional(n)[1].span(),
                        "string max must be 1..=1048576",
                        "",
                        None,
                    );
                    return None;
                }
                Kind::String { max: max as u32 }
            }
            "check" => {
                allowed.push("magic");
                match (
                    positional(n).first(),
                    prop(n, "magic").and_then(|e| e.value().as_integer()),
                ) {
                    (_, Some(m)) if (0..=u32::MAX as i128).contains(&m) => Kind::Check { magic: m as u32 },
                    (Some(e), None) if e.value().is_string() => Kind::Check {
                        magic: hash_string(e.value().as_string().unwrap_or("")),
                    },
                    _ => {
                        self.error(
                            Self::name_span(n),
                            "`check` needs a name to hash or magic=0x…",
                            "",
                            Some("for example `check \"misc body\"`".into()),
                        );
                        return None;
                    }
                }
            }
            "rest" => {
                allowed.extend(["role", "dissect-as"]);
                let body = self.block(n.children(), depth + 1);
                Kind::Rest { body }
            }
            "derived" => {
                allowed.extend(["role", "enum"]);
                let e = self.arg_entry(n, 1, "the expression that computes it")?;
                if !e.value().is_string() && e.value().as_integer().is_none() {
                    self.error(
                        e.span(),
                        "expected an expression in quotes",
                        "",
                        Some(usage("derived")),
                    );
                    return None;
                }
                Kind::Derived(self.expression(e)?)
            }
            "le-uint" | "be-uint" | "be-int" | "le-int" => {
                allowed.extend(["role", "enum"]);
                let count = self.count(n, 1)?;
                if let Count::Const(c) = count
                    && !(1..=8).contains(&c)
                {
                    self.error(
                        positional(n)[1].span(),
                        format!("{kind_name} takes 1 to 8 bytes, not {c}"),
                        "byte count",
                        Some(usage(kind_name)),
                    );
                    return None;
                }
                if kind_name == "le-uint" {
                    Kind::LeUint(count)
                } else {
                    Kind::ByteInt {
                        count,
                        big: kind_name.starts_with("be"),
                        signed: !kind_name.ends_with("uint"),
                    }
                }
            }
            "varint" | "zigzag" => {
                allowed.extend(["role", "enum"]);
                Kind::Varint {
                    zigzag: kind_name == "zigzag",
                }
            }
            "text" => Kind::Text {
                len: self.count(n, 1)?,
            },
            "cstring" => {
                let max = self.arg_int(n, 1, "the most bytes, the NUL included")?;
                if !(1..=65535).contains(&max) {
                    self.error(
                        positional(n)[1].span(),
                        "cstring MAX is 1..=65535 bytes",
                        "",
                        Some(usage("cstring")),
                    );
                    return None;
                }
                Kind::CString { max: max as u32 }
            }
            "header" if header_reread => Kind::Struct {
                body: self.header_block.unwrap_or_default(),
            },
            "array" => {
                let most = Limits::default().max_elements;
                let count = self.count_within(n, most, "elements a packet's array may have")?;
                let body = self.block(n.children(), depth + 1);
                Kind::Array { count, body }
            }
            "list" => {
                allowed.push("end");
                let Some(end_entry) = prop(n, "end") else {
                    self.error(Self::name_span(n), "`list` needs end=\"…\", the condition that ends it", "", Some("for example `list events end=\"kind == 0\" { int kind 0 7 … }`: checked after each element's first field".into()));
                    return None;
                };
                // The end condition reads the element's first field, so compile the body first.
                let mark = self.scope.len();
                let body = self.block(n.children(), depth + 1);
                let end = self.expression(end_entry)?;
                self.scope.truncate(mark);
                Kind::List { end, body }
            }
            "relative-list" => {
                let max = self.arg_int(n, 1, "the sentinel index (max objects)")?;
                if !(1..=1 << 24).contains(&max) {
                    self.error(
                        positional(n)[1].span(),
                        "relative-list max must be 1..=16777216",
                        "",
                        None,
                    );
                    return None;
                }
                let body = self.block(n.children(), depth + 1);
                Kind::RelativeList { max, body }
            }
            "if" => {
                let e = self.arg_entry(n, 0, "a condition")?;
                let cond = self.expression(e)?;
                let then = self.block(n.children(), depth + 1);
                Kind::If {
                    cond,
                    then,
                    otherwise: Block::default(),
                }
            }
            other => {
                let other = other.to_string();
                match self.struct_body(&other, Self::name_span(n), depth) {
                    Some(body) if inline_struct => Kind::Inline { body },
                    Some(body) => Kind::Struct { body },
                    None if self.structs.contains_key(&other) => return None,
                    None => {
                        let names: Vec<String> = self.structs.keys().cloned().collect();
                        let hint = closest(
                            &other,
                            PRIMITIVES.iter().copied().chain(names.iter().map(|s| s.as_str())),
                        )
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| {
                            "a field is a primitive (bits, int, float, …) or the name of a struct".into()
                        });
                        self.error(
                            Self::name_span(n),
                            format!("unknown primitive or struct `{other}`"),
                            "unknown type",
                            Some(hint),
                        );
                        return None;
                    }
                }
            }
        };
        let expected = match &kind {
            Kind::Bits(_) | Kind::SmallestThree(_) | Kind::Bytes(_) | Kind::String { .. } => 2,
            Kind::Derived(_) | Kind::LeUint(_) | Kind::ByteInt { .. } => 2,
            Kind::Text { .. } | Kind::CString { .. } => 2,
            Kind::Struct { .. } if header_reread => 0,
            Kind::Array { .. } | Kind::RelativeList { .. } => 2,
            Kind::Int { .. } => 3,
            Kind::CompressedFloat(_) | Kind::CompressedVector(_) => 4,
            Kind::Align => 0,
            Kind::Check { .. } => usize::from(prop(n, "magic").is_none()),
            Kind::If { .. } => 1,
            Kind::Inline { .. } => 0,
            _ => 1,
        };
        self.extra_arguments(n, expected, &usage(kind_name));
        let kind = self.ordered(n, kind, &mut allowed)?;
        let remember = self.remember(n, &kind, &mut allowed);
        match prop(n, "role").and_then(|e| e.value().as_string()) {
            Some("sequence") => allowed.extend(["stream", "key"]),
            Some("fragment-id") if self.in_messages => allowed.push("key"),
            Some("fragment-data") if self.in_messages => allowed.push("reassembled-as"),
            Some("ack") if self.in_messages => allowed.extend(["stream", "key"]),
            _ => {}
        }
        self.check_props(n, &allowed);
        let role = match prop(n, "role").map(|e| (e, e.value().as_string())) {
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
        };
        let enum_id = match prop(n, "enum") {
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
        };
        let integer = matches!(
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
        );
        // A role field writes its role's slot; a field named like an earlier one (the
        // other branch of an `if`) shares its slot, so expressions read whichever was read.
        let earlier = self
            .scope
            .find(&name)
            .flatten()
            .filter(|&s| s as usize >= ROLE_SLOTS);
        // A message's ack is its own, not the datagram's ack role.
        let role_slot = match role {
            Some(Role::Ack) if self.in_messages => None,
            r => r.and_then(Role::slot),
        };
        let slot = match (integer && named, role_slot, earlier) {
            (false, _, _) => None,
            (true, Some(r), _) => Some(r),
            (true, None, Some(s)) => Some(s),
            (true, None, None) => {
                let s = self.slot_count as u16;
                self.slot_count += 1;
                Some(s)
            }
        };
        let stream = match role {
            Some(Role::Sequence) => self.stream(n, &kind)?,
            Some(Role::Ack) if self.in_messages => Some(self.acked_stream(n)?),
            _ => None,
        };
        let fragment_key = match role {
            Some(Role::FragmentId) if self.in_messages => Some(self.fragment_key(n)?),
            _ => None,
        };
        if named {
            self.scope.push(name.clone(), slot);
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
}
