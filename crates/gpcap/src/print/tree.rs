//! Dissections as text trees (in the spirit of `tshark -V`, with Wireshark-style bit
//! patterns); the values' text, which the JSON writer (`present::json`) shares.

use gpcap_dissect::{Dissection, Field, Program, Value, label_name};
use gpcap_engine::carried::{Anchor, Carried};
use std::fmt::Write;

/// The field's bits over the bytes it touches, each byte MSB first: `.... ..10 1100 ....`.
/// Bit offsets count from each byte's low bit (the articles' LSB-first packer).
pub fn bit_pattern(data: &[u8], bit_offset: u64, bit_len: u64) -> String {
    bit_pattern_in(data, bit_offset, bit_len, false)
}

/// A field's bit pattern in the order it was read: a field read most significant bit
/// first (`bit-order "msb"`, `order="msb"`) counts its bit offset from each byte's high
/// bit, so ENet's 12-bit peer id at bit 4 is `.... 0000 0000 0001`.
pub fn field_bit_pattern(p: &Program, f: &Field, data: &[u8]) -> String {
    let msb = matches!(
        p.nodes.get(f.node as usize).map(|n| &n.kind),
        Some(gpcap_dissect::program::Kind::Msb(_))
    );
    bit_pattern_in(data, f.bit_offset, f.bit_len, msb)
}

/// [`bit_pattern`], with offsets counted from each byte's high bit when `msb`.
pub(crate) fn bit_pattern_in(data: &[u8], bit_offset: u64, bit_len: u64, msb: bool) -> String {
    let mut s = String::new();
    bit_pattern_into(&mut s, data, bit_offset, bit_len, msb);
    s
}

/// [`bit_pattern_in`] written at the end of `s`.
fn bit_pattern_into(s: &mut String, data: &[u8], bit_offset: u64, bit_len: u64, msb: bool) {
    if bit_len == 0 {
        return;
    }
    let first = (bit_offset / 8) as usize;
    let last = ((bit_offset + bit_len - 1) / 8) as usize;
    for byte in first..=last {
        if byte > first {
            s.push(' ');
        }
        let v = data.get(byte).copied().unwrap_or(0);
        for b in (0..8).rev() {
            if b == 3 {
                s.push(' ');
            }
            let bit = byte as u64 * 8 + if msb { 7 - b } else { b };
            if bit >= bit_offset && bit < bit_offset + bit_len {
                s.push(if v >> b & 1 == 1 { '1' } else { '0' });
            } else {
                s.push('.');
            }
        }
    }
}

/// A field's decoded value for people.
/// Decimal places of a compressed float or vector field (its resolution), else None.
pub(crate) fn float_decimals(p: &Program, f: &Field) -> Option<usize> {
    match p.nodes.get(f.node as usize)?.kind {
        gpcap_dissect::program::Kind::CompressedFloat(cf)
        | gpcap_dissect::program::Kind::CompressedVector(cf) => Some(cf.decimals()),
        _ => None,
    }
}

/// A float as people read it: at its resolution when compressed (`6.06`, not
/// `6.0599995`), else the shortest text that reads back as the same f32.
pub(crate) fn float_text(x: f32, decimals: Option<usize>) -> String {
    match decimals {
        Some(d) => format!("{x:.d$}"),
        None => format!("{x}"),
    }
}

pub fn value_text(p: &Program, f: &Field, data: &[u8]) -> String {
    let enum_name = |v: i64| {
        p.nodes
            .get(f.node as usize)
            .filter(|_| matches!(f.label, gpcap_dissect::Label::Node(_)))
            .and_then(|n| n.enum_id)
            .and_then(|e| p.enum_name(e, v))
    };
    match f.value {
        Value::None => String::new(),
        Value::Int(v) => match enum_name(v) {
            Some(n) => format!("{n} ({v})"),
            None => v.to_string(),
        },
        Value::UInt(v) => match enum_name(v as i64) {
            Some(n) => format!("{n} ({v})"),
            None if f.kind == "check" || (f.bit_len == 32 && f.kind == "bits") => format!("{v} (0x{v:08x})"),
            None => v.to_string(),
        },
        Value::Bool(b) => if b { "True" } else { "False" }.into(),
        Value::Float(x) => float_text(x, float_decimals(p, f)),
        Value::Double(x) => format!("{x}"),
        Value::Vec3(v) => {
            let d = float_decimals(p, f);
            format!(
                "({}, {}, {})",
                float_text(v[0], d),
                float_text(v[1], d),
                float_text(v[2], d)
            )
        }
        Value::Quat(q) => format!(
            "({}, {}, {}, {})",
            float_text(q[0], None),
            float_text(q[1], None),
            float_text(q[2], None),
            float_text(q[3], None)
        ),
        Value::Bytes { offset, len } => {
            let b = data.get(offset..offset + len).unwrap_or(&[]);
            if matches!(f.kind, "string" | "text" | "cstring") {
                format!(
                    "{:?}",
                    String::from_utf8_lossy(crate::print::text_bytes(f.kind, b))
                )
            } else {
                let shown: String = b.iter().take(32).map(|x| format!("{x:02x}")).collect();
                if b.len() > 32 {
                    format!("{shown}… ({} bytes)", b.len())
                } else {
                    format!("{shown} ({} bytes)", b.len())
                }
            }
        }
    }
}

