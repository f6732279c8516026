//! Every field path a definition can produce, without element indices
//! (`objects.position.x`), laid out from the program before packets flow: what a display
//! filter may name, with what it holds, and where it can appear.

use crate::program::{Block, Kind, NodeId, Program};

/// Groups nested deeper than this are not listed (a definition is untrusted).
const MAX_NEST: u32 = 32;

/// What a path holds, for checking a filter's value against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Holds {
    /// Integers, with the enum that names them, if any.
    Int {
        enum_id: Option<u16>,
    },
    Bool,
    /// A float; `step` is the resolution of a compressed float (0: an f32 as read).
    Float {
        step: f64,
    },
    Double,
    Text,
    Bytes,
    /// A group of fields (struct, element, vector…): present or not, and for arrays and
    /// lists a count.
    Group,
}

/// One path of the definition.
#[derive(Debug, Clone, PartialEq)]
pub struct PathInfo {
    /// Dot-joined names, without indices: `objects.position.x`.
    pub path: String,
    /// The packet types whose body has it; empty for the header and fragment header,
    /// which every packet (or every fragment) has.
    pub types: Vec<u32>,
    pub holds: Holds,
    /// Whether it is an array or list, whose elements are indexed (`objects[3]`).
    pub indexed: bool,
}

/// The paths of `p`, header first, each once (a path in several packet types lists them
/// all).
pub fn catalog(p: &Program) -> Vec<PathInfo> {
    let mut out = Catalog::default();
    walk(p, p.header, "", None, 0, &mut out);
    if let Some(f) = p.fragment {
        walk(p, f, "", None, 0, &mut out);
    }
    // With messages, a type's fields are its messages': `messages.data_length`.
    let prefix = match p.messages {
        Some(m) => {
            node(p, m, "", None, 0, &mut out);
            "messages"
        }
        None => "",
    };
    for d in &p.packets {
        walk(p, d.body, prefix, Some(d.type_id), 0, &mut out);
    }
    // A message reassembled from fragments inside messages and read as a type
    // (`reassembled-as`) has that type's fields at its root: `chat.text`.
    for t in p.params.message_fragments.iter().filter_map(|f| f.reassembled_as) {
        if let Some(d) = p.packet(t) {
            walk(p, d.body, "", Some(t), 0, &mut out);
        }
    }
    if p.params.end_check.is_some() {
        add(
            &mut out,
            "end_check".into(),
            None,
            Holds::Int { enum_id: None },
            false,
        );
    }
    out.paths
}

/// The paths in order, and where each is (a definition may declare 65,535 fields).
#[derive(Default)]
struct Catalog {
    paths: Vec<PathInfo>,
    at: std::collections::HashMap<String, usize>,
}

