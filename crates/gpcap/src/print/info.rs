//! A packet's Info line, written once for the TUI's Info column and `dissect --brief`:
//! the definition's `info` template for the packet's type (or its first fields), then what
//! each inner layer read in it, outermost first, as Wireshark's Info reads for stacked
//! protocols: `payload seq 41 · reliable seq 12 ack 10 · chat input`.

use crate::filter::FieldPath;
use gpcap_dissect::{Dissection, Label, Program, ROOT};
use gpcap_engine::carried::Carried;
use gpcap_engine::{Kind, PacketEvent, Status};
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

/// Between a packet's own Info and each inner layer's.
pub const SEPARATOR: &str = " · ";

/// A Type column's text at most (a datagram of messages names its message types; ENet's
/// longest, `send_unsequenced`, whole).
const TYPE_WIDTH: usize = 16;

/// The Info lines of packets of one stack of definitions: each definition's `info`
/// templates, compiled once, the first time a packet of it is described.
#[derive(Default)]
pub struct Info {
    layers: Vec<(Arc<Program>, Templates)>,
}

/// A definition's `info` templates by packet type.
type Templates = HashMap<u32, Vec<Piece>>;

impl Info {
    pub fn new() -> Self {
        Info::default()
    }

    /// The Info of a packet read with its fields recorded by `p` (`d`, over `payload`),
    /// and of what inner layers read in it (`carried`).
    pub fn describe(
        &mut self,
        p: &Arc<Program>,
        d: &Dissection,
        payload: &[u8],
        carried: &[Carried],
    ) -> String {
        let mut text = if carried.is_empty() {
            self.own(p, d, payload)
        } else {
            // The inner layers say what the carried bytes hold: the outer packet's
            // template, or its type and sequence.
            match self.template(p, d, payload) {
                Some(t) => t,
                None => head(p, d.packet_type, d.sequence, None),
            }
        };
        for c in carried {
            self.layer(&mut text, c);
        }
        if let Some(f) = &d.fault {
            text = format!("malformed: {} at {}{SEPARATOR}{text}", f.kind.code(), f.field);
        }
        text
    }

    /// The Info of an event the engine emitted with its field tree (`dissect --brief`).
    pub fn of_event(&mut self, p: &Arc<Program>, e: &PacketEvent<'_>) -> String {
        match e.dissection {
            Some(d) => self.describe(p, d, e.payload, e.carried),
            None => String::new(),
        }
    }

    /// The packet's template filled, or a summary of its fields; a datagram of
    /// messages whose types have templates says each message's.
    fn own(&mut self, p: &Arc<Program>, d: &Dissection, payload: &[u8]) -> String {
        if let Some(t) = self.template(p, d, payload) {
            return t;
        }
        if !d.messages.is_empty()
            && self
                .templates(p)
                .keys()
                .any(|&t| p.packet(t).is_some_and(|d| d.message))
        {
            return self.messages_info(p, d, payload);
        }
        default_info(p, d, payload)
    }

    /// Each message's template filled from its own fields (its type's name without
    /// one), runs of the same text counted, about 80 characters at most.
    fn messages_info(&mut self, p: &Arc<Program>, d: &Dissection, payload: &[u8]) -> String {
        let mut ends = Vec::new();
        d.subtree_ends(&mut ends);
        let mut texts: Vec<String> = Vec::new();
        let mut element = 0..0;
        let mut next = 0usize;
        for (i, m) in d.messages.iter().enumerate() {
            // The message's field: the next element of a `messages` group.
            if let Some(at) = (next..d.fields.len())
                .find(|&k| d.fields[k].kind == "message" && d.fields[k].label == Label::Index(i as u32))
            {
                element = at + 1..ends[at] as usize;
                next = ends[at] as usize;
            }
            let text = match m.type_id.and_then(|t| Some((t, self.templates(p).get(&t)?))) {
                Some((t, pieces)) => fill_within(p, pieces, d, payload, Some(t), element.clone()),
                None => m.type_id.and_then(|t| p.type_name(t)).unwrap_or("?").to_string(),
            };
            texts.push(text);
        }
        let mut out = String::new();
        let mut runs = texts.chunk_by(|a, b| a == b).peekable();
        while let Some(run) = runs.next() {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(&run[0]);
            if run.len() > 1 {
                let _ = write!(out, " ×{}", run.len());
            }
            if out.chars().count() > 80 && runs.peek().is_some() {
                out.push_str(", …");
                break;
            }
        }
        out
    }

