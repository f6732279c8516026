//! Compiles a `dissectors/*.kdl` definition into a [`Program`], once, before packets flow.

use super::diag::DefinitionError;
use super::expr::{self, Op};
use super::program::*;
use crate::bits::{CompressedFloat, hash_string, int_width};
use crate::validate::{CountEncoding, HeaderFormat, ProtocolId};
use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

mod message_acks;
mod message_fragments;

const PRIMITIVES: &[&str] = &[
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

/// Compiles definition text; `file` names it in diagnostics.
/// Deepest `{` nesting accepted before parsing (the KDL parser recurses per level).
const MAX_BRACES: usize = 64;

/// Where the `{` nesting (outside strings and comments, roughly) first exceeds the limit.
fn too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    let mut in_str = false;
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' if !in_str => {
                depth += 1;
                if depth > MAX_BRACES {
                    return Some(i);
                }
            }
            b'}' if !in_str => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Mistakes of people used to other languages that KDL reports as a cascade: `#`
/// comments and `} else {` on one line. (offset, message, help) for each, outside strings
/// and comments.
fn common_mistakes(text: &str) -> Vec<(usize, String, &'static str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'#' => {
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + hashes) == Some(&b'"') {
                    // A raw string: #"…"#, ##"…"##.
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', hashes))
                        .collect();
                    i += hashes + 1;
                    while i < b.len() && !b[i..].starts_with(&close) {
                        i += 1;
                    }
                    i += close.len().saturating_sub(1);
                } else {
                    let word: Vec<u8> = b[i + 1..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
                        .copied()
                        .collect();
                    let keyword = matches!(
                        &word[..],
                        b"true" | b"false" | b"null" | b"inf" | b"-inf" | b"nan"
                    );
                    if !keyword {
                        out.push((
                            i,
                            "`#` does not start a comment in KDL".to_string(),
                            "comments are `// to the end of the line` or `/* … */`",
                        ));
                        while i < b.len() && b[i] != b'\n' {
                            i += 1;
                        }
                    }
                }
            }
            b'}' => {
                let mut j = i + 1;
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                let word = b.get(j..j + 4) == Some(b"else")
                    && b.get(j + 4)
                        .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_' && *c != b'-');
                if word {
                    out.push((
                        j,
                        "`else` must start a new line: in KDL `}` ends the `if` node".to_string(),
                        "write `}` and then `else {` (or `else if \"…\" {`) on the next line",
                    ));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

pub fn compile(file: &str, text: &str) -> Result<Program, Vec<DefinitionError>> {
    let mut program = compile_view(file, text, false)?;
    // A definition with `plaintext` blocks also compiles as the decrypted datagram reads.
    if program.params.encryption.is_some() {
        program.params.plaintext = Some(Arc::new(compile_view(file, text, true)?));
    }
    Ok(program)
}

/// Compiles `text`; `plaintext`: `plaintext N` blocks stand in for their `packet N`.
fn compile_view(file: &str, text: &str, plaintext: bool) -> Result<Program, Vec<DefinitionError>> {
    let src = Arc::new(text.to_string());
    if let Some(at) = too_deep(text) {
        return Err(vec![DefinitionError::new(
            file,
            &src,
            SourceSpan::from(at..at + 1),
            format!("blocks nest more than {MAX_BRACES} levels deep"),
            "too deep",
            Some("a definition nests structs instead of blocks inside blocks".into()),
        )]);
    }
    let doc = match KdlDocument::parse_v2(text) {
        Ok(d) => d,
        Err(e) => {
            // Mistakes KDL reports as a cascade of unrelated errors: say the fix once.
            let hints = common_mistakes(text);
            if !hints.is_empty() {
                return Err(hints
                    .into_iter()
                    .map(|(at, message, help)| {
                        DefinitionError::new(
                            file,
                            &src,
                            SourceSpan::from(at..at + 1),
                            message,
                            "here",
                            Some(help.into()),
                        )
                    })
                    .collect());
            }
            return Err(e
                .diagnostics
                .iter()
                .map(|d| {
                    DefinitionError::new(
                        file,
                        &src,
                        d.span,
                        d.message.clone().unwrap_or_else(|| "KDL syntax error".into()),
                        d.label.clone().unwrap_or_else(|| "here".into()),
                        d.help
                            .clone()
                            .or_else(|| Some("definitions are KDL v2 documents (kdl.dev)".into())),
                    )
                })
                .collect());
        }
    };
    let newlines = src.match_indices('\n').map(|(i, _)| i).collect();
    let mut c = Compiler {
        file: file.to_string(),
        src,
        newlines,
        errors: Vec::new(),
        nodes: Vec::new(),
        children: Vec::new(),
        code: Vec::new(),
        structs: HashMap::new(),
        enums: Vec::new(),
        enum_index: HashMap::new(),
        slot_count: ROLE_SLOTS,
        scope: Scope::default(),
        spans: Vec::new(),
        header_block: None,
        expanded: 0,
        msb: false,
        remembered: Vec::new(),
        streams: Vec::new(),
        fragment_keys: HashMap::new(),
        reassembled_as: HashMap::new(),
        message_roles: false,
        remaining: false,
        messages_end: None,
        in_messages: false,
        stand_in: None,
        stand_in_when: None,
        checksum_field: None,
        plaintext_view: plaintext,
        dissect_as: Vec::new(),
    };
    let program = c.document(&doc);
    if c.errors.is_empty() {
        program.ok_or_else(Vec::new)
    } else {
        Err(c.errors)
    }
}

/// Reads and compiles a definition file.
/// The largest definition read: far beyond any real protocol's, and small enough that
/// compiling it stays fast and small whatever it holds.
pub const MAX_DEFINITION_BYTES: u64 = 1 << 20;

/// Fields (definition nodes) one definition may declare.
pub const MAX_NODES: usize = 65_535;

/// Reads at most [`MAX_DEFINITION_BYTES`] of `path` as UTF-8.
fn read_definition(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_DEFINITION_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_DEFINITION_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} KiB", MAX_DEFINITION_BYTES >> 10),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte offset {})", e.utf8_error().valid_up_to()),
        )
    })
}

pub fn load(path: &std::path::Path) -> Result<Program, Vec<DefinitionError>> {
    let name = path.display().to_string();
    match read_definition(path) {
        Ok(text) => compile(&name, &text),
        Err(e) => {
            let src = Arc::new(String::new());
            Err(vec![DefinitionError::new(
                &name,
                &src,
                SourceSpan::from(0..0),
                format!("cannot read definition: {e}"),
                "",
                None,
            )])
        }
    }
}

