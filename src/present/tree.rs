//! Dissections as text trees (in the spirit of `tshark -V`, with Wireshark-style bit
//! patterns) and as JSON values.

use crate::dissect::{Dissection, Field, Program, Value, exec::path_of, label_name};
use serde_json::{Map, Value as Json, json};
use std::fmt::Write;

/// The field's bits over the bytes it touches, each byte MSB first: `.... ..10 1100 ....`.
pub fn bit_pattern(data: &[u8], bit_offset: u64, bit_len: u64) -> String {
    if bit_len == 0 {
        return String::new();
    }
    let first = (bit_offset / 8) as usize;
    let last = ((bit_offset + bit_len - 1) / 8) as usize;
    let mut s = String::new();
    for byte in first..=last {
        if byte > first {
            s.push(' ');
        }
        let v = data.get(byte).copied().unwrap_or(0);
        for b in (0..8).rev() {
            if b == 3 {
                s.push(' ');
            }
            let bit = byte as u64 * 8 + b;
            if bit >= bit_offset && bit < bit_offset + bit_len {
                s.push(if v >> b & 1 == 1 { '1' } else { '0' });
            } else {
                s.push('.');
            }
        }
    }
    s
}

/// A field's decoded value for people.
/// Decimal places of a compressed float or vector field (its resolution), else None.
fn float_decimals(p: &Program, f: &Field) -> Option<usize> {
    match p.nodes.get(f.node as usize)?.kind {
        crate::dissect::program::Kind::CompressedFloat(cf)
        | crate::dissect::program::Kind::CompressedVector(cf) => Some(cf.decimals()),
        _ => None,
    }
}

/// A float as people read it: at its resolution when compressed (`6.06`, not
/// `6.0599995`), else the shortest text that reads back as the same f32.
fn float_text(x: f32, decimals: Option<usize>) -> String {
    match decimals {
        Some(d) => format!("{x:.d$}"),
        None => format!("{x}"),
    }
}

/// The same number for JSON: what the text says, as a JSON number.
fn float_json(x: f32, decimals: Option<usize>) -> Json {
    float_text(x, decimals)
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Json::Null, Json::Number)
}

pub fn value_text(p: &Program, f: &Field, data: &[u8]) -> String {
    let enum_name = |v: i64| {
        p.nodes
            .get(f.node as usize)
            .filter(|_| matches!(f.label, crate::dissect::Label::Node(_)))
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
            if f.kind == "string" {
                format!("{:?}", String::from_utf8_lossy(b))
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

/// The dissection as indented lines, one per field.
pub fn text_tree(p: &Program, d: &Dissection, data: &[u8]) -> String {
    let mut out = String::new();
    for f in &d.fields {
        let indent = "    ".repeat(f.depth as usize + 1);
        let name = match f.label {
            crate::dissect::Label::Index(i) => format!("[{i}]"),
            other => label_name(p, other).to_string(),
        };
        let value = value_text(p, f, data);
        if f.kind == "derived" {
            // Computed, not read: in brackets, as Wireshark shows generated fields.
            let _ = writeln!(
                out,
                "{indent}[{name}: {value}]  [derived at bit {}]",
                f.bit_offset
            );
        } else if f.is_group() {
            let _ = writeln!(
                out,
                "{indent}{name}{}{}  [bit {}, {} bits]",
                if value.is_empty() { "" } else { ": " },
                value,
                f.bit_offset,
                f.bit_len
            );
        } else if f.bit_len <= 32 {
            let _ = writeln!(
                out,
                "{indent}{} = {name}: {value}  [bit {}, {} bits]",
                bit_pattern(data, f.bit_offset, f.bit_len),
                f.bit_offset,
                f.bit_len
            );
        } else {
            let _ = writeln!(
                out,
                "{indent}{name}: {value}  [bit {}, {} bits]",
                f.bit_offset, f.bit_len
            );
        }
    }
    if let Some(fault) = &d.fault {
        let _ = writeln!(
            out,
            "    [Malformed: {} at bit {} in {}: {}]",
            fault.kind.code(),
            fault.bit,
            fault.field,
            fault.reason
        );
    }
    out
}

/// The dissection as nested JSON (`tshark -T json`-like): each field an object with
/// its path, kind, bit offset and length, raw and decoded value, and children.
pub fn json_tree(p: &Program, d: &Dissection, data: &[u8]) -> Json {
    fn node(p: &Program, d: &Dissection, data: &[u8], kids_of: &[Vec<usize>], i: usize) -> Json {
        let f = &d.fields[i];
        let mut m = Map::new();
        m.insert("path".into(), json!(path_of(p, d, i)));
        m.insert("kind".into(), json!(f.kind));
        if let (crate::dissect::Label::Node(n), Some(node)) = (f.label, p.nodes.get(f.node as usize))
            && n == f.node
            && let Some(doc) = &node.doc
        {
            m.insert("doc".into(), json!(doc));
        }
        m.insert("bit_offset".into(), json!(f.bit_offset));
        m.insert("bit_len".into(), json!(f.bit_len));
        if !f.is_group() && f.bit_len <= 64 {
            m.insert("raw".into(), json!(f.raw));
        }
        let v = match f.value {
            Value::None => Json::Null,
            Value::Int(v) => json!(v),
            Value::UInt(v) => json!(v),
            Value::Bool(b) => json!(b),
            Value::Float(x) => float_json(x, float_decimals(p, f)),
            Value::Double(x) => json!(x),
            Value::Vec3(v) => Json::Array(v.iter().map(|&x| float_json(x, float_decimals(p, f))).collect()),
            Value::Quat(q) => Json::Array(q.iter().map(|&x| float_json(x, None)).collect()),
            Value::Bytes { offset, len } => {
                let b = data.get(offset..offset + len).unwrap_or(&[]);
                if f.kind == "string" {
                    json!(String::from_utf8_lossy(b))
                } else {
                    json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
                }
            }
        };
        if !v.is_null() {
            m.insert("value".into(), v);
        }
        let text = value_text(p, f, data);
        if text.contains(" (")
            && matches!(f.value, Value::Int(_) | Value::UInt(_))
            && !text.starts_with(char::is_numeric)
        {
            m.insert("enum".into(), json!(text.split(" (").next()));
        }
        let kids: Vec<Json> = kids_of[i].iter().map(|&k| node(p, d, data, kids_of, k)).collect();
        if !kids.is_empty() {
            m.insert("fields".into(), Json::Array(kids));
        }
        Json::Object(m)
    }
    let mut kids_of = vec![Vec::new(); d.fields.len()];
    let mut roots = Vec::new();
    for (i, f) in d.fields.iter().enumerate() {
        match kids_of.get_mut(f.parent as usize) {
            Some(k) => k.push(i),
            None => roots.push(i),
        }
    }
    let roots: Vec<Json> = roots.into_iter().map(|i| node(p, d, data, &kids_of, i)).collect();
    let mut top = json!({
        "packet_type": d.packet_type,
        "type_name": d.packet_type.and_then(|t| p.type_name(t)),
        "sequence": d.sequence,
        "fragment": d.fragment,
        "fields": roots,
        "fault": d.fault,
    });
    // The ack roles, when the definition has them and this packet's path read them.
    if let Some(ack) = d.ack {
        top["ack"] = json!(ack);
    }
    if let Some(bits) = d.ack_bits {
        top["ack_bits"] = json!(bits);
    }
    top
}