    fn template(&mut self, p: &Arc<Program>, d: &Dissection, payload: &[u8]) -> Option<String> {
        let t = d.packet_type?;
        let pieces = self.templates(p).get(&t)?;
        Some(fill_template(p, pieces, d, payload, Some(t)))
    }

    fn templates(&mut self, p: &Arc<Program>) -> &Templates {
        let at = match self.layers.iter().position(|(q, _)| Arc::ptr_eq(p, q)) {
            Some(i) => i,
            None => {
                self.layers.push((p.clone(), compile_templates(p)));
                self.layers.len() - 1
            }
        };
        &self.layers[at].1
    }

    /// ` · reliable seq 12 ack 10`, then what it carried in turn.
    fn layer(&mut self, out: &mut String, c: &Carried) {
        let e = c.event();
        let p = &c.layer;
        let mut part = String::from(c.name());
        // A type worth naming: not a layer's only one, nor a datagram of messages (its
        // messages' types say what it is).
        let named = p.packets.len() > 1 && e.messages.is_empty();
        let ptype = e.packet_type.filter(|_| named);
        let fragment = e.fragment.filter(|_| e.kind != Kind::Reassembled);
        let h = head(p, ptype, e.sequence, e.ack);
        if !h.is_empty() {
            part.push(' ');
            part.push_str(&h);
        }
        if let Some(f) = fragment {
            let _ = write!(part, " fragment {} of {}", f.id, f.count);
        }
        if e.kind == Kind::Reassembled {
            let _ = write!(part, " reassembled from {}", e.fragment_frames.len());
        }
        if !matches!(e.status, Status::Ok) {
            let _ = write!(part, " {}", e.status.code());
        }
        // Its own body, unless a further layer or the rest of the packet describes it.
        let body = match e.dissection {
            Some(d) if c.inner.is_empty() && fragment.is_none() => match self.template(p, d, e.payload) {
                Some(t) => t,
                None if d.messages.is_empty() && d.fields.is_empty() => String::new(),
                None => default_info(p, d, e.payload),
            },
            _ => String::new(),
        };
        out.push_str(SEPARATOR);
        match (part == c.name(), body.is_empty()) {
            // A layer that says nothing of itself (no type, sequence or status): its body.
            (true, false) => out.push_str(&body),
            (_, true) => out.push_str(&part),
            (false, false) => {
                out.push_str(&part);
                out.push_str(SEPARATOR);
                out.push_str(&body);
            }
        }
        for inner in &c.inner {
            self.layer(out, inner);
        }
    }
}

/// `payload seq 12 ack 10`: the type's name (when given), sequence and ack.
fn head(p: &Program, ptype: Option<u32>, seq: Option<u64>, ack: Option<u32>) -> String {
    let mut out = String::new();
    if let Some(t) = ptype {
        out.push_str(p.type_name(t).unwrap_or("undefined"));
    }
    if let Some(s) = seq {
        let _ = write!(out, " seq {s}");
    }
    if let Some(a) = ack {
        let _ = write!(out, " ack {a}");
    }
    out.trim_start().to_string()
}

