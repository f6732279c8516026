//! `dissect --json`/`--jsonl` written straight from the field tree into a reused byte
//! buffer: no JSON value tree, no map or string per field, each node's name and doc
//! escaped once, numbers through `itoa` and `zmij`. Keys come out in the sorted order the
//! document has always had, so the output is byte for byte what it was.

use super::tree::float_text;
use gpcap_dissect::{Dissection, Field, FragmentInfo, Label, Program, Value};
use gpcap_engine::ack_facts::{AckFacts, Settled};
use gpcap_engine::carried::{Anchor, Carried};
use gpcap_engine::{Kind, PacketEvent};
use gpcap_wire::validate::CrcStatus;
use std::io::Write as _;

/// What a node writes every time, escaped once: its name as a path segment, its
/// `,"doc":"…"` member, its floats' resolution.
struct NodeBytes {
    name: Box<[u8]>,
    doc: Option<Box<[u8]>>,
    decimals: Option<usize>,
}

/// Buffers reused from packet to packet, and the bytes of the nodes written so far.
#[derive(Default)]
pub struct JsonScratch {
    /// What the ack analysis' pass settled (each message's ack verdict), when run.
    pub acks: Option<std::sync::Arc<gpcap_engine::ack_facts::AckFacts>>,
    /// The field's path, already escaped for a JSON string.
    path: Vec<u8>,
    names: Names,
    floats: Floats,
}

/// The last few floats written, as written: a vector's value repeats its components,
/// written just before it as the children's values.
#[derive(Default)]
struct Floats {
    /// (bits, resolution, length of the text, the text); length 0: an empty slot.
    recent: [(u32, Option<usize>, u8, [u8; 32]); 4],
    next: usize,
}

impl Floats {
    /// [`float`], from memory when `x` was just written at the same resolution.
    fn write(&mut self, w: &mut Vec<u8>, x: f32, decimals: Option<usize>) -> bool {
        let bits = x.to_bits();
        for (b, d, len, text) in &self.recent {
            if *len > 0 && *b == bits && *d == decimals {
                w.extend_from_slice(text.get(..*len as usize).unwrap_or(&[]));
                return true;
            }
        }
        let at = w.len();
        if !float(w, x, decimals) {
            return false;
        }
        let t = w.get(at..).unwrap_or(&[]);
        if let Some(slot) = self.recent.get_mut(self.next)
            && (1..=32).contains(&t.len())
        {
            *slot = (bits, decimals, t.len() as u8, [0; 32]);
            slot.3[..t.len()].copy_from_slice(t);
            self.next = (self.next + 1) % 4;
        }
        true
    }
}

/// The program `nodes` were written for (its address: printers hold it for their
/// lifetime), and its nodes' bytes, filled as they are first met.
#[derive(Default)]
struct Names {
    program: usize,
    nodes: Vec<Option<NodeBytes>>,
}

impl Names {
    /// The bytes of node `n` of `p` (`None` past its nodes).
    fn node(&mut self, p: &Program, n: u32) -> Option<&NodeBytes> {
        let key = p as *const Program as usize;
        if self.program != key || self.nodes.len() != p.nodes.len() {
            self.program = key;
            self.nodes.clear();
            self.nodes.resize_with(p.nodes.len(), || None);
        }
        let node = p.nodes.get(n as usize)?;
        let slot = self.nodes.get_mut(n as usize)?;
        Some(slot.get_or_insert_with(|| {
            let mut name = Vec::new();
            escaped(&mut name, &node.name);
            let doc = node.doc.as_ref().map(|d| {
                let mut b = b",\"doc\":\"".to_vec();
                escaped(&mut b, d);
                b.push(b'"');
                b.into_boxed_slice()
            });
            let decimals = match node.kind {
                gpcap_dissect::program::Kind::CompressedFloat(cf)
                | gpcap_dissect::program::Kind::CompressedVector(cf) => Some(cf.decimals()),
                _ => None,
            };
            NodeBytes {
                name: name.into_boxed_slice(),
                doc,
                decimals,
            }
        }))
    }
}

/// Bytes that need no escaping in a JSON string.
fn plain(s: &str) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// `s` escaped as inside a JSON string, without the quotes.
fn escaped(w: &mut Vec<u8>, s: &str) {
    if plain(s) {
        w.extend_from_slice(s.as_bytes());
    } else if let Ok(q) = serde_json::to_vec(s) {
        w.extend_from_slice(q.get(1..q.len() - 1).unwrap_or(&[]));
    }
}

