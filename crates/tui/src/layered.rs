//! The selected packet's inner layers as rows of the field tree: what a run with keys
//! and inner layers read in it (found by [`gpcap::run::seek`]), each layer's packet,
//! fields and fault after the outer field that carried them.

use gpcap_dissect::{Dissection, Fault, Label, label_name};
use gpcap_engine::carried::{Anchor, Carried};

/// A row of the field tree that an inner layer read: a packet's line, one of its fields,
/// or its fault.
#[derive(Debug, Clone)]
pub struct LayerRow {
    /// The outer field it is shown after (an index of the outer tree's fields).
    pub after: usize,
    /// Indentation, in tree levels.
    pub depth: u16,
    pub text: String,
    /// Where it is: `@bit+len`, and the definition line.
    pub place: String,
    /// Its bits in the outer datagram's payload (none inside a reassembled packet).
    pub bits: Option<(u64, u64)>,
    /// Its bits as read (`.... 0101`), for the dump's caption.
    pub pattern: Option<String>,
    pub doc: Option<String>,
    /// The filter term that selects its value (`reliable.sequence == 3`).
    pub term: Option<String>,
}

/// The rows of everything `carried` holds, nested under the outer fields that carried it.
pub fn rows(outer: &Dissection, carried: &[Carried]) -> Vec<LayerRow> {
    let mut out = Vec::new();
    for (i, f) in outer.fields.iter().enumerate() {
        for c in carried.iter().filter(|c| c.carrier == (f.node, f.bit_offset)) {
            packet_rows(&mut out, c, Anchor::DATAGRAM, i, f.depth + 1);
        }
    }
    out
}

fn packet_rows(out: &mut Vec<LayerRow>, c: &Carried, base: Anchor, after: usize, depth: u16) {
    let e = c.event();
    let at = c.place(base);
    out.push(packet_row(c, at, after, depth));
    let Some(d) = e.dissection else { return };
    for (i, f) in d.fields.iter().enumerate() {
        out.push(field_row(c, d, i, at, after, depth));
        for inner in c.inner.iter().filter(|x| x.carrier == (f.node, f.bit_offset)) {
            packet_rows(out, inner, at, after, depth + 2 + f.depth);
        }
    }
    if let Some(fault) = &d.fault {
        out.push(fault_row(fault, e.payload.len(), at, after, depth));
    }
}

/// An inner layer's packet: its layer, type, sequence, fragment and status, and where
/// it lies (or what it was put back from).
fn packet_row(c: &Carried, at: Anchor, after: usize, depth: u16) -> LayerRow {
    let e = c.event();
    let p = &c.layer;
    let ty = e.packet_type.map_or_else(
        || "no header".into(),
        |t| p.type_name(t).unwrap_or("undefined").to_string(),
    );
    let seq = e.sequence.map_or_else(String::new, |s| format!(" seq {s}"));
    let frag = e
        .fragment
        .map_or_else(String::new, |f| format!(" fragment {} of {}", f.id, f.count));
    let (place, bits) = match (c.kind(), at.captured) {
        (gpcap_engine::Kind::Reassembled, _) => {
            (format!("reassembled from {}", e.fragment_frames.len()), None)
        }
        (_, true) => (
            format!("@{}+{}", at.bit, e.payload.len() * 8),
            Some((at.bit, e.payload.len() as u64 * 8)),
        ),
        (_, false) => (format!("@{}+{} in it", at.bit, e.payload.len() * 8), None),
    };
    LayerRow {
        after,
        depth,
        text: format!("{} {ty}{seq}{frag} {}", c.name(), e.status.code()),
        place,
        bits,
        pattern: None,
        doc: None,
        term: None,
    }
}

/// Field `i` of an inner layer's packet, with its place in this datagram, its bit
/// pattern, and the filter term that selects it.
fn field_row(c: &Carried, d: &Dissection, i: usize, at: Anchor, after: usize, depth: u16) -> LayerRow {
    let (e, p, name) = (c.event(), &c.layer, c.name());
    let f = &d.fields[i];
    let label = match f.label {
        Label::Index(k) => format!("[{k}]"),
        other => label_name(p, other).to_string(),
    };
    let value = gpcap::present::tree::value_text(p, f, e.payload);
    let text = if f.kind == "derived" {
        format!("[{label}: {value}]")
    } else if value.is_empty() {
        label
    } else {
        format!("{label}: {value}")
    };
    let line = p.nodes.get(f.node as usize).map_or(0, |n| n.line);
    let bit = f.bit_offset + at.bit;
    let place = match (line, at.captured) {
        (0, true) => format!("@{bit}+{}", f.bit_len),
        (l, true) => format!("@{bit}+{} L{l}", f.bit_len),
        (0, false) => format!("@{bit}+{} in it", f.bit_len),
        (l, false) => format!("@{bit}+{} in it L{l}", f.bit_len),
    };
    let path = gpcap_dissect::paths::path_of(p, d, i);
    let term = gpcap_dissect::paths::strip_indices(&path);
    let term = match super::app::filter_value(p, f, e.payload) {
        Some(v) => format!("{name}.{term} == {v}"),
        None => format!("{name}.{term}"),
    };
    LayerRow {
        after,
        depth: depth + 1 + f.depth,
        text,
        place,
        bits: at.captured.then_some((bit, f.bit_len)),
        pattern: (f.bit_len <= 64 && f.bit_len > 0)
            .then(|| gpcap::present::tree::field_bit_pattern(p, f, e.payload)),
        doc: match f.label {
            Label::Node(n) => p.nodes.get(n as usize).and_then(|node| node.doc.clone()),
            _ => None,
        },
        term: Some(term),
    }
}

/// The fault that stopped an inner layer's packet, its bits to the payload's end.
fn fault_row(fault: &Fault, len: usize, at: Anchor, after: usize, depth: u16) -> LayerRow {
    LayerRow {
        after,
        depth: depth + 1,
        text: format!(
            "✗ [Malformed: {} at bit {} in {}: {}]",
            fault.kind.code(),
            fault.bit + at.bit,
            fault.field,
            fault.reason
        ),
        place: String::new(),
        bits: at.captured.then(|| {
            (
                fault.bit + at.bit,
                (len as u64 * 8).saturating_sub(fault.bit).max(1),
            )
        }),
        pattern: None,
        doc: None,
        term: None,
    }
}