/// The Type column of a datagram of messages (ENet): the names of the message types it
/// holds, in order of first appearance.
pub fn message_types(p: &Program, d: &Dissection) -> Option<String> {
    if d.messages.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for m in &d.messages {
        let name = m.type_id.and_then(|t| p.type_name(t)).unwrap_or("?");
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Some(super::clip(&names.join(","), TYPE_WIDTH))
}

/// A piece of an `info` template: text as written, a field's value, or how many.
enum Piece {
    Text(String),
    Value(FieldPath),
    Count(FieldPath),
    /// A path the definition does not have (`gpcap check` refuses it; shown as `?`).
    Unknown,
}

/// Every packet type's `info` template, split into pieces against the definition once.
fn compile_templates(p: &Program) -> Templates {
    if p.packets.iter().all(|d| d.info.is_none()) {
        return HashMap::new();
    }
    let paths = gpcap_dissect::paths::catalog(p);
    let mut out = HashMap::new();
    for d in &p.packets {
        let Some(t) = &d.info else { continue };
        let mut pieces = Vec::new();
        let mut rest = t.as_str();
        while let Some(open) = rest.find('{') {
            pieces.push(Piece::Text(rest[..open].to_string()));
            let Some(close) = rest[open..].find('}') else {
                rest = &rest[open..];
                break;
            };
            let name = rest[open + 1..open + close].trim();
            let (count, path) = match name.strip_prefix('#') {
                Some(p) => (true, p),
                None => (false, name),
            };
            let path = gpcap_dissect::paths::info_path(p, d, path);
            pieces.push(match FieldPath::parse(p, &paths, &path) {
                Ok(fp) if count => Piece::Count(fp),
                Ok(fp) => Piece::Value(fp),
                Err(_) => Piece::Unknown,
            });
            rest = &rest[open + close + 1..];
        }
        pieces.push(Piece::Text(rest.to_string()));
        out.insert(d.type_id, pieces);
    }
    out
}

/// A template filled from a packet: `{path}` the first occurrence's value, `{#path}` how
/// many there are (a list or array: its elements).
fn fill_template(
    p: &Program,
    pieces: &[Piece],
    d: &Dissection,
    payload: &[u8],
    ptype: Option<u32>,
) -> String {
    fill_within(p, pieces, d, payload, ptype, 0..d.fields.len())
}

/// [`fill_template`] from the fields in `within` only (one message's).
fn fill_within(
    p: &Program,
    pieces: &[Piece],
    d: &Dissection,
    payload: &[u8],
    ptype: Option<u32>,
    within: std::ops::Range<usize>,
) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Count(fp) => {
                let n: usize = (fp.occurrences(d, ptype))
                    .filter(|i| within.contains(i))
                    .map(|i| elements(d, i))
                    .sum();
                out.push_str(&n.to_string());
            }
            Piece::Value(fp) => match (fp.occurrences(d, ptype))
                .find(|i| within.contains(i))
                .and_then(|i| d.fields.get(i))
            {
                Some(f) => out.push_str(&super::tree::value_text(p, f, payload)),
                None => out.push('-'),
            },
            Piece::Unknown => out.push('?'),
        }
    }
    out
}

/// How many values field `i` counts for in `{#path}`: a list or array its elements.
fn elements(d: &Dissection, i: usize) -> usize {
    let f = &d.fields[i];
    if f.kind == "array" || f.kind.ends_with("list") {
        d.fields[i + 1..]
            .iter()
            .filter(|c| c.parent == i as u32 && matches!(c.label, Label::Index(_)))
            .count()
    } else {
        1
    }
}

/// The type's name and its first top-level fields after the header (`a=3 b=-2 c=10`).
fn default_info(p: &Program, d: &Dissection, payload: &[u8]) -> String {
    // A datagram of messages: what it carries.
    if !d.messages.is_empty() {
        return super::tree::messages_summary(p, d, 80);
    }
    let header = p.block(p.header).len();
    let mut parts = Vec::new();
    let mut width = 0;
    for f in d
        .fields
        .iter()
        .filter(|f| f.parent == ROOT && f.kind != "align" && f.kind != "check")
        .skip(header)
    {
        let name = gpcap_dissect::label_name(p, f.label);
        let value = super::tree::value_text(p, f, payload);
        let part = if f.is_group() && f.kind != "string" && !value.is_empty() && !value.starts_with('(') {
            format!("{name}[{value}]")
        } else if value.is_empty() {
            name.to_string()
        } else {
            format!("{name}={value}")
        };
        width += part.chars().count() + 1;
        parts.push(part);
        if width > 80 {
            break;
        }
    }
    parts.join(" ")
}