/// A datagram's messages by type, runs of one type counted: `acknowledge×2
/// send_reliable` (a message whose header could not be read is `?`). At most about
/// `max` characters, an ellipsis marking a cut.
pub(crate) fn messages_summary(p: &Program, d: &Dissection, max: usize) -> String {
    let mut out = String::new();
    let mut runs = d.messages.chunk_by(|a, b| a.type_id == b.type_id).peekable();
    while let Some(run) = runs.next() {
        let name = run[0].type_id.and_then(|t| p.type_name(t)).unwrap_or("?");
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(name);
        if run.len() > 1 {
            let _ = write!(out, "×{}", run.len());
        }
        if out.chars().count() > max && runs.peek().is_some() {
            out.push_str(" …");
            break;
        }
    }
    out
}

/// The dissection as indented lines, one per field.
pub fn text_tree(p: &Program, d: &Dissection, data: &[u8]) -> String {
    let mut out = String::new();
    write_tree(&mut out, p, d, data, 1, &[], Anchor::DATAGRAM);
    out
}

/// [`text_tree`], with what inner layers read nested under the fields that carried it,
/// their bit offsets counted in the captured datagram.
pub fn text_tree_carried(p: &Program, d: &Dissection, data: &[u8], carried: &[Carried]) -> String {
    let mut out = String::new();
    write_tree_carried(&mut out, p, d, data, carried);
    out
}

/// [`text_tree_carried`] written at the end of `out` (a printer's reused buffer).
pub(crate) fn write_tree_carried(
    out: &mut String,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    carried: &[Carried],
) {
    write_tree(out, p, d, data, 1, carried, Anchor::DATAGRAM);
}

/// The tree's lines at `level` (four spaces each); `base`: where `data`'s first bit is
/// (in the captured datagram, or in a packet an inner layer reassembled).
fn write_tree(
    out: &mut String,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    level: usize,
    carried: &[Carried],
    base: Anchor,
) {
    let shift = base.bit;
    // The field's name, written where it goes (no string of its own).
    let name = |out: &mut String, f: &Field| match f.label {
        gpcap_dissect::Label::Index(i) => {
            let _ = write!(out, "[{i}]");
        }
        other => out.push_str(label_name(p, other)),
    };
    for f in &d.fields {
        for _ in 0..f.depth as usize + level {
            out.push_str("    ");
        }
        let value = value_text(p, f, data);
        let at = f.bit_offset + shift;
        if f.kind == "derived" {
            // Computed, not read: in brackets, as Wireshark shows generated fields.
            out.push('[');
            name(out, f);
            let _ = writeln!(out, ": {value}]  [derived at bit {at}]");
        } else if f.is_group() {
            name(out, f);
            let _ = writeln!(
                out,
                "{}{}  [bit {at}, {}]",
                if value.is_empty() { "" } else { ": " },
                value,
                crate::print::count(f.bit_len, "bit")
            );
        } else if f.bit_len <= 32 {
            let msb = matches!(
                p.nodes.get(f.node as usize).map(|n| &n.kind),
                Some(gpcap_dissect::program::Kind::Msb(_))
            );
            bit_pattern_into(out, data, f.bit_offset, f.bit_len, msb);
            out.push_str(" = ");
            name(out, f);
            let _ = writeln!(
                out,
                ": {value}  [bit {at}, {}]",
                crate::print::count(f.bit_len, "bit")
            );
        } else {
            name(out, f);
            let _ = writeln!(
                out,
                ": {value}  [bit {at}, {}]",
                crate::print::count(f.bit_len, "bit")
            );
        }
        for c in carried.iter().filter(|c| c.carrier == (f.node, f.bit_offset)) {
            write_carried(out, c, base, f.depth as usize + level + 1);
        }
    }
    if let Some(fault) = &d.fault {
        let indent = "    ".repeat(level);
        let _ = writeln!(
            out,
            "{indent}[Malformed: {} at bit {} in {}: {}]",
            fault.kind.code(),
            fault.bit + shift,
            fault.field,
            fault.reason
        );
    }
}

/// An inner layer's packet: a line naming the layer, its type, sequence and status,
/// then its tree one level in.
fn write_carried(out: &mut String, c: &Carried, base: Anchor, level: usize) {
    let e = c.event();
    let p = &c.layer;
    let indent = "    ".repeat(level);
    let ty = match e.packet_type {
        Some(t) => format!("type {t} ({})", p.type_name(t).unwrap_or("undefined")),
        None => "no header".into(),
    };
    let seq = e.sequence.map_or_else(String::new, |s| format!(", sequence {s}"));
    let frag = e
        .fragment
        .map_or_else(String::new, |f| format!(", fragment {} of {}", f.id, f.count));
    let analysis = crate::print::seq_note(e.seq_event);
    let at = c.place(base);
    let place = match (c.kind(), at.captured) {
        (gpcap_engine::Kind::Reassembled, _) => {
            let frames: Vec<String> = e.fragment_frames.iter().map(|f| f.to_string()).collect();
            format!(
                "[reassembled from {} fragments in frames {}; bits counted from its start]",
                frames.len(),
                frames.join(", ")
            )
        }
        (_, true) => format!("[bit {}, {} bits]", at.bit, e.payload.len() * 8),
        (_, false) => format!(
            "[bit {} of the reassembled packet, {} bits]",
            at.bit,
            e.payload.len() * 8
        ),
    };
    let _ = writeln!(
        out,
        "{indent}{} {ty}{seq}, {}{analysis}{frag}  {place}",
        c.name(),
        e.status.code()
    );
    match e.dissection {
        Some(d) if !d.fields.is_empty() || d.fault.is_some() => {
            write_tree(out, p, d, e.payload, level + 1, &c.inner, at)
        }
        _ => {
            let hex: String = e.payload.iter().take(32).map(|b| format!("{b:02x}")).collect();
            let more = if e.payload.len() > 32 { "…" } else { "" };
            let _ = writeln!(out, "{indent}    bytes: {hex}{more} ({} bytes)", e.payload.len());
        }
    }
}
