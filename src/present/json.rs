//! `dissect --json`/`--jsonl` written straight from the field tree: no JSON value tree,
//! no map per field, a path built once per level. Keys come out in the sorted order the
//! document has always had, so the output is byte for byte what it was.

use super::tree::{float_decimals, float_text};
use crate::dissect::{Dissection, Field, FragmentInfo, Label, Program, Value, label_name};
use crate::engine::carried::{Anchor, Carried};
use crate::engine::{Kind, PacketEvent};
use crate::validate::CrcStatus;
use std::io::{self, Write};

/// Buffers reused from packet to packet.
#[derive(Default)]
pub struct JsonScratch {
    /// Where each field's subtree ends (pre-order), to walk children without lists.
    end: Vec<u32>,
    path: String,
}

fn string<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    // Names and paths rarely need escaping: copy those as they are.
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        w.write_all(b"\"")?;
        w.write_all(s.as_bytes())?;
        return w.write_all(b"\"");
    }
    serde_json::to_writer(w, s).map_err(io::Error::other)
}

/// An integer, without the formatting machinery.
fn int<W: Write>(w: &mut W, v: impl itoa::Integer) -> io::Result<()> {
    w.write_all(itoa::Buffer::new().format(v).as_bytes())
}

fn key<W: Write>(w: &mut W, first: &mut bool, k: &str) -> io::Result<()> {
    if !std::mem::take(first) {
        w.write_all(b",")?;
    }
    w.write_all(b"\"")?;
    w.write_all(k.as_bytes())?;
    w.write_all(b"\":")
}

fn opt<W: Write, T: std::fmt::Display>(w: &mut W, v: Option<T>) -> io::Result<()> {
    match v {
        Some(v) => write!(w, "{v}"),
        None => w.write_all(b"null"),
    }
}

/// A float at its resolution, as the tree shows it, as a JSON number (null if not finite).
fn float<W: Write>(w: &mut W, x: f32, decimals: Option<usize>) -> io::Result<()> {
    match float_text(x, decimals).parse::<f64>() {
        Ok(v) if v.is_finite() => serde_json::to_writer(w, &v).map_err(io::Error::other),
        _ => w.write_all(b"null"),
    }
}

fn fragment<W: Write>(w: &mut W, f: Option<FragmentInfo>) -> io::Result<()> {
    match f {
        Some(f) => write!(
            w,
            "{{\"count\":{},\"data_len\":{},\"data_offset\":{},\"id\":{},\"lead\":{}}}",
            f.count, f.data_len, f.data_offset, f.id, f.lead
        ),
        None => w.write_all(b"null"),
    }
}

/// One game datagram or reassembled packet as one compact JSON object (no newline);
/// what inner layers read in it nested under the fields that carried it.
pub fn write_packet<W: Write>(
    w: &mut W,
    program: Option<&Program>,
    e: &PacketEvent,
    d: &Dissection,
    note: Option<&str>,
    scratch: &mut JsonScratch,
) -> io::Result<()> {
    packet(w, program, e, d, note, scratch, None)
}

/// Where an inner layer's packet lies; `None` for the outermost packet.
type Placed = Option<Anchor>;