fn add(out: &mut Catalog, path: String, ty: Option<u32>, holds: Holds, indexed: bool) {
    if let Some(e) = out.at.get(&path).and_then(|&i| out.paths.get_mut(i)) {
        // A header path stays everyone's; a body path gains the type.
        if let Some(t) = ty
            && !e.types.is_empty()
            && !e.types.contains(&t)
        {
            e.types.push(t);
        }
        return;
    }
    out.at.insert(path.clone(), out.paths.len());
    out.paths.push(PathInfo {
        path,
        types: ty.into_iter().collect(),
        holds,
        indexed,
    });
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn walk(p: &Program, b: Block, prefix: &str, ty: Option<u32>, nest: u32, out: &mut Catalog) {
    if nest > MAX_NEST {
        return;
    }
    for &id in p.block(b) {
        node(p, id, prefix, ty, nest, out);
    }
}

fn node(p: &Program, id: NodeId, prefix: &str, ty: Option<u32>, nest: u32, out: &mut Catalog) {
    let Some(n) = p.nodes.get(id as usize) else { return };
    let here = join(prefix, &n.name);
    let int = Holds::Int { enum_id: n.enum_id };
    let parts = |out: &mut Catalog, names: &[&str], holds: Holds| {
        add(out, here.clone(), ty, Holds::Group, false);
        for part in names {
            add(out, join(&here, part), ty, holds, false);
        }
    };
    match &n.kind.plain() {
        Kind::If { then, otherwise, .. } => {
            walk(p, *then, prefix, ty, nest + 1, out);
            walk(p, *otherwise, prefix, ty, nest + 1, out);
        }
        Kind::Inline { body } => walk(p, *body, prefix, ty, nest + 1, out),
        Kind::Align => {}
        Kind::Struct { body } | Kind::Rest { body } => {
            let holds = if matches!(n.kind, Kind::Rest { .. }) {
                Holds::Bytes
            } else {
                Holds::Group
            };
            add(out, here.clone(), ty, holds, false);
            walk(p, *body, &here, ty, nest + 1, out);
        }
        Kind::Array { body, .. } | Kind::List { body, .. } | Kind::Messages { header: body } => {
            add(out, here.clone(), ty, Holds::Group, true);
            walk(p, *body, &here, ty, nest + 1, out);
        }
        Kind::RelativeList { body, .. } => {
            add(out, here.clone(), ty, Holds::Group, true);
            add(out, join(&here, "index"), ty, Holds::Int { enum_id: None }, false);
            walk(p, *body, &here, ty, nest + 1, out);
        }
        Kind::Vector => parts(out, &["x", "y", "z"], Holds::Float { step: 0.0 }),
        Kind::CompressedVector(cf) => parts(out, &["x", "y", "z"], Holds::Float { step: cf.step() }),
        Kind::Quaternion => parts(out, &["x", "y", "z", "w"], Holds::Float { step: 0.0 }),
        Kind::SmallestThree(_) => {
            parts(out, &["x", "y", "z", "w"], Holds::Float { step: 0.0 });
            add(
                out,
                join(&here, "largest"),
                ty,
                Holds::Int { enum_id: None },
                false,
            );
        }
        Kind::String { .. } | Kind::Text { .. } | Kind::CString { .. } => {
            add(out, here, ty, Holds::Text, false)
        }
        Kind::Bytes(_) | Kind::Magic(_) => add(out, here, ty, Holds::Bytes, false),
        Kind::Bool => add(out, here, ty, Holds::Bool, false),
        Kind::Float => add(out, here, ty, Holds::Float { step: 0.0 }, false),
        Kind::CompressedFloat(cf) => add(out, here, ty, Holds::Float { step: cf.step() }, false),
        Kind::Double => add(out, here, ty, Holds::Double, false),
        Kind::Bits(_)
        | Kind::Int { .. }
        | Kind::Uint64
        | Kind::Check { .. }
        | Kind::Derived(_)
        | Kind::LeUint(_)
        | Kind::Msb(_)
        | Kind::ByteInt { .. }
        | Kind::Varint { .. } => add(out, here, ty, int, false),
    }
}

/// The catalog's path nearest to `name`, for "did you mean": the fewest edits, else one
/// that ends with the same name (`at_rest` → `objects.at_rest`).
pub fn nearest<'a>(catalog: &'a [PathInfo], name: &str) -> Option<&'a str> {
    let tail = |s: &str| s.rsplit('.').next().unwrap_or(s).to_string();
    let scored = catalog.iter().map(|e| (distance(&e.path, name), e.path.as_str()));
    let close = scored
        .clone()
        .filter(|(d, _)| *d <= 2.max(name.len() / 3))
        .min_by_key(|(d, _)| *d);
    close
        .or_else(|| {
            scored
                .filter(|(_, p)| tail(p) == tail(name))
                .min_by_key(|(d, _)| *d)
        })
        .map(|(_, p)| p)
}

/// Levenshtein distance, bounded to short names.
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().take(128).collect(), b.chars().take(128).collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}
