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

mod advance;
mod arguments;
mod document;
mod fields;
mod hints;
mod message_acks;
mod message_fragments;
mod messages;
mod packets;
mod primitives;
mod protocol;
mod roles;
mod scope;
mod type_space;
mod whole;

use arguments::{positional, prop};
pub use document::describe;
use hints::{MAX_BRACES, closest, common_mistakes, too_deep, usage};
use primitives::{PRIMITIVES, Shape};
use scope::Scope;

/// Compiles definition text; `file` names it in diagnostics.
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
        header_scope: Scope::default(),
        slot_widths: HashMap::new(),
        pending_acks: Vec::new(),
        kinds: false,
        messages_header: None,
    };
    let program = c.document(&doc);
    if c.errors.is_empty() {
        program.ok_or_else(Vec::new)
    } else {
        Err(c.errors)
    }
}

/// Fields (definition nodes) one definition may declare.
pub const MAX_NODES: usize = 65_535;

/// Reads a definition file once ([`super::source::read`]: bounded, whatever the file
/// is) and compiles it.
pub fn load(path: &std::path::Path) -> Result<Program, Vec<DefinitionError>> {
    let name = path.display().to_string();
    match super::source::read(path) {
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

/// Names a struct's body read outside it, each with the slot it found (see `Scope`).
type StructDeps = Vec<(String, Option<u16>)>;

/// A struct's definition and the bodies compiled from it: one per set of outside
/// fields its body reads (a struct reads the fields around its use).
enum StructState<'d> {
    Pending(&'d KdlNode),
    InProgress,
    Done(&'d KdlNode, Vec<(Block, StructDeps)>),
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
    streams: Vec<crate::program::StreamDef>,
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
    /// The header's fields: in scope in every block after it.
    header_scope: Scope,
    /// The widest field writing each slot, in bits: where a `derived` copy of it wraps.
    slot_widths: HashMap<u16, u32>,
    /// Message acks by node, with the stream each names, resolved at the end.
    pending_acks: Vec<(NodeId, message_acks::AckedStream)>,
    /// Datagram kinds beside messages: a header `role=type` names the datagram's
    /// `packet` type, whose body reads the messages where it says `messages`.
    kinds: bool,
    /// The messages block's header, read where a datagram kind's body says `messages`.
    messages_header: Option<Block>,
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

    fn line_of(&self, span: SourceSpan) -> usize {
        self.newlines.partition_point(|&at| at < span.offset()) + 1
    }
}