fn packet<W: Write>(
    w: &mut W,
    program: Option<&Program>,
    e: &PacketEvent,
    d: &Dissection,
    note: Option<&str>,
    scratch: &mut JsonScratch,
    placed: Placed,
) -> io::Result<()> {
    let mut first = true;
    w.write_all(b"{")?;
    if let Some(p) = program {
        if let Some(ack) = d.ack {
            key(w, &mut first, "ack")?;
            write!(w, "{ack}")?;
        }
        if let Some(bits) = d.ack_bits {
            key(w, &mut first, "ack_bits")?;
            write!(w, "{bits}")?;
        }
        if let Some(at) = placed {
            key(w, &mut first, "at_bit")?;
            opt(w, at.in_datagram())?;
        }
        key(w, &mut first, "crc_ok")?;
        opt(w, e.crc.map(|c| c == CrcStatus::Ok))?;
        key(w, &mut first, "dst")?;
        socket(w, e.flow.map(|f| f.dst))?;
        key(w, &mut first, "fault")?;
        match &d.fault {
            Some(f) => {
                let shift = placed.map_or(0, |a| a.bit);
                write!(w, "{{\"bit\":{},\"field\":", f.bit + shift)?;
                string(w, &f.field)?;
                write!(w, ",\"kind\":\"{}\",\"reason\":", f.kind.code())?;
                string(w, &f.reason)?;
                w.write_all(b"}")?;
            }
            None => w.write_all(b"null")?,
        }
        key(w, &mut first, "fields")?;
        let inside = Inside {
            carried: e.carried,
            at: placed.unwrap_or(Anchor::DATAGRAM),
        };
        fields_in(w, p, d, e.payload, scratch, &inside)?;
        key(w, &mut first, "fragment")?;
        fragment(w, d.fragment)?;
    } else {
        key(w, &mut first, "crc_ok")?;
        opt(w, e.crc.map(|c| c == CrcStatus::Ok))?;
        key(w, &mut first, "dst")?;
        socket(w, e.flow.map(|f| f.dst))?;
        key(w, &mut first, "fault")?;
        match e.fault {
            Some(f) => write!(w, "{{\"kind\":\"{}\"}}", f.code())?,
            None => w.write_all(b"null")?,
        }
        key(w, &mut first, "fields")?;
        w.write_all(b"[]")?;
        key(w, &mut first, "fragment")?;
        fragment(w, e.fragment)?;
    }
    if e.kind == Kind::Reassembled {
        key(w, &mut first, "fragment_frames")?;
        w.write_all(b"[")?;
        for (i, f) in e.fragment_frames.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write!(w, "{f}")?;
        }
        w.write_all(b"]")?;
    }
    key(w, &mut first, "frame")?;
    write!(w, "{}", e.frame)?;
    if let Some(n) = note {
        key(w, &mut first, "note")?;
        string(w, n)?;
    }
    let (ptype, sequence) = match program {
        Some(_) => (d.packet_type, d.sequence),
        None => (e.packet_type, e.sequence),
    };
    key(w, &mut first, "packet_type")?;
    opt(w, ptype)?;
    key(w, &mut first, "sequence")?;
    opt(w, sequence)?;
    key(w, &mut first, "size")?;
    write!(w, "{}", e.size)?;
    key(w, &mut first, "src")?;
    socket(w, e.flow.map(|f| f.src))?;
    key(w, &mut first, "status")?;
    write!(w, "\"{}\"", e.status.code())?;
    key(w, &mut first, "ts_ns")?;
    write!(w, "{}", e.ts_ns)?;
    if let Some(p) = program {
        key(w, &mut first, "type_name")?;
        match ptype.and_then(|t| p.type_name(t)) {
            Some(n) => string(w, n)?,
            None => w.write_all(b"null")?,
        }
    }
    w.write_all(b"}")
}

fn socket<W: Write>(w: &mut W, a: Option<std::net::SocketAddr>) -> io::Result<()> {
    match a {
        Some(a) => write!(w, "\"{a}\""),
        None => w.write_all(b"null"),
    }
}

/// What a tree's fields carry, and where the tree's first bit is (in the captured
/// datagram, or inside a packet an inner layer reassembled): its fields' bit offsets
/// are written from there.
#[derive(Clone, Copy)]
pub struct Inside<'a> {
    pub carried: &'a [Carried],
    pub at: Anchor,
}

/// The field tree as a JSON array: roots, then each field's children, in pre-order.
pub fn fields<W: Write>(
    w: &mut W,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    s: &mut JsonScratch,
) -> io::Result<()> {
    let outer = Inside {
        carried: &[],
        at: Anchor::DATAGRAM,
    };
    fields_in(w, p, d, data, s, &outer)
}

/// [`fields`], with what inner layers read nested under the fields that carried it.
pub fn fields_in<W: Write>(
    w: &mut W,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    s: &mut JsonScratch,
    inside: &Inside,
) -> io::Result<()> {
    let n = d.fields.len();
    d.subtree_ends(&mut s.end);
    s.path.clear();
    w.write_all(b"[")?;
    let mut i = 0;
    let mut first = true;
    while i < n {
        if !std::mem::take(&mut first) {
            w.write_all(b",")?;
        }
        field(w, p, d, data, s, i, inside)?;
        i = s.end[i] as usize;
    }
    w.write_all(b"]")
}

fn field<W: Write>(
    w: &mut W,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    s: &mut JsonScratch,
    i: usize,
    inside: &Inside,
) -> io::Result<()> {
    let f = &d.fields[i];
    let mark = s.path.len();
    match f.label {
        Label::Index(k) => {
            use std::fmt::Write as _;
            let _ = write!(s.path, "[{k}]");
        }
        other => {
            if mark > 0 {
                s.path.push('.');
            }
            s.path.push_str(label_name(p, other));
        }
    }
    w.write_all(b"{\"bit_len\":")?;
    int(w, f.bit_len)?;
    w.write_all(b",\"bit_offset\":")?;
    int(w, f.bit_offset + inside.at.bit)?;
    if inside.carried.iter().any(|c| c.carrier == (f.node, f.bit_offset)) {
        carried(w, f, inside)?;
    }
    if let (Label::Node(n), Some(node)) = (f.label, p.nodes.get(f.node as usize))
        && n == f.node
        && let Some(doc) = &node.doc
    {
        w.write_all(b",\"doc\":")?;
        string(w, doc)?;
    }
    if let Some(name) = enum_name(p, f) {
        w.write_all(b",\"enum\":")?;
        string(w, name.split(" (").next().unwrap_or(name))?;
    }
    let end = s.end[i] as usize;
    if i + 1 < end {
        w.write_all(b",\"fields\":[")?;
        let mut k = i + 1;
        while k < end {
            if k > i + 1 {
                w.write_all(b",")?;
            }
            field(w, p, d, data, s, k, inside)?;
            k = s.end[k] as usize;
        }
        w.write_all(b"]")?;
    }
    w.write_all(b",\"kind\":")?;
    string(w, f.kind)?;
    w.write_all(b",\"path\":")?;
    string(w, &s.path)?;
    if !f.is_group() && f.bit_len <= 64 {
        w.write_all(b",\"raw\":")?;
        int(w, f.raw)?;
    }
    value(w, p, f, data)?;
    s.path.truncate(mark);
    w.write_all(b"}")
}