fn string(w: &mut Vec<u8>, s: &str) {
    w.push(b'"');
    escaped(w, s);
    w.push(b'"');
}

/// An integer, without the formatting machinery.
fn int(w: &mut Vec<u8>, v: impl itoa::Integer) {
    w.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

fn key(w: &mut Vec<u8>, first: &mut bool, k: &str) {
    if !std::mem::take(first) {
        w.push(b',');
    }
    w.push(b'"');
    w.extend_from_slice(k.as_bytes());
    w.extend_from_slice(b"\":");
}

fn opt_int(w: &mut Vec<u8>, v: Option<impl itoa::Integer>) {
    match v {
        Some(v) => int(w, v),
        None => w.extend_from_slice(b"null"),
    }
}

fn opt_bool(w: &mut Vec<u8>, v: Option<bool>) {
    w.extend_from_slice(match v {
        Some(true) => b"true",
        Some(false) => b"false",
        None => b"null",
    });
}

/// A float at its resolution, as the tree shows it (`float_text`), read back as an f64
/// and written as JSON writes it: `false` (nothing written) when not finite.
pub(crate) fn float(w: &mut Vec<u8>, x: f32, decimals: Option<usize>) -> bool {
    if float_fast(w, x, decimals) {
        return true;
    }
    match float_text(x, decimals).parse::<f64>() {
        Ok(v) if v.is_finite() => serde_json::to_writer(w, &v).is_ok(),
        _ => false,
    }
}

/// [`float`] without text in between, for the values JSON writes without an exponent
/// (`false`: take the long way). The shortest text of an f32 read as an f64 is that
/// f64's shortest text too, and a value rounded to at most 15 digits reads back as itself.
/// A value exactly halfway between two texts takes the long way: `zmij` and `{}` (or
/// `{:.d}`) may settle the tie differently. Below 10^7 an f32 that prints as an
/// integer is that integer, so the fraction's digits are the ones that can tie.
fn float_fast(w: &mut Vec<u8>, x: f32, decimals: Option<usize>) -> bool {
    /// x·10^k is exact in an f64 for k ≤ 12 (24 + 28 bits at most).
    fn halfway(x: f32, k: usize) -> bool {
        (x as f64 * 10f64.powi(k as i32)).fract().abs() == 0.5
    }
    let a = x.abs();
    match decimals {
        None if (1e-4..1e7).contains(&a) => {
            let mut b = zmij::Buffer::new();
            let s = b.format_finite(x).as_bytes();
            let Some(dot) = s.iter().position(|&c| c == b'.') else {
                return false;
            };
            let k = s.len() - dot - 1;
            if s.contains(&b'e') || k > 12 || halfway(x, k) {
                return false;
            }
            w.extend_from_slice(s);
            true
        }
        Some(d) if d <= 9 && (1e-3..1e6).contains(&a) && !halfway(x, d) => {
            let scale = 10u64.pow(d as u32);
            let n = (x as f64 * scale as f64).round();
            if n.abs() * 1e4 < scale as f64 {
                return false;
            }
            let n = n.abs() as u64;
            if x < 0.0 {
                w.push(b'-');
            }
            int(w, n / scale);
            w.push(b'.');
            let frac = n % scale;
            if frac == 0 {
                w.push(b'0');
                return true;
            }
            let mut digits = [b'0'; 9];
            let mut f = frac;
            for k in (0..d).rev() {
                digits[k] = b'0' + (f % 10) as u8;
                f /= 10;
            }
            let mut len = d;
            while len > 1 && digits[len - 1] == b'0' {
                len -= 1;
            }
            w.extend_from_slice(&digits[..len]);
            true
        }
        _ => false,
    }
}

fn fragment(w: &mut Vec<u8>, f: Option<FragmentInfo>) {
    let Some(f) = f else {
        return w.extend_from_slice(b"null");
    };
    w.extend_from_slice(b"{\"count\":");
    int(w, f.count);
    w.extend_from_slice(b",\"data_len\":");
    int(w, f.data_len);
    w.extend_from_slice(b",\"data_offset\":");
    int(w, f.data_offset);
    w.extend_from_slice(b",\"id\":");
    int(w, f.id);
    w.extend_from_slice(b",\"lead\":");
    int(w, f.lead);
    w.push(b'}');
}

/// One game datagram or reassembled packet as one compact JSON object (no newline);
/// what inner layers read in it nested under the fields that carried it.
pub fn write_packet(
    w: &mut Vec<u8>,
    program: Option<&Program>,
    e: &PacketEvent,
    d: &Dissection,
    note: Option<&str>,
    scratch: &mut JsonScratch,
) {
    packet(w, program, e, d, note, scratch, None)
}

/// Where an inner layer's packet lies; `None` for the outermost packet.
type Placed = Option<Anchor>;

fn packet(
    w: &mut Vec<u8>,
    program: Option<&Program>,
    e: &PacketEvent,
    d: &Dissection,
    note: Option<&str>,
    scratch: &mut JsonScratch,
    placed: Placed,
) {
    let mut first = true;
    w.push(b'{');
    match program {
        Some(p) => dissected_keys(w, &mut first, p, e, d, scratch, placed),
        None => bare_keys(w, &mut first, e),
    }
    if e.kind == Kind::Reassembled {
        key(w, &mut first, "fragment_frames");
        int_list(w, e.fragment_frames);
    }
    key(w, &mut first, "frame");
    int(w, e.frame);
    if let Some(n) = note {
        key(w, &mut first, "note");
        string(w, n);
    }
    let (ptype, sequence) = match program {
        Some(_) => (d.packet_type, d.sequence),
        None => (e.packet_type, e.sequence),
    };
    key(w, &mut first, "packet_type");
    opt_int(w, ptype);
    key(w, &mut first, "sequence");
    opt_int(w, sequence);
    if let Some(v) = crate::print::datagram_verdict(scratch.acks.as_deref(), e) {
        key(w, &mut first, "sequence_acks");
        sequence_acks(w, v);
    }
    key(w, &mut first, "size");
    int(w, e.size);
    key(w, &mut first, "src");
    socket(w, e.flow.map(|f| f.src));
    key(w, &mut first, "status");
    w.push(b'"');
    w.extend_from_slice(e.status.code().as_bytes());
    w.push(b'"');
    if let Some(p) = program
        && !e.stream_events().is_empty()
    {
        key(w, &mut first, "streams");
        stream_verdicts(w, p, e, scratch.acks.as_deref());
    }
    key(w, &mut first, "ts_ns");
    int(w, e.ts_ns);
    if let Some(p) = program {
        key(w, &mut first, "type_name");
        match ptype.and_then(|t| p.type_name(t)) {
            Some(n) => string(w, n),
            None => w.extend_from_slice(b"null"),
        }
    }
    w.push(b'}');
}

/// What the ack analysis said of the datagram's own sequence, with the keys of a
/// message's in `streams[]`: `acked`, `naked`, `retransmission`, `rtt_ms`, `spurious`.
fn sequence_acks(w: &mut Vec<u8>, v: gpcap_engine::ack_facts::CopyVerdict) {
    let mut first = true;
    w.push(b'{');
    if let Some(fate) = v.fate {
        key(w, &mut first, "acked");
        w.extend_from_slice(if fate == Settled::NEVER { b"false" } else { b"true" });
    }
    naked_resent_rtt(w, &mut first, v);
    if v.copy == Some(true) {
        key(w, &mut first, "spurious");
        w.extend_from_slice(b"true");
    }
    w.push(b'}');
}

/// A copy's `naked`, `retransmission` (present when true) and `rtt_ms`: the ack keys
/// that sort together in both `sequence_acks` and `streams[]`.
fn naked_resent_rtt(w: &mut Vec<u8>, first: &mut bool, v: gpcap_engine::ack_facts::CopyVerdict) {
    if v.naked {
        key(w, first, "naked");
        w.extend_from_slice(b"true");
    }
    if v.copy.is_some() {
        key(w, first, "retransmission");
        w.extend_from_slice(b"true");
    }
    if let Some(us) = v.fate.filter(|&us| Settled::is_rtt(us)) {
        key(w, first, "rtt_ms");
        w.extend_from_slice(crate::print::millis(us).as_bytes());
    }
}

/// Each message's verdict in its stream, in message order: `message` (its index in the
/// datagram), `stream`, `key`, `sequence`, `verdict` (`new`, `gap` with `gap` the
/// sequences skipped just before it, `late`, `dup`); in an acked stream, after the ack
/// analysis' pass, `acked` (false: never acked; absent: not settled when the capture
/// ended), `rtt_ms` (acked after that long), `naked`, `retransmission` and `spurious`
/// (present when true).
fn stream_verdicts(w: &mut Vec<u8>, p: &Program, e: &PacketEvent, acks: Option<&AckFacts>) {
    use gpcap_engine::seq::SeqEvent;
    w.push(b'[');
    for (i, s) in e.stream_events().iter().enumerate() {
        if i > 0 {
            w.push(b',');
        }
        let def = p.params.streams.get(s.stream as usize);
        let said = crate::print::message_verdict(acks, e, s);
        let mut first = true;
        w.push(b'{');
        if let Some(fate) = said.and_then(|v| v.fate) {
            key(w, &mut first, "acked");
            w.extend_from_slice(if fate == Settled::NEVER { b"false" } else { b"true" });
        }
        if let SeqEvent::New { gap } = s.event
            && gap > 0
        {
            key(w, &mut first, "gap");
            int(w, gap);
        }
        key(w, &mut first, "key");
        string(
            w,
            &def.map(|d| gpcap_engine::streams::key_text(d, s.key))
                .unwrap_or_default(),
        );
        key(w, &mut first, "message");
        int(w, s.message);
        let v = said.unwrap_or_default();
        naked_resent_rtt(w, &mut first, v);
        key(w, &mut first, "sequence");
        int(w, s.sequence);
        if v.copy == Some(true) {
            key(w, &mut first, "spurious");
            w.extend_from_slice(b"true");
        }
        key(w, &mut first, "stream");
        string(w, def.map_or("", |d| d.name.as_str()));
        key(w, &mut first, "verdict");
        string(w, crate::print::verdict_word(s.event));
        w.push(b'}');
    }
    w.push(b']');
}

/// The keys up to `fragment` of a packet read with a definition: acks, where an inner
/// layer's packet lies, the checksum, the fault with its bit, the field tree.
fn dissected_keys(
    w: &mut Vec<u8>,
    first: &mut bool,
    p: &Program,
    e: &PacketEvent,
    d: &Dissection,
    scratch: &mut JsonScratch,
    placed: Placed,
) {
    if let Some(ack) = d.ack {
        key(w, first, "ack");
        int(w, ack);
    }
    if let Some(bits) = d.ack_bits {
        key(w, first, "ack_bits");
        int(w, bits);
    }
    if let Some(at) = placed {
        key(w, first, "at_bit");
        opt_int(w, at.in_datagram());
    }
    key(w, first, "crc_ok");
    opt_bool(w, e.crc.map(|c| c == CrcStatus::Ok));
    key(w, first, "dst");
    socket(w, e.flow.map(|f| f.dst));
    key(w, first, "fault");
    match &d.fault {
        Some(f) => {
            let shift = placed.map_or(0, |a| a.bit);
            w.extend_from_slice(b"{\"bit\":");
            int(w, f.bit + shift);
            w.extend_from_slice(b",\"field\":");
            string(w, &f.field);
            w.extend_from_slice(b",\"kind\":\"");
            w.extend_from_slice(f.kind.code().as_bytes());
            w.extend_from_slice(b"\",\"reason\":");
            string(w, &f.reason);
            w.push(b'}');
        }
        None => w.extend_from_slice(b"null"),
    }
    key(w, first, "fields");
    let inside = Inside {
        carried: e.carried,
        at: placed.unwrap_or(Anchor::DATAGRAM),
    };
    fields_in(w, p, d, e.payload, scratch, &inside);
    key(w, first, "fragment");
    fragment(w, d.fragment);
}

/// The keys up to `fragment` of a packet without a definition: the fault's kind alone,
/// no fields.
fn bare_keys(w: &mut Vec<u8>, first: &mut bool, e: &PacketEvent) {
    key(w, first, "crc_ok");
    opt_bool(w, e.crc.map(|c| c == CrcStatus::Ok));
    key(w, first, "dst");
    socket(w, e.flow.map(|f| f.dst));
    key(w, first, "fault");
    match e.fault {
        Some(f) => {
            w.extend_from_slice(b"{\"kind\":\"");
            w.extend_from_slice(f.code().as_bytes());
            w.extend_from_slice(b"\"}");
        }
        None => w.extend_from_slice(b"null"),
    }
    key(w, first, "fields");
    w.extend_from_slice(b"[]");
    key(w, first, "fragment");
    fragment(w, e.fragment);
}

/// `[a,b,c]`.
fn int_list(w: &mut Vec<u8>, xs: &[u64]) {
    w.push(b'[');
    for (i, f) in xs.iter().enumerate() {
        if i > 0 {
            w.push(b',');
        }
        int(w, *f);
    }
    w.push(b']');
}

/// `"a.b.c.d:port"` (IPv6 through its `Display`).
fn socket(w: &mut Vec<u8>, a: Option<std::net::SocketAddr>) {
    match a {
        Some(std::net::SocketAddr::V4(a)) => {
            w.push(b'"');
            for (i, o) in a.ip().octets().into_iter().enumerate() {
                if i > 0 {
                    w.push(b'.');
                }
                int(w, o);
            }
            w.push(b':');
            int(w, a.port());
            w.push(b'"');
        }
        Some(a) => {
            let _ = write!(w, "\"{a}\"");
        }
        None => w.extend_from_slice(b"null"),
    }
}

/// What a tree's fields carry, and where the tree's first bit is (in the captured
/// datagram, or inside a packet an inner layer reassembled): its fields' bit offsets
/// are written from there.
#[derive(Clone, Copy)]
pub(crate) struct Inside<'a> {
    pub carried: &'a [Carried],
    pub at: Anchor,
}