enum StructState<'d> {
    Pending(&'d KdlNode),
    InProgress,
    Done(Block),
}

struct Compiler<'d> {
    /// Fields of the blocks compiled so far, structs expanded ([`Compiler::within_field_limit`]).
    expanded: u64,
    file: String,
    src: Arc<String>,
    /// Byte offsets of the source's line ends, for a span's line at once (a 1 MiB
    /// definition has many nodes).
    newlines: Vec<usize>,
    errors: Vec<DefinitionError>,
    nodes: Vec<Node>,
    children: Vec<NodeId>,
    code: Vec<Op>,
    structs: HashMap<String, StructState<'d>>,
    enums: Vec<EnumDef>,
    enum_index: HashMap<String, u16>,
    slot_count: usize,
    /// Fields visible to expressions: name, slot (None for non-integer fields).
    scope: Scope,
    /// Where each node is declared, for diagnostics after compilation (role paths).
    spans: Vec<SourceSpan>,
    /// The compiled header, which a fragment's data may re-read (`header`).
    header_block: Option<Block>,
    /// `bit-order "msb"`: fields read most significant bit first unless they say
    /// `order="lsb"`.
    msb: bool,
    /// Names of the values conversations remember (`remember="NAME"`).
    remembered: Vec<String>,
    /// Message sequence streams, in order of first use.
    streams: Vec<crate::dissect::program::StreamDef>,
    /// `key=` of a message's `role=fragment-id` field, by node.
    fragment_keys: HashMap<NodeId, Vec<(String, u16)>>,
    /// `reassembled-as="TYPE"` of a message's `role=fragment-data` field, by node: the
    /// message type its reassembled message is read as (resolved once all are known).
    reassembled_as: HashMap<NodeId, (String, SourceSpan)>,
    /// Checking a message body's roles: fragments there are wider and placed by offset.
    message_roles: bool,
    /// An expression reads `remaining` or `remaining_bits`.
    remaining: bool,
    /// `messages count=` or `length=`.
    messages_end: Option<MessagesEnd>,
    /// Compiling the `messages` block or a message's body.
    in_messages: bool,
    /// The protocol block's `checksum … stand-in=… stand-in-when=…`, resolved once the
    /// fields it names are compiled.
    stand_in: Option<(String, SourceSpan)>,
    stand_in_when: Option<&'d KdlEntry>,
    /// `checksum … field=NAME`: must be the `role=crc` field.
    checksum_field: Option<(String, SourceSpan)>,
    /// Compiling the decrypted view: `plaintext N` blocks replace `packet N`.
    plaintext_view: bool,
    /// Fields marked `dissect-as="NAME"`.
    dissect_as: Vec<(NodeId, String)>,
}

fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    fn dist(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }
    candidates
        .into_iter()
        .map(|c| (dist(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c)
}

fn positional(n: &KdlNode) -> Vec<&KdlEntry> {
    n.entries().iter().filter(|e| e.name().is_none()).collect()
}

fn prop<'n>(n: &'n KdlNode, key: &str) -> Option<&'n KdlEntry> {
    n.entries()
        .iter()
        .find(|e| e.name().map(|k| k.value()) == Some(key))
}

impl<'d> Compiler<'d> {
    fn error(&mut self, span: SourceSpan, message: impl Into<String>, label: &str, help: Option<String>) {
        if self.errors.len() < 50 {
            self.errors.push(DefinitionError::new(
                &self.file, &self.src, span, message, label, help,
            ));
        }
    }

    fn name_span(n: &KdlNode) -> SourceSpan {
        n.name().span()
    }