/// The enum name of an integer field's value, as the text tree shows it.
fn enum_name<'p>(p: &'p Program, f: &Field) -> Option<&'p str> {
    let v = match f.value {
        Value::Int(v) => v,
        Value::UInt(v) => v as i64,
        _ => return None,
    };
    let name = p
        .nodes
        .get(f.node as usize)
        .filter(|_| matches!(f.label, Label::Node(_)))
        .and_then(|n| n.enum_id)
        .and_then(|e| p.enum_name(e, v))?;
    (!name.starts_with(char::is_numeric)).then_some(name)
}

fn value<W: Write>(w: &mut W, p: &Program, f: &Field, data: &[u8]) -> io::Result<()> {
    match f.value {
        Value::None => Ok(()),
        Value::Int(v) => {
            w.write_all(b",\"value\":")?;
            int(w, v)
        }
        Value::UInt(v) => {
            w.write_all(b",\"value\":")?;
            int(w, v)
        }
        Value::Bool(b) => w.write_all(if b {
            b",\"value\":true"
        } else {
            b",\"value\":false"
        }),
        Value::Float(x) => {
            // A value that is not a number is left out, as a null value always was.
            let decimals = float_decimals(p, f);
            match float_text(x, decimals).parse::<f64>() {
                Ok(v) if v.is_finite() => {
                    w.write_all(b",\"value\":")?;
                    serde_json::to_writer(w, &v).map_err(io::Error::other)
                }
                _ => Ok(()),
            }
        }
        Value::Double(x) if x.is_finite() => {
            w.write_all(b",\"value\":")?;
            serde_json::to_writer(w, &x).map_err(io::Error::other)
        }
        Value::Double(_) => Ok(()),
        Value::Vec3(v) => {
            let decimals = float_decimals(p, f);
            w.write_all(b",\"value\":[")?;
            for (k, x) in v.iter().enumerate() {
                if k > 0 {
                    w.write_all(b",")?;
                }
                float(w, *x, decimals)?;
            }
            w.write_all(b"]")
        }
        Value::Quat(q) => {
            w.write_all(b",\"value\":[")?;
            for (k, x) in q.iter().enumerate() {
                if k > 0 {
                    w.write_all(b",")?;
                }
                float(w, *x, None)?;
            }
            w.write_all(b"]")
        }
        Value::Bytes { offset, len } => {
            let b = data.get(offset..offset + len).unwrap_or(&[]);
            w.write_all(b",\"value\":")?;
            if matches!(f.kind, "string" | "text" | "cstring") {
                string(w, &String::from_utf8_lossy(crate::present::text_bytes(f.kind, b)))
            } else {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                w.write_all(b"\"")?;
                for &x in b {
                    w.write_all(&[HEX[(x >> 4) as usize], HEX[(x & 15) as usize]])?;
                }
                w.write_all(b"\"")
            }
        }
    }
}

/// `"carried":{"reliable":[…]}`: the packets of each layer this field carried, in the
/// order the layer read them, each as a packet object of its own.
fn carried<W: Write>(w: &mut W, f: &Field, inside: &Inside) -> io::Result<()> {
    let here: Vec<&Carried> = (inside.carried.iter())
        .filter(|c| c.carrier == (f.node, f.bit_offset))
        .collect();
    w.write_all(b",\"carried\":{")?;
    let mut names: Vec<&str> = Vec::new();
    for c in &here {
        if !names.contains(&c.name()) {
            names.push(c.name());
        }
    }
    let mut scratch = JsonScratch::default();
    for (k, name) in names.iter().enumerate() {
        if k > 0 {
            w.write_all(b",")?;
        }
        string(w, name)?;
        w.write_all(b":[")?;
        for (j, c) in here.iter().filter(|c| c.name() == *name).enumerate() {
            if j > 0 {
                w.write_all(b",")?;
            }
            let e = c.event();
            let empty = Dissection::default();
            let note = crate::sinks::printer::note(&e);
            let d = e.dissection.unwrap_or(&empty);
            let at = c.place(inside.at);
            packet(w, Some(&c.layer), &e, d, note.as_deref(), &mut scratch, Some(at))?;
        }
        w.write_all(b"]")?;
    }
    w.write_all(b"}")
}