/// The field tree as a JSON array: roots, then each field's children, in pre-order.
pub fn fields(w: &mut Vec<u8>, p: &Program, d: &Dissection, data: &[u8], s: &mut JsonScratch) {
    let outer = Inside {
        carried: &[],
        at: Anchor::DATAGRAM,
    };
    fields_in(w, p, d, data, s, &outer)
}

/// [`fields`], with what inner layers read nested under the fields that carried it.
pub(crate) fn fields_in(
    w: &mut Vec<u8>,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    s: &mut JsonScratch,
    inside: &Inside,
) {
    s.path.clear();
    w.push(b'[');
    let mut i = 0;
    while i < d.fields.len() {
        if i > 0 {
            w.push(b',');
        }
        i = field(w, p, d, data, s, i, inside);
    }
    w.push(b']');
}

/// Field `i` and its subtree (the fields after it whose parent it is, and theirs: the
/// pre-order the model keeps); where the next field after its subtree is.
fn field(
    w: &mut Vec<u8>,
    p: &Program,
    d: &Dissection,
    data: &[u8],
    s: &mut JsonScratch,
    i: usize,
    inside: &Inside,
) -> usize {
    let f = &d.fields[i];
    let mark = s.path.len();
    match f.label {
        Label::Index(k) => {
            s.path.push(b'[');
            int(&mut s.path, k);
            s.path.push(b']');
        }
        Label::Part(name) => {
            if mark > 0 {
                s.path.push(b'.');
            }
            escaped(&mut s.path, name);
        }
        Label::Node(n) => {
            if mark > 0 {
                s.path.push(b'.');
            }
            match s.names.node(p, n) {
                Some(b) => s.path.extend_from_slice(&b.name),
                None => s.path.push(b'?'),
            }
        }
    }
    w.extend_from_slice(b"{\"bit_len\":");
    int(w, f.bit_len);
    w.extend_from_slice(b",\"bit_offset\":");
    int(w, f.bit_offset + inside.at.bit);
    if inside.carried.iter().any(|c| c.carrier == (f.node, f.bit_offset)) {
        carried(w, f, inside);
    }
    // The doc of the node itself (not of an element or a part of it).
    let own = matches!(f.label, Label::Node(n) if n == f.node);
    let decimals = s.names.node(p, f.node).and_then(|b| {
        if let (true, Some(doc)) = (own, &b.doc) {
            w.extend_from_slice(doc);
        }
        b.decimals
    });
    if let Some(name) = enum_name(p, f) {
        w.extend_from_slice(b",\"enum\":");
        string(w, name.split(" (").next().unwrap_or(name));
    }
    let child = |k: usize| d.fields.get(k).is_some_and(|c| c.parent as usize == i);
    let mut k = i + 1;
    if child(k) {
        w.extend_from_slice(b",\"fields\":[");
        loop {
            k = field(w, p, d, data, s, k, inside);
            if !child(k) {
                break;
            }
            w.push(b',');
        }
        w.push(b']');
    }
    // Kinds are the dissector's own words: nothing to escape.
    debug_assert!(plain(f.kind), "{}", f.kind);
    w.extend_from_slice(b",\"kind\":\"");
    w.extend_from_slice(f.kind.as_bytes());
    w.push(b'"');
    w.extend_from_slice(b",\"path\":\"");
    w.extend_from_slice(&s.path);
    w.push(b'"');
    if !f.is_group() && f.bit_len <= 64 {
        w.extend_from_slice(b",\"raw\":");
        int(w, f.raw);
    }
    value(w, f, data, decimals, &mut s.floats);
    s.path.truncate(mark);
    w.push(b'}');
    k
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

/// `,"value":…`; nothing for a group, or a float that is not a number (as a null value
/// always was). `decimals`: the field's resolution (`float_decimals`).
fn value(w: &mut Vec<u8>, f: &Field, data: &[u8], decimals: Option<usize>, m: &mut Floats) {
    match f.value {
        Value::None => {}
        Value::Int(v) => {
            w.extend_from_slice(b",\"value\":");
            int(w, v)
        }
        Value::UInt(v) => {
            w.extend_from_slice(b",\"value\":");
            int(w, v)
        }
        Value::Bool(b) => w.extend_from_slice(if b {
            b",\"value\":true"
        } else {
            b",\"value\":false"
        }),
        Value::Float(x) => {
            let at = w.len();
            w.extend_from_slice(b",\"value\":");
            if !m.write(w, x, decimals) {
                w.truncate(at);
            }
        }
        Value::Double(x) if x.is_finite() => {
            w.extend_from_slice(b",\"value\":");
            let _ = serde_json::to_writer(&mut *w, &x);
        }
        Value::Double(_) => {}
        Value::Vec3(v) => floats(w, &v, decimals, m),
        Value::Quat(q) => floats(w, &q, None, m),
        Value::Bytes { offset, len } => {
            let b = data.get(offset..offset + len).unwrap_or(&[]);
            w.extend_from_slice(b",\"value\":");
            if matches!(f.kind, "string" | "text" | "cstring") {
                string(w, &String::from_utf8_lossy(crate::print::text_bytes(f.kind, b)))
            } else {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                w.reserve(b.len() * 2 + 2);
                w.push(b'"');
                for &x in b {
                    w.extend_from_slice(&[HEX[(x >> 4) as usize], HEX[(x & 15) as usize]]);
                }
                w.push(b'"');
            }
        }
    }
}

/// `,"value":[x,y,…]`, null for a component that is not a number.
fn floats(w: &mut Vec<u8>, xs: &[f32], decimals: Option<usize>, m: &mut Floats) {
    w.extend_from_slice(b",\"value\":[");
    for (k, x) in xs.iter().enumerate() {
        if k > 0 {
            w.push(b',');
        }
        if !m.write(w, *x, decimals) {
            w.extend_from_slice(b"null");
        }
    }
    w.push(b']');
}

/// `"carried":{"reliable":[…]}`: the packets of each layer this field carried, in the
/// order the layer read them, each as a packet object of its own.
fn carried(w: &mut Vec<u8>, f: &Field, inside: &Inside) {
    let here: Vec<&Carried> = (inside.carried.iter())
        .filter(|c| c.carrier == (f.node, f.bit_offset))
        .collect();
    w.extend_from_slice(b",\"carried\":{");
    let mut names: Vec<&str> = Vec::new();
    for c in &here {
        if !names.contains(&c.name()) {
            names.push(c.name());
        }
    }
    let mut scratch = JsonScratch::default();
    for (k, name) in names.iter().enumerate() {
        if k > 0 {
            w.push(b',');
        }
        string(w, name);
        w.extend_from_slice(b":[");
        for (j, c) in here.iter().filter(|c| c.name() == *name).enumerate() {
            if j > 0 {
                w.push(b',');
            }
            let e = c.event();
            let empty = Dissection::default();
            let note = crate::print::note(&e);
            let d = e.dissection.unwrap_or(&empty);
            let at = c.place(inside.at);
            packet(w, Some(&c.layer), &e, d, note.as_deref(), &mut scratch, Some(at));
        }
        w.push(b']');
    }
    w.push(b'}');
}

#[cfg(test)]
mod tests;