    fn document(&mut self, doc: &'d KdlDocument) -> Option<Program> {
        let mut params = Params::default();
        let mut protocol_node = None;
        let mut header_node = None;
        let mut fragment_node = None;
        let mut messages_node = None;
        let mut packet_nodes = Vec::new();
        let mut plaintext_nodes: Vec<&KdlNode> = Vec::new();
        for n in doc.nodes() {
            match n.name().value() {
                "protocol" => protocol_node = Some(n),
                "enum" => self.enum_def(n),
                "struct" => {
                    let Some(name) = self.arg_str(n, 0, "the struct's name") else {
                        continue;
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
                "header" => header_node = Some(n),
                "fragment" => fragment_node = Some(n),
                "messages" => messages_node = Some(n),
                "packet" | "message" => packet_nodes.push(n),
                "plaintext" => plaintext_nodes.push(n),
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
        if self.plaintext_view {
            packet_nodes.extend(plaintext_nodes.iter().copied());
        }
        // Space 0 is each flow's own counter.
        let mut params_spaces = vec![SequenceSpace {
            name: "flow".into(),
            per_sender: false,
        }];
        if let Some(p) = protocol_node {
            self.protocol(p, &mut params, &mut params_spaces);
        }
        if let (Some(n), None) = (plaintext_nodes.first(), &params.encryption) {
            self.error(
                Self::name_span(n),
                "a `plaintext` block needs the protocol's `encryption`",
                "no encryption declared",
                Some("add `encryption \"netcode-1.02\"` to the protocol block".into()),
            );
        }
        let Some(h) = header_node else {
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
            && let Some(m) = packet_nodes.iter().find(|p| p.name().value() == "message")
        {
            self.error(
                Self::name_span(m),
                "`message` types need a `messages` block: what each message starts with",
                "no messages block",
                Some("add `messages { bits type 8 role=type }` (the fields before each message's body), or write `packet` for one message per datagram".into()),
            );
        }
        let messages = messages_node.and_then(|m| self.messages_block(m, header, fragment_node));
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
            roles_ok &= self.checksum_position(header, &params);
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
        let sequence_bits = self
            .role_nodes(header, Role::Sequence)
            .iter()
            .map(|&id| match self.nodes[id as usize].kind.plain() {
                Kind::Bits(b) => b,
                Kind::Int { min, max } => int_width(min, max).unwrap_or(32),
                Kind::Uint64 | Kind::LeUint(_) => 64,
                _ => 0,
            })
            .max()
            .filter(|&b| b > 0)
            .unwrap_or(16);
        let when = fragment_node
            .and_then(|f| prop(f, "when"))
            .and_then(|e| self.expression(e));
        let fragment = fragment_node.map(|f| {
            self.check_props(f, &["when", "doc"]);
            let b = self.block(f.children(), 0);
            (f, b)
        });
        if let Some((f, b)) = fragment
            && !self.within_field_limit(b, Self::name_span(f))
        {
            return None;
        }
        roles_ok &= self.no_offset_roles(header);
        roles_ok &= self.send_time(h, header, &mut params);
        if let Some((f, b)) = fragment {
            roles_ok &= self.no_offset_roles(b);
            for role in [Role::FragmentId, Role::FragmentCount, Role::FragmentData] {
                roles_ok &= self.role_placement(f, b, role, true, &mut roles);
            }
            for role in [Role::Ack, Role::AckBits] {
                roles_ok &= self.role_placement(f, b, role, false, &mut roles);
            }
            self.fragment_widths(f, b, &params.format);
            if when.is_none() && !Program::role_declared(roles, Role::Type) {
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
        let typed = Program::role_declared(roles, Role::Type);

        // The type field's range fixes the number of packet types.
        let type_node = self.role_nodes(type_block, Role::Type).first().copied();
        let derived_types = type_node.and_then(|id| match self.nodes[id as usize].kind.plain() {
            Kind::Int { min: 0, max } if max < 1 << 16 => Some(max as u32 + 1),
            Kind::Bits(b) if b <= 16 => Some(1u32 << b),
            _ => None,
        });
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

        let mut packets: Vec<PacketDef> = Vec::new();
        let mut info_spans: Vec<(usize, SourceSpan)> = Vec::new();
        let spaces = std::mem::take(&mut params_spaces);
        let mut seen: HashMap<u32, (String, usize)> = HashMap::new();
        for p in packet_nodes {
            let args = positional(p);
            let Some(id) = self.arg_int(p, 0, "the packet type id") else {
                continue;
            };
            let name = args
                .get(1)
                .and_then(|e| e.value().as_string())
                .map(str::to_string)
                .unwrap_or_else(|| format!("type{id}"));
            let id_span = args[0].span();
            if id < 0 || id as u64 >= params.format.num_types as u64 {
                self.error(
                    id_span,
                    format!(
                        "packet type {id} is outside the header's type range 0..{}",
                        params.format.num_types.saturating_sub(1)
                    ),
                    "type id",
                    Some("widen the header's type field or renumber the packet".into()),
                );
                continue;
            }
            if id == 0 && fragment.is_some() && when.is_none() && typed {
                self.error(
                    id_span,
                    "packet type 0 is reserved for fragments",
                    "type id",
                    Some("number game packets from 1".into()),
                );
                continue;
            }
            let line = self.line_of(id_span);
            // A `plaintext` block, compiled after every packet, takes its type over (the
            // packets' fields keep their ids, so either view's trees print with this one).
            let replaces = self.plaintext_view && p.name().value() == "plaintext";
            if let Some((other, other_line)) = seen.get(&(id as u32)).filter(|_| !replaces) {
                self.error(
                    id_span,
                    format!("packet type {id} is defined twice"),
                    "type id clash",
                    Some(format!("type {id} is already `{other}` (line {other_line})")),
                );
                continue;
            }
            if !replaces {
                seen.insert(id as u32, (name.clone(), line));
            }
            self.extra_arguments(p, 2, &usage("packet"));
            self.scope.clear();
            if let Some(m) = &messages {
                // A message's body reads its own header's fields.
                self.scope = m.scope.clone();
            }
            self.check_props(p, &["doc", "from", "sequence-space", "info"]);
            let info = prop(p, "info").and_then(|e| match e.value().as_string() {
                Some(t) => {
                    info_spans.push((packets.len(), e.span()));
                    Some(t.to_string())
                }
                None => {
                    self.error(
                        e.span(),
                        "`info` is a text",
                        "",
                        Some("for example `info=\"{#objects} objects\"`".into()),
                    );
                    None
                }
            });
            let space = match prop(p, "sequence-space") {
                None => 0,
                Some(e) => match e.value().as_string() {
                    Some(name) => match spaces.iter().position(|s: &SequenceSpace| s.name == name) {
                        Some(i) => i as u8,
                        None => {
                            self.unknown_space(e.span(), name, &spaces);
                            0
                        }
                    },
                    None => {
                        self.error(
                            e.span(),
                            "`sequence-space` is a name",
                            "",
                            Some("for example `sequence-space=\"global\"`".into()),
                        );
                        0
                    }
                },
            };
            let from = match prop(p, "from") {
                None => None,
                Some(e) => match e.value().as_string() {
                    Some("client") => Some(Side::Client),
                    Some("server") => Some(Side::Server),
                    _ => {
                        self.error(
                            e.span(),
                            "`from` is client or server",
                            "side",
                            Some(
                                "write `from=client` or `from=server`, or leave it out when both send it"
                                    .into(),
                            ),
                        );
                        None
                    }
                },
            };
            self.in_messages = messages.is_some();
            let body = self.block(p.children(), 0);
            if !self.within_field_limit(body, Self::name_span(p)) {
                continue;
            }
            self.in_messages = false;
            for role in [Role::Ack, Role::AckBits, Role::ProtocolId] {
                if role == Role::Ack && messages.is_some() {
                    roles_ok &= self.message_ack(p, body);
                    continue;
                }
                roles_ok &= self.role_placement(p, body, role, false, &mut roles);
            }
            if messages.is_some() {
                roles_ok &= self.message_fragment(p, body, id as u32, &mut params);
            } else {
                roles_ok &= self.no_offset_roles(body);
                roles_ok &= self.no_time_roles(body, Role::SendTime);
                roles_ok &= self.no_time_roles(body, Role::AckTime);
            }
            packets.push(PacketDef {
                type_id: id as u32,
                name,
                doc: prop(p, "doc")
                    .and_then(|e| e.value().as_string())
                    .map(str::to_string),
                from,
                space,
                body,
                info,
            });
        }
        let mut by_type = vec![None; params.format.num_types as usize + usize::from(when.is_some())];
        for (i, p) in packets.iter().enumerate() {
            if let Some(slot) = by_type.get_mut(p.type_id as usize) {
                *slot = Some(i as u16);
            }
        }
        if self.slot_count > u16::MAX as usize {
            self.error(Self::name_span(h), "too many fields", "", None);
        }
        if Program::role_declared(roles, Role::ProtocolId) && params.protocol_id.is_none() {
            self.error(
                Self::name_span(h),
                "a field has role=protocol-id, but the protocol block has no `id` to compare it with",
                "protocol id",
                Some("add `id 0x…` to the protocol block".into()),
            );
        }
        self.resolve_stand_in(&mut params);
        self.resolve_reassembled_as(&mut params, &packets);
        if !roles_ok {
            return None;
        }
        for d in &packets {
            self.roles_without_effect(d.body, &d.name, messages.is_some());
        }
        if let Some((f, block)) = &fragment {
            self.roles_without_effect(*block, f.name().value(), true);
        }
        if !self.errors.is_empty() {
            return None;
        }
        // With a condition, fragments get a type of their own, one past the packets'.
        let fragment_type = if when.is_some() {
            params.format.num_types += 1;
            params.format.num_types - 1
        } else {
            crate::validate::FRAGMENT_TYPE
        };
        // Whole datagrams of a protocol with messages: a type past the messages'.
        let datagram_type = messages.as_ref().map(|_| {
            params.format.num_types += 1;
            params.format.num_types - 1
        });
        let messages = messages.map(|m| m.node);
        params.dissect_as = std::mem::take(&mut self.dissect_as);
        let mut program = Program {
            params,
            nodes: std::mem::take(&mut self.nodes),
            children: std::mem::take(&mut self.children),
            code: std::mem::take(&mut self.code),
            header,
            fragment: fragment.map(|f| f.1),
            fragment_when: when,
            fragment_type,
            roles,
            sequence_bits,
            spaces,
            packets,
            by_type,
            enums: std::mem::take(&mut self.enums),
            slot_count: self.slot_count,
            limits: Limits::default(),
            messages,
            datagram_type,
            plan: Default::default(),
        };
        program.plan = super::plan::Plan::build(&program);
        if self.remaining {
            program.params.remaining = true;
            program.plan.interpret_only();
        }
        self.info_templates(&program, &info_spans);
        Some(program)
    }

    /// A packet's `sequence-space` names a space the protocol block declares.
    fn unknown_space(&mut self, span: SourceSpan, name: &str, spaces: &[SequenceSpace]) {
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
    fn id_width(&mut self, n: &KdlNode, v: i128) {
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

    /// Roles the engine reads only from the header (sequence, type, crc) or the fragment
    /// block (fragment-*) would be ignored elsewhere: refused where they cannot take
    /// effect. A re-read `header` inside the block is the header's own.
    fn roles_without_effect(&mut self, block: Block, owner: &str, fragment: bool) {
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
                let misplaced = match node.role {
                    // A message's sequence counts in its stream.
                    Some(Role::Sequence) if node.stream.is_some() => None,
                    Some(r @ (Role::Sequence | Role::Type | Role::Crc)) => Some(r),
                    Some(r @ (Role::FragmentId | Role::FragmentCount | Role::FragmentData)) if !fragment => {
                        Some(r)
                    }
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

    /// The field limit counts fields as laid out, every struct copied where it is used
    /// ([`super::expand`]), over the header, fragment and packets compiled so far: a
    /// block that passes it is refused at the struct use where it does, before anything
    /// walks it expanded. Past the limit, later blocks are refused without more errors.
    fn within_field_limit(&mut self, block: Block, owner: SourceSpan) -> bool {
        let limit = MAX_NODES as u64;
        if self.expanded > limit {
            return false;
        }
        let mut x = super::expand::Expansion::new(&self.nodes, &self.children);
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

    /// Every `{path}` of an `info` template names a field of its packet type.
    fn info_templates(&mut self, program: &Program, spans: &[(usize, SourceSpan)]) {
        if spans.is_empty() {
            return;
        }
        let paths = super::paths::catalog(program);
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
                    let near = super::paths::nearest(&paths, path)
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

    fn line_of(&self, span: SourceSpan) -> usize {
        self.newlines.partition_point(|&at| at < span.offset()) + 1
    }

    fn protocol(&mut self, p: &'d KdlNode, params: &mut Params, spaces: &mut Vec<SequenceSpace>) {
        params.name = p
            .entries()
            .first()
            .and_then(|e| e.value().as_string())
            .unwrap_or("")
            .to_string();
        params.format.num_types = 0;
        let Some(children) = p.children() else { return };
        for n in children.nodes() {
            let key = n.name().value();
            let first = positional(n).first().copied();
            match key {
                "id" | "protocol-id" => match first.map(|e| e.value()) {
                    Some(KdlValue::Integer(v)) if *v >= 0 && *v <= u64::MAX as i128 => {
                        let width = prop(n, "bits").and_then(|e| e.value().as_integer());
                        self.id_width(n, *v);
                        params.protocol_id = Some(if width == Some(64) || *v > u32::MAX as i128 {
                            ProtocolId::new64(*v as u64)
                        } else {
                            ProtocolId::new32(*v as u32)
                        });
                    }
                    _ => self.error(
                        first.map(|e| e.span()).unwrap_or(Self::name_span(n)),
                        "protocol id must be a non-negative integer",
                        "protocol id",
                        Some("for example `id 0x55667788`".into()),
                    ),
                },
                "checksum" => self.checksum(n, params),
                "encryption" => match self.arg_str(n, 0, "the encryption scheme") {
                    Some(s) if s == "netcode-1.02" => params.encryption = Some(s),
                    Some(_) => self.error(
                        positional(n)[0].span(),
                        "unknown encryption scheme",
                        "scheme",
                        Some("the scheme known is \"netcode-1.02\"".into()),
                    ),
                    None => {}
                },
                "ports" => {
                    for e in positional(n) {
                        match e.value().as_integer() {
                            Some(v) if (1..=65535).contains(&v) => params.ports.push(v as u16),
                            _ => self.error(e.span(), "a UDP port is 1..=65535", "port", None),
                        }
                    }
                }
                "types" => {
                    if let Some(v) = self.arg_int(n, 0, "the number of packet types") {
                        if (1..=65536).contains(&v) {
                            params.format.num_types = v as u32;
                        } else {
                            self.error(positional(n)[0].span(), "packet types must be 1..=65536", "", None);
                        }
                    }
                }
                "end-check" => match first.map(|e| e.value()) {
                    Some(KdlValue::String(s)) => params.end_check = Some(hash_string(s)),
                    Some(KdlValue::Null) => params.end_check = None,
                    Some(KdlValue::Integer(v)) if *v >= 0 && *v <= u32::MAX as i128 => {
                        params.end_check = Some(*v as u32)
                    }
                    _ => self.error(
                        Self::name_span(n),
                        "end-check takes a check name, a 32-bit magic, or #null",
                        "end check",
                        Some("for example `end-check \"end of packet\"`".into()),
                    ),
                },
                "fragment-size" => {
                    if let Some(v) = self.arg_int(n, 0, "the fragment size in bytes") {
                        if (1..=65535).contains(&v) {
                            params.format.fragment_size = v as u32;
                        } else {
                            self.error(positional(n)[0].span(), "fragment size must be 1..=65535 bytes", "", None);
                        }
                    }
                }
                "max-fragments" => {
                    if let Some(v) = self.arg_int(n, 0, "the maximum number of fragments") {
                        if (1..=256).contains(&v) {
                            params.format.max_fragments = v as u32;
                        } else {
                            self.error(positional(n)[0].span(), "max-fragments must be 1..=256", "", None);
                        }
                    }
                }
                "fragment-count" => match first.and_then(|e| e.value().as_string()) {
                    Some("count") => params.format.count_encoding = CountEncoding::Count,
                    Some("count-1") | Some("count-minus-one") => {
                        params.format.count_encoding = CountEncoding::CountMinusOne
                    }
                    _ => self.error(
                        first.map(|e| e.span()).unwrap_or(Self::name_span(n)),
                        "fragment-count is \"count\" or \"count-1\"",
                        "encoding",
                        Some("\"count\" writes the count itself (the article); \"count-1\" lets 256 fit in 8 bits".into()),
                    ),
                },
                "max-message-size" => {
                    if let Some(v) = self.arg_int(n, 0, "the largest reassembled message in bytes") {
                        if (1..=1 << 30).contains(&v) {
                            params.max_message_size = v as u32;
                        } else {
                            self.error(positional(n)[0].span(), "max-message-size must be 1..=1073741824 bytes", "", None);
                        }
                    }
                }
                "mtu-budget" => {
                    if let Some(v) = self.arg_int(n, 0, "the MTU budget in bytes") {
                        if (1..=65507).contains(&v) {
                            params.format.mtu_budget = v as u32;
                        } else {
                            self.error(positional(n)[0].span(), "mtu-budget must be 1..=65507 bytes", "", None);
                        }
                    }
                }
                "doc" => {}
                "bit-order" | "byte-order" => match first.and_then(|e| e.value().as_string()) {
                    Some("msb") | Some("big") => {
                        self.msb = true;
                        params.msb = true;
                    }
                    Some("lsb") | Some("little") => {
                        self.msb = false;
                        params.msb = false;
                    }
                    _ => self.error(
                        first.map(|e| e.span()).unwrap_or(Self::name_span(n)),
                        format!("{key} is \"msb\" (\"big\") or \"lsb\" (\"little\")"),
                        "order",
                        Some("\"msb\": bits from the top of each byte, so whole bytes are big-endian (network order: ENet, RakNet); \"lsb\": the articles' packer, whole bytes little-endian (the default)".into()),
                    ),
                },
                "sequence-space" => {
                    self.check_props(n, &["per", "doc"]);
                    let Some(name) = self.arg_str(n, 0, "the space's name") else {
                        continue;
                    };
                    let per_sender = match prop(n, "per").map(|e| (e, e.value().as_string())) {
                        None | Some((_, Some("flow"))) => false,
                        Some((_, Some("sender"))) => true,
                        Some((e, _)) => {
                            self.error(e.span(), "`per` is \"flow\" or \"sender\"", "", Some("\"sender\": one counter for every flow from the same address and port".into()));
                            false
                        }
                    };
                    if spaces.iter().any(|s| s.name == name) {
                        self.error(positional(n)[0].span(), format!("sequence space `{name}` is declared twice"), "", None);
                    } else if spaces.len() >= 16 {
                        self.error(positional(n)[0].span(), "at most 16 sequence spaces", "", None);
                    } else {
                        spaces.push(SequenceSpace { name, per_sender });
                    }
                }
                other => {
                    let known = [
                        "id",
                        "ports",
                        "types",
                        "end-check",
                        "checksum",
                        "encryption",
                        "fragment-size",
                        "max-fragments",
                        "fragment-count",
                        "mtu-budget",
                        "max-message-size",
                        "sequence-space",
                        "bit-order",
                        "byte-order",
                        "doc",
                    ];
                    let hint = closest(other, known)
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("protocol parameters are: {}", known.join(", ")));
                    self.error(Self::name_span(n), format!("unknown protocol parameter `{other}`"), "", Some(hint));
                }
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

    /// Every field carrying `role` in `block`, through branches, groups and re-reads.
    fn role_nodes(&self, block: Block, role: Role) -> Vec<NodeId> {
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
            for b in node.kind.blocks() {
                self.collect_role(b, role, out, depth + 1);
            }
        }
    }

    /// The fewest and most fields with `role` on one path through `block`, and the
    /// first `if` whose branches differ in it.
    fn role_paths(&self, block: Block, role: Role, depth: u32) -> (u32, u32, Option<NodeId>) {
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
    fn role_placement(
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
            let kind_ok = match (role, &node.kind.plain()) {
                (_, Kind::Derived(_)) => role != Role::Crc,
                (Role::Crc, Kind::Bits(32)) => true,
                (Role::AckBits, Kind::Bits(_)) => true,
                (Role::Sequence, Kind::Bits(_) | Kind::Int { .. } | Kind::Uint64 | Kind::LeUint(_)) => true,
                (Role::ProtocolId, Kind::Bits(_) | Kind::Uint64 | Kind::LeUint(_)) => true,
                (Role::Ack, Kind::Bits(b)) => *b <= 16,
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
                (Role::Type | Role::FragmentId | Role::FragmentCount, Kind::Bits(b)) => *b <= 16,
                (Role::Type | Role::FragmentId | Role::FragmentCount, Kind::Int { .. }) => true,
                (Role::FragmentData, Kind::Rest { .. }) => true,
                _ => false,
            };
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
                    Some(match role {
                        Role::Crc => "the CRC is `bits 32`".into(),
                        Role::FragmentData if self.message_roles => {
                            "fragment data is `bytes` or `rest`".into()
                        }
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
                        Role::Ack => "use `bits N` (N ≤ 16) or `derived`".into(),
                        _ => "use `bits N` (N ≤ 16), `int MIN MAX` or `derived`".into(),
                    }),
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

    fn arg_entry<'n>(&mut self, n: &'n KdlNode, i: usize, what: &str) -> Option<&'n KdlEntry> {
        let args = positional(n);
        match args.get(i) {
            Some(e) => Some(*e),
            None => {
                let span = args.last().map(|e| e.span()).unwrap_or(Self::name_span(n));
                self.error(
                    span,
                    format!("`{}` is missing {what}", n.name().value()),
                    "expected another argument after this",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    fn arg_str(&mut self, n: &KdlNode, i: usize, what: &str) -> Option<String> {
        let e = self.arg_entry(n, i, what)?;
        match e.value().as_string() {
            Some(s) => Some(s.to_string()),
            None => {
                self.error(
                    e.span(),
                    format!("expected {what} (a name)"),
                    "not a name",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    fn arg_int(&mut self, n: &KdlNode, i: usize, what: &str) -> Option<i64> {
        let e = self.arg_entry(n, i, what)?;
        match e.value().as_integer() {
            Some(v) if v >= i64::MIN as i128 && v <= i64::MAX as i128 => Some(v as i64),
            _ => {
                self.error(
                    e.span(),
                    format!("expected {what} (an integer)"),
                    "not an integer",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    fn arg_f32(&mut self, n: &KdlNode, i: usize, what: &str) -> Option<f32> {
        let e = self.arg_entry(n, i, what)?;
        match e.value() {
            KdlValue::Integer(v) => Some(*v as f32),
            KdlValue::Float(v) => Some(*v as f32),
            _ => {
                self.error(
                    e.span(),
                    format!("expected {what} (a number)"),
                    "not a number",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    /// Positional arguments past the `expected` ones: an error at the first of them.
    fn extra_arguments(&mut self, n: &KdlNode, expected: usize, usage: &str) {
        let args = positional(n);
        if let Some(extra) = args.get(expected) {
            let takes = match expected {
                0 => "no arguments".to_string(),
                1 => "1 argument".to_string(),
                k => format!("{k} arguments"),
            };
            self.error(
                extra.span(),
                format!(
                    "`{}` takes {takes}, but has {}: `{}` is extra",
                    n.name().value(),
                    args.len(),
                    extra.value()
                ),
                "extra argument",
                Some(usage.trim_start_matches("usage: ").to_string()),
            );
        }
    }

    fn check_props(&mut self, n: &KdlNode, allowed: &[&str]) {
        for e in n.entries() {
            if let Some(k) = e.name()
                && !allowed.contains(&k.value())
            {
                {
                    let hint = closest(k.value(), allowed.iter().copied())
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("`{}` takes: {}", n.name().value(), allowed.join(", ")));
                    self.error(
                        k.span(),
                        format!("unknown property `{}` on `{}`", k.value(), n.name().value()),
                        "unknown property",
                        Some(hint),
                    );
                }
            }
        }
    }

    /// Compiles an expression held in entry `e` against the fields in scope.
    fn expression(&mut self, e: &KdlEntry) -> Option<Expr> {
        let (text, raw) = match e.value() {
            KdlValue::String(s) => {
                let span = e.span();
                let raw = self
                    .src
                    .get(span.offset()..span.offset() + span.len())
                    .unwrap_or("");
                (s.clone(), (span.offset(), raw.to_string()))
            }
            KdlValue::Integer(v) => {
                let start = self.code.len() as u32;
                self.code.push(Op::Const(*v as i64));
                return Some(Expr { start, len: 1 });
            }
            KdlValue::Bool(b) => {
                let start = self.code.len() as u32;
                self.code.push(Op::Const(*b as i64));
                return Some(Expr { start, len: 1 });
            }
            _ => {
                self.error(
                    e.span(),
                    "expected an expression in quotes",
                    "",
                    Some("for example \"count > 0 && flag\"".into()),
                );
                return None;
            }
        };
        let scope = &self.scope;
        let mut resolve = |name: &str| -> Result<Op, (String, String)> {
            match scope.find(name) {
                Some(Some(slot)) => Ok(Op::Slot(slot)),
                None if name == "remaining" => Ok(Op::Remaining(false)),
                None if name == "remaining_bits" => Ok(Op::Remaining(true)),
                Some(None) => Err((
                    format!("`{name}` cannot be used in an expression"),
                    "expressions read integer fields: bits, bool, int and uint64".to_string(),
                )),
                None => Err((
                    format!("unknown field `{name}`"),
                    match closest(name, scope.names()) {
                        Some(c) => format!("did you mean `{c}`?"),
                        None if scope.is_empty() => "no fields are declared before this point".into(),
                        None => format!(
                            "fields declared before this point: {}",
                            scope.names().collect::<Vec<_>>().join(", ")
                        ),
                    },
                )),
            }
        };
        match expr::compile(&text, &mut resolve) {
            Ok(ops) if expr::divides_by_zero(&ops) => {
                self.error(
                    e.span(),
                    "this expression divides by zero whatever the packet holds",
                    "division by zero",
                    Some("every packet would be malformed (`expression`) here".into()),
                );
                None
            }
            Ok(ops) => {
                self.remaining |= ops.iter().any(|o| matches!(o, Op::Remaining(_)));
                let start = self.code.len() as u32;
                self.code.extend(ops);
                Some(Expr {
                    start,
                    len: self.code.len() as u32 - start,
                })
            }
            Err(err) => {
                // The error's offsets are into the decoded text; the caret goes in the source.
                let (base, raw) = raw;
                let from = base + super::strings::source_offset(&raw, err.offset);
                let to = base + super::strings::source_offset(&raw, err.offset + err.len.max(1));
                let span = SourceSpan::from(from..to.max(from + 1));
                self.error(span, err.message, "here", err.help);
                None
            }
        }
    }

    /// A count (argument 1) that, when constant, is at most `most`: a larger one would
    /// fail every packet (the dissector's limit, or a datagram's size).
    fn count_within(&mut self, n: &KdlNode, most: u64, what: &str) -> Option<Count> {
        let count = self.count(n, 1)?;
        if let Count::Const(c) = count
            && c > most
        {
            self.error(
                positional(n)[1].span(),
                format!("a count of {c} is over the {most} {what}"),
                "count",
                Some("every packet would be malformed here".into()),
            );
            return None;
        }
        Some(count)
    }

    fn count(&mut self, n: &KdlNode, i: usize) -> Option<Count> {
        let e = self.arg_entry(n, i, "a count (a number or an expression)")?;
        match e.value() {
            KdlValue::Integer(v) if *v >= 0 && *v <= u64::MAX as i128 => Some(Count::Const(*v as u64)),
            KdlValue::String(_) => self.expression(e).map(Count::Expr),
            _ => {
                self.error(
                    e.span(),
                    "a count is a non-negative integer or an expression",
                    "",
                    None,
                );
                None
            }
        }
    }

    /// Compiles the nodes of a block into a contiguous run of children.
    fn block(&mut self, doc: Option<&'d KdlDocument>, depth: u32) -> Block {
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

/// A compiled `messages` block: the node that stands for it in the field tree, its
/// header, and the fields it leaves in scope for message bodies.
struct MessagesDef {
    node: NodeId,
    header: Block,
    scope: Scope,
}

impl<'d> Compiler<'d> {
    /// `messages { … }`: each message's header. Refuses what cannot go with it yet.
    fn messages_block(
        &mut self,
        m: &'d KdlNode,
        header: Block,
        fragment: Option<&KdlNode>,
    ) -> Option<MessagesDef> {
        self.check_props(m, &["doc", "count", "length"]);
        // Read in the header's scope, before the messages' own.
        self.messages_end = match (prop(m, "count"), prop(m, "length")) {
            (Some(c), None) => Some(MessagesEnd::Count(self.expression(c)?)),
            (None, Some(l)) => Some(MessagesEnd::Length(self.expression(l)?)),
            (None, None) => None,
            (Some(_), Some(l)) => {
                self.error(
                    l.span(),
                    "messages end at a count or at a length, not both",
                    "length",
                    Some(
                        "keep `count=\"FIELD\"` (how many messages) or `length=\"FIELD\"` (their bytes)"
                            .into(),
                    ),
                );
                return None;
            }
        };
        if let Some(f) = fragment {
            self.error(
                Self::name_span(f),
                "a datagram-level `fragment` block cannot go with `messages`",
                "fragments",
                Some("fragments inside messages (ENet's SEND_FRAGMENT) are not supported yet: describe the fragment's fields in its message type".into()),
            );
            return None;
        }
        if let Some(&id) = self.role_nodes(header, Role::Type).first() {
            self.error(
                self.spans[id as usize],
                "with `messages`, types are the messages': the header's type selects nothing",
                "role=type",
                Some("move role=type to the type field of the `messages` block".into()),
            );
            return None;
        }
        self.scope.clear();
        self.in_messages = true;
        let block = self.block(m.children(), 0);
        self.in_messages = false;
        let scope = self.scope.clone();
        for role in [
            Role::Crc,
            Role::Ack,
            Role::AckBits,
            Role::FragmentId,
            Role::FragmentCount,
            Role::FragmentData,
            Role::AckTime,
            Role::SendTime,
        ] {
            if let Some(&id) = self.role_nodes(block, role).first() {
                self.error(
                    self.spans[id as usize],
                    format!("role={} in a message is not supported yet", role.name()),
                    "role",
                    Some("a message's fragment fields and its ack go in its type's body (`message N \"name\" { … }`); the send time in the header".into()),
                );
                return None;
            }
        }
        self.spans.push(m.span());
        self.nodes.push(Node {
            name: "messages".into(),
            kind: Kind::Messages { header: block },
            doc: prop(m, "doc")
                .and_then(|e| e.value().as_string())
                .map(str::to_string),
            slot: None,
            enum_id: None,
            role: None,
            type_name: None,
            line: self.line_of(m.span()) as u32,
            remember: None,
            stream: None,
        });
        Some(MessagesDef {
            node: self.nodes.len() as u32 - 1,
            header: block,
            scope,
        })
    }
}

impl<'d> Compiler<'d> {
    /// `checksum "ALGORITHM" [field=NAME] [prefix="id"|"none"] [stand-in=NAME]
    /// [stand-in-when=EXPR]`. Alone, `"crc32"` is the articles' scheme.
    fn checksum(&mut self, n: &'d KdlNode, params: &mut Params) {
        use crate::dissect::program::{ChecksumAlgorithm, ChecksumRule};
        let first = positional(n).first().copied();
        let algorithm = match first.and_then(|e| e.value().as_string()) {
            Some("none") => {
                params.checksum = Checksum::None;
                self.check_props(n, &[]);
                return;
            }
            Some("crc32") => ChecksumAlgorithm::Crc32,
            Some("crc32c") => ChecksumAlgorithm::Crc32c,
            Some("adler32") => ChecksumAlgorithm::Adler32,
            _ => {
                self.error(
                    first.map(|e| e.span()).unwrap_or(Self::name_span(n)),
                    "checksum is \"crc32\", \"crc32c\", \"adler32\" or \"none\"",
                    "validation",
                    Some("\"crc32\" alone: the articles' CRC32 over the protocol id and the packet; with field=…: a checksum over the datagram with that field replaced; \"none\": ports and a clean header read decide".into()),
                );
                return;
            }
        };
        self.check_props(n, &["field", "prefix", "stand-in", "stand-in-when", "doc"]);
        let declared = n
            .entries()
            .iter()
            .any(|e| e.name().is_some_and(|k| k.value() != "doc"));
        if algorithm == ChecksumAlgorithm::Crc32 && !declared {
            params.checksum = Checksum::Crc32;
            return;
        }
        let prefix = match prop(n, "prefix").map(|e| (e, e.value().as_string())) {
            None | Some((_, Some("none"))) => false,
            Some((_, Some("id"))) => true,
            Some((e, _)) => {
                self.error(
                    e.span(),
                    "`prefix` is \"id\" (the protocol id hashed first, never sent) or \"none\"",
                    "",
                    None,
                );
                false
            }
        };
        if let Some(e) = prop(n, "stand-in") {
            match e.value().as_string() {
                Some(name) => self.stand_in = Some((name.to_string(), e.span())),
                None => self.error(e.span(), "`stand-in` names a remembered value", "", Some("for example `stand-in=\"connect_id\"` with `remember=\"connect_id\"` on the field it comes from".into())),
            }
        }
        self.stand_in_when = prop(n, "stand-in-when");
        if let Some(e) = prop(n, "field") {
            self.checksum_field = e.value().as_string().map(|s| (s.to_string(), e.span()));
        }
        params.checksum = Checksum::Field;
        params.rule = Some(ChecksumRule {
            algorithm,
            prefix,
            stand_in: None,
            when: None,
        });
    }
}

impl Compiler<'_> {
    /// The articles' CRC covers the datagram's first four bytes: its field must be the
    /// header's first. A declared checksum's `field=` must name the role=crc field.
    fn checksum_position(&mut self, header: Block, params: &Params) -> bool {
        let Some(&crc) = self.role_nodes(header, Role::Crc).first() else {
            return true;
        };
        let name = self.nodes[crc as usize].name.clone();
        if params.checksum == Checksum::Crc32 {
            if self.children.get(header.start as usize) == Some(&crc) {
                return true;
            }
            self.error(
                self.spans[crc as usize],
                format!("the articles' CRC32 is the datagram's first 4 bytes, and `{name}` is not the header's first field"),
                "role=crc",
                Some(format!("to checksum the datagram with the field where it lies, declare `checksum \"crc32\" field=\"{name}\"` in the protocol block")),
            );
            return false;
        }
        match self.checksum_field.clone() {
            Some((f, span)) if f != name => {
                self.error(
                    span,
                    format!("the checksum field is `{name}` (role=crc), not `{f}`"),
                    "field",
                    Some(format!("write `field=\"{name}\"`, or move role=crc to `{f}`")),
                );
                false
            }
            _ => true,
        }
    }

    /// `stand-in=NAME` names a value some field remembers.
    fn resolve_stand_in(&mut self, params: &mut Params) {
        params.remembered = self.remembered.clone();
        params.streams = std::mem::take(&mut self.streams);
        params.messages_end = self.messages_end.take();
        let Some((name, span)) = self.stand_in.take() else {
            return;
        };
        match self.remembered.iter().position(|r| *r == name) {
            Some(i) => {
                if let Some(rule) = &mut params.rule {
                    rule.stand_in = Some(i as u8);
                }
            }
            None => {
                let hint = closest(&name, self.remembered.iter().map(|s| s.as_str()))
                    .map(|c| format!("did you mean `{c}`?"))
                    .unwrap_or_else(|| format!("mark the field it comes from with `remember=\"{name}\"`"));
                self.error(
                    span,
                    format!("no field remembers `{name}`"),
                    "stand-in",
                    Some(hint),
                );
            }
        }
    }

    /// `role=sequence stream="NAME" key="FIELD FIELD"` in a message: one counter per
    /// flow and value of the key fields. A stream used again keeps its key.
    fn stream(&mut self, n: &KdlNode, kind: &Kind) -> Option<Option<u8>> {
        use crate::dissect::program::StreamDef;
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
        let bits = match kind.plain() {
            Kind::Bits(b) => b,
            Kind::Int { min, max } => int_width(min, max).unwrap_or(32),
            _ => 64,
        };
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
    fn remember(&mut self, n: &KdlNode, kind: &Kind, allowed: &mut Vec<&'static str>) -> Option<u8> {
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
    fn ordered(&mut self, n: &KdlNode, kind: Kind, allowed: &mut Vec<&'static str>) -> Option<Kind> {
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

/// The fields declared so far on the path being compiled, newest last, with a count per
/// name, so that looking up a name not in scope costs nothing (a 1 MiB definition
/// declares 65,535 fields, each looked up as it is declared).
#[derive(Debug, Default, Clone)]
struct Scope {
    fields: Vec<(String, Option<u16>)>,
    names: HashMap<String, u32>,
}

impl Scope {
    fn push(&mut self, name: String, slot: Option<u16>) {
        *self.names.entry(name.clone()).or_default() += 1;
        self.fields.push((name, slot));
    }

    fn clear(&mut self) {
        self.fields.clear();
        self.names.clear();
    }

    fn len(&self) -> usize {
        self.fields.len()
    }

    fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    fn truncate(&mut self, len: usize) {
        for (name, _) in self.fields.drain(len.min(self.fields.len())..) {
            if let Some(c) = self.names.get_mut(&name) {
                *c -= 1;
                if *c == 0 {
                    self.names.remove(&name);
                }
            }
        }
    }

    /// The slot of the newest field of that name (None inside: not an integer field).
    fn find(&self, name: &str) -> Option<Option<u16>> {
        if !self.names.contains_key(name) {
            return None;
        }
        self.fields.iter().rev().find(|(n, _)| n == name).map(|(_, s)| *s)
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(n, _)| n.as_str())
    }
}

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
fn template_indices(paths: &[super::paths::PathInfo], path: &str) -> Result<(), String> {
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

fn usage(kind: &str) -> String {
    match kind {
        "bits" => "usage: `bits NAME WIDTH` (WIDTH 1..=32)".into(),
        "int" => "usage: `int NAME MIN MAX`".into(),
        "compressed-float" => "usage: `compressed-float NAME MIN MAX RESOLUTION`".into(),
        "compressed-vector" => "usage: `compressed-vector NAME MIN MAX RESOLUTION`".into(),
        "smallest-three" => "usage: `smallest-three NAME BITS` (BITS 2..=10)".into(),
        "bytes" => "usage: `bytes NAME COUNT` (COUNT a number or an expression over earlier fields)".into(),
        "string" => "usage: `string NAME MAX` (length sent as int(0, MAX-1))".into(),
        "array" => "usage: `array NAME COUNT { fields }`".into(),
        "relative-list" => "usage: `relative-list NAME MAX { fields }`".into(),
        "packet" => "usage: `packet TYPE-ID \"name\" { fields }`".into(),
        "if" => "usage: `if \"condition\" { fields }`".into(),
        "list" => "usage: `list NAME end=\"condition\" { fields }`".into(),
        "check" => "usage: `check \"name to hash\"` or `check magic=0x…`".into(),
        "align" => "usage: `align` (to the next byte)".into(),
        "derived" => "usage: `derived NAME \"expression over earlier fields\"`".into(),
        "le-uint" => {
            "usage: `le-uint NAME BYTES` (1..=8 bytes, little-endian; BYTES a number or an expression)".into()
        }
        "be-uint" | "be-int" | "le-int" => format!(
            "usage: `{kind} NAME BYTES` (1..=8 bytes, {} first{}; BYTES a number or an expression)",
            if kind.starts_with("be") {
                "most significant"
            } else {
                "least significant"
            },
            if kind.ends_with("uint") {
                ""
            } else {
                ", two's complement"
            }
        ),
        "varint" => "usage: `varint NAME` (unsigned LEB128, up to 10 bytes)".into(),
        "zigzag" => "usage: `zigzag NAME` (a LEB128 varint, zigzag-decoded to a signed value)".into(),
        "text" => "usage: `text NAME LEN` (LEN bytes shown as text; a number or an expression)".into(),
        "cstring" => "usage: `cstring NAME MAX` (text up to a NUL, MAX bytes at most with it)".into(),
        "rest" => "usage: `rest NAME` or `rest NAME { what the bytes start with }`".into(),
        "bool" | "uint64" | "float" | "double" | "vector" | "quaternion" => {
            format!("usage: `{kind} NAME`")
        }
        _ => format!("usage: `{kind} NAME …`"),
    }
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
