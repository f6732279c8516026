//! A compiled program as Lua tables, for the runtime's interpreter: its nodes, blocks and
//! expressions, its packet types and their Info templates, and the protocol's parameters.
//! Every construct is written out by name or refused by name: the language grows (new
//! kinds, roles, parameters), and what this file does not know must fail loudly here,
//! never be dropped from the dissector.

use super::lua;
use super::refusal::Refusal;
use gpcap_dissect::expr::{BinOp, Op};
use gpcap_dissect::program::{
    Block, Checksum, ChecksumAlgorithm, Count, Expr, Kind, MessagesEnd, Msb, Node, NodeId, Params, Program,
};
use std::collections::HashMap;
use std::fmt::Write;

/// The roles the runtime reads or may ignore (acks beyond one sequence are analysis:
/// their fields are shown as they are); the others are refused by name.
const ROLES: [&str; 22] = [
    "crc",
    "sequence",
    "type",
    "fragment-id",
    "fragment-count",
    "fragment-data",
    "ack",
    "ack-bits",
    "protocol-id",
    "fragment-offset",
    "fragment-total",
    "send-time",
    "ack-time",
    "ack-below",
    "ack-upto",
    "ack-range-start",
    "ack-range-end",
    "nak-range-start",
    "nak-range-end",
    "fragment-remaining",
    "fragment-first",
    "fragment-last",
];

/// The kinds the runtime reads, by the name the definition gives them (a leaf read most
/// significant bit first goes by its primitive's name).
const KINDS: [&str; 32] = [
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
    "be-int",
    "le-int",
    "varint",
    "zigzag",
    "text",
    "cstring",
    "struct",
    "inline",
    "array",
    "list",
    "relative-list",
    "if",
    "messages",
];

/// Blocks and expressions numbered as they are met.
#[derive(Default)]
struct Ids {
    blocks: HashMap<(u32, u32), usize>,
    exprs: HashMap<(u32, u32), usize>,
}

impl Ids {
    fn block(&mut self, b: Block) -> usize {
        let n = self.blocks.len();
        *self.blocks.entry((b.start, b.len)).or_insert(n)
    }

    fn expr(&mut self, e: Expr) -> usize {
        let n = self.exprs.len();
        *self.exprs.entry((e.start, e.len)).or_insert(n)
    }
}

/// Writes layer `p`'s tables into `out` as assignments to the Lua table `L`.
pub fn write(out: &mut String, p: &Program) -> Result<(), Refusal> {
    // Every part of the program, named: a field added to the language fails to compile
    // here until it is written out or refused.
    let Program {
        params,
        nodes,
        children: _,
        code: _,
        header,
        fragment,
        fragment_when,
        fragment_type,
        roles: _,
        spaces: _,
        sequence_bits: _,
        packets,
        by_type: _,
        enums: _,
        slot_count: _,
        limits,
        messages,
        datagram_type,
        kinds,
        message_base,
        // A header without a sequence is a validation matter, not a field to show.
        sequence_optional: _,
        plan: _,
        native: _,
    } = p;
    let mut ids = Ids::default();
    // Datagram kinds beside messages: the header's type names the kind, whose body reads
    // the messages where it says; message types are numbered from `mbase`.
    let _ = writeln!(out, "L.kinds = {kinds}\nL.mbase = {message_base}");
    params_table(out, params)?;
    let _ = writeln!(out, "L.header = {}", ids.block(*header));
    if let Some(f) = fragment {
        let _ = writeln!(out, "L.fragment = {}", ids.block(*f));
    }
    if let Some(e) = fragment_when {
        let _ = writeln!(out, "L.fwhen = {}", ids.expr(*e));
    }
    let _ = writeln!(out, "L.ftype = {fragment_type}");
    if let Some(m) = messages {
        let _ = writeln!(out, "L.messages = {m}");
    }
    if let Some(t) = datagram_type {
        let _ = writeln!(out, "L.dtype = {t}");
    }
    if let Some(end) = &params.messages_end {
        let (which, e) = match end {
            MessagesEnd::Count(e) => ("count", e),
            MessagesEnd::Length(e) => ("length", e),
        };
        let _ = writeln!(out, "L.mend = {{ \"{which}\", {} }}", ids.expr(*e));
    }
    let _ = writeln!(
        out,
        "L.lim = {{ fields = {}, elements = {} }}",
        limits.max_fields,
        limits.max_elements.min(1 << 52)
    );
    let type_node = nodes.iter().find(|n| n.role.map(|r| r.name()) == Some("type"));
    if let Some(n) = type_node {
        let _ = writeln!(out, "L.type_node = {}", lua::string(&n.name));
    }
    let _ = writeln!(out, "L.npackets = {}", packets.len());
    enums_table(out, p);
    // Nodes in chunks, each its own function: Lua keeps at most 2^18 constants a function.
    for (k, chunk) in nodes.chunks(2000).enumerate() {
        let _ = writeln!(out, "(function(N)");
        for (j, n) in chunk.iter().enumerate() {
            let id = (k * 2000 + j) as NodeId;
            let _ = writeln!(out, "N[{id}] = {}", node(p, n, &mut ids)?);
        }
        let _ = writeln!(out, "end)(L.N)");
    }
    let _ = writeln!(out, "L.packets = {{");
    for d in packets {
        let info = match &d.info {
            Some(t) => format!(", info = {}", super::info::pieces(p, d, t)),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "    [{}] = {{ name = {}, body = {}, message = {}{info} }},",
            d.type_id,
            lua::string(&d.name),
            ids.block(d.body),
            d.message
        );
    }
    let _ = writeln!(out, "}}");
    let msg_info = packets.iter().any(|d| d.message && d.info.is_some());
    let _ = writeln!(out, "L.msg_info = {msg_info}");
    blocks_table(out, p, &mut ids);
    exprs_table(out, p, &ids)
}

fn params_table(out: &mut String, params: &Params) -> Result<(), Refusal> {
    let Params {
        name,
        protocol_id,
        ports,
        checksum,
        end_check,
        format,
        msb,
        rule,
        remembered,
        // Send times and sequence spaces are analysis, not dissection; streams place
        // count-down and flagged fragments.
        streams,
        message_fragments,
        max_message_size,
        send_time: _,
        remaining,
        messages_end: _,
        encryption,
        dissect_as: _,
        plaintext: _,
        // Acks are analysis: each ack field is shown as the field it is.
        datagram_acks: _,
        ack_width: _,
    } = params;
    let _ = writeln!(out, "L.name = {}", lua::string(name));
    let ports: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
    let _ = writeln!(out, "L.ports = {{ {} }}", ports.join(", "));
    let checksum = match checksum {
        Checksum::Crc32 => "crc32",
        Checksum::None => "none",
        Checksum::Field => "field",
    };
    let _ = writeln!(out, "L.checksum = \"{checksum}\"");
    if encryption.is_some() {
        // gpcap reads an encrypted layer with the id its first connection request carries.
        let _ = writeln!(out, "L.encrypted = true");
    }
    if let Some(id) = protocol_id {
        let _ = writeln!(
            out,
            "L.id = {{ {}, {}, {} }}",
            id.width,
            id.value & 0xffff_ffff,
            id.value >> 32
        );
    }
    if let Some(m) = end_check {
        let _ = writeln!(out, "L.end_check = {m}");
    }
    let _ = writeln!(
        out,
        "L.fsize = {}\nL.maxfrag = {}\nL.cm1 = {}\nL.msb = {msb}\nL.remaining = {remaining}\nL.maxmsg = {max_message_size}",
        format.fragment_size,
        format.max_fragments,
        format.count_encoding == gpcap_wire::validate::CountEncoding::CountMinusOne,
    );
    if let Some(r) = rule {
        let alg = match r.algorithm {
            ChecksumAlgorithm::Crc32 => "crc32",
            ChecksumAlgorithm::Crc32c => "crc32c",
            ChecksumAlgorithm::Adler32 => "adler32",
        };
        let stand_in = r.stand_in.map_or("nil".into(), |i| (i + 1).to_string());
        let _ = writeln!(
            out,
            "L.rule = {{ alg = \"{alg}\", prefix = {}, stand_in = {stand_in} }}",
            r.prefix
        );
    }
    let names: Vec<String> = remembered.iter().map(|n| lua::string(n)).collect();
    let _ = writeln!(out, "L.remembered = {{ {} }}", names.join(", "));
    streams_table(out, name, streams, message_fragments)?;
    let _ = writeln!(out, "L.msgfrag = {{");
    for f in message_fragments {
        let key: Vec<String> = f.key.iter().map(|(_, s)| s.to_string()).collect();
        let slot = |s: Option<u16>| s.map_or("nil".into(), |s| s.to_string());
        let as_type = f.reassembled_as.map_or("nil".into(), |t| t.to_string());
        let _ = writeln!(
            out,
            "    [{}] = {{ key = {{ {} }}, off = {}, tot = {}, rem = {}, first = {}, last = {}, as = {as_type} }},",
            f.type_id,
            key.join(", "),
            slot(f.offset),
            slot(f.total),
            slot(f.remaining),
            slot(f.first),
            slot(f.last)
        );
    }
    let _ = writeln!(out, "}}\nL.msgfrag_any = {}", !message_fragments.is_empty());
    Ok(())
}

/// The message streams (by index): their width and key slots, which place count-down
/// and flagged fragments. Lua numbers hold a placed sequence exactly up to 52 bits.
fn streams_table(
    out: &mut String,
    name: &str,
    streams: &[gpcap_dissect::program::StreamDef],
    frags: &[gpcap_dissect::program::MessageFragmentDef],
) -> Result<(), Refusal> {
    let runs = frags
        .iter()
        .any(|f| f.remaining.is_some() || f.first.is_some() || f.last.is_some());
    if let Some(s) = streams.iter().find(|s| runs && s.bits > 52) {
        return Err(Refusal::new(
            name,
            format!(
                "the stream `{}` ({} bits) placing count-down or flagged fragments",
                s.name, s.bits
            ),
            0,
            "Lua numbers hold a placed sequence exactly up to 52 bits",
        ));
    }
    let _ = writeln!(out, "L.streams = {{");
    for (i, s) in streams.iter().enumerate() {
        let key: Vec<String> = s.key.iter().map(|(_, k)| k.to_string()).collect();
        let _ = writeln!(
            out,
            "    [{i}] = {{ bits = {}, key = {{ {} }} }},",
            s.bits,
            key.join(", ")
        );
    }
    let _ = writeln!(out, "}}");
    Ok(())
}

fn enums_table(out: &mut String, p: &Program) {
    let _ = writeln!(out, "L.enums = {{");
    for (i, e) in p.enums.iter().enumerate() {
        let values: Vec<String> = e
            .values
            .iter()
            .filter(|(v, _)| lua::exact(*v))
            .map(|(v, n)| format!("[{v}] = {}", lua::string(n)))
            .collect();
        let _ = writeln!(out, "    [{i}] = {{ {} }},", values.join(", "));
    }
    let _ = writeln!(out, "}}");
}

fn count(c: &Count, ids: &mut Ids) -> String {
    match c {
        Count::Const(n) => format!("{{ c = {} }}", (*n).min(1 << 53)),
        Count::Expr(e) => format!("{{ e = {} }}", ids.expr(*e)),
    }
}

/// An `int`'s bounds, which Lua numbers must hold exactly.
fn bounds(p: &Program, n: &Node, min: i64, max: i64) -> Result<String, Refusal> {
    if !lua::exact(min) || !lua::exact(max) {
        return Err(Refusal::new(
            &p.params.name,
            format!("`int {} {min} {max}`", n.name),
            n.line,
            "its bounds are beyond ±2^53, which Lua numbers do not hold exactly",
        ));
    }
    Ok(format!("min = {min}, max = {max}"))
}

fn compressed(cf: &gpcap_wire::bits::CompressedFloat) -> String {
    format!(
        "cf = {{ min = {}, delta = {}, maxint = {}, bits = {}, dec = {} }}",
        lua::float(cf.min as f64),
        lua::float((cf.max - cf.min) as f64),
        cf.max_int,
        cf.bits,
        cf.decimals()
    )
}

/// One node as a Lua table: its kind's arguments, slot, role, enum, what it remembers.
fn node(p: &Program, n: &Node, ids: &mut Ids) -> Result<String, Refusal> {
    let Node {
        name,
        kind,
        doc: _,
        slot,
        enum_id,
        role,
        type_name: _,
        line,
        remember,
        stream,
    } = n;
    known_kind(&p.params.name, name, *line, kind.name())?;
    let mut s = format!("{{ name = {}", lua::string(name));
    let args = match kind {
        Kind::Bits(b) => format!("kind = \"bits\", w = {b}"),
        Kind::Bool => "kind = \"bool\"".into(),
        Kind::Int { min, max } => format!(
            "kind = \"int\", w = {}, {}",
            gpcap_wire::bits::int_width(*min, *max).unwrap_or(0),
            bounds(p, n, *min, *max)?
        ),
        Kind::Uint64 => "kind = \"uint64\"".into(),
        Kind::Float => "kind = \"float\"".into(),
        Kind::Double => "kind = \"double\"".into(),
        Kind::CompressedFloat(cf) => format!("kind = \"compressed-float\", {}", compressed(cf)),
        Kind::Vector => "kind = \"vector\"".into(),
        Kind::CompressedVector(cf) => format!("kind = \"compressed-vector\", {}", compressed(cf)),
        Kind::Quaternion => "kind = \"quaternion\"".into(),
        Kind::SmallestThree(b) => format!("kind = \"smallest-three\", w = {b}"),
        Kind::Align => "kind = \"align\"".into(),
        Kind::Bytes(c) => format!("kind = \"bytes\", count = {}", count(c, ids)),
        Kind::String { max } => format!("kind = \"string\", max = {max}"),
        Kind::Check { magic } => format!("kind = \"check\", magic = {magic}"),
        Kind::Magic(bytes) => format!("kind = \"magic\", bytes = {}", lua::bytes(bytes)),
        Kind::Rest { body } => format!("kind = \"rest\", body = {}", ids.block(*body)),
        Kind::Derived(e) => format!("kind = \"derived\", e = {}", ids.expr(*e)),
        Kind::LeUint(c) => format!("kind = \"le-uint\", count = {}", count(c, ids)),
        Kind::Msb(m) => {
            let extra = match m {
                Msb::Int { min, max } => format!(", {}", bounds(p, n, *min, *max)?),
                _ => String::new(),
            };
            format!(
                "kind = \"msb\", m = {{ t = \"{}\", w = {}{extra} }}",
                m.name(),
                m.width()
            )
        }
        Kind::ByteInt {
            count: c,
            big,
            signed,
        } => format!(
            "kind = \"byteint\", word = \"{}\", big = {big}, signed = {signed}, count = {}",
            kind.name(),
            count(c, ids)
        ),
        Kind::Varint { zigzag } => format!("kind = \"{}\"", if *zigzag { "zigzag" } else { "varint" }),
        Kind::Text { len } => format!("kind = \"text\", count = {}", count(len, ids)),
        Kind::CString { max } => format!("kind = \"cstring\", max = {max}"),
        Kind::Struct { body } => format!("kind = \"struct\", body = {}", ids.block(*body)),
        Kind::Inline { body } => format!("kind = \"inline\", body = {}", ids.block(*body)),
        Kind::Array { count: c, body } => format!(
            "kind = \"array\", count = {}, body = {}",
            count(c, ids),
            ids.block(*body)
        ),
        Kind::List { end, body } => format!(
            "kind = \"list\", e = {}, body = {}",
            ids.expr(*end),
            ids.block(*body)
        ),
        Kind::RelativeList { max, body } => {
            if !lua::exact(*max) {
                return Err(Refusal::new(
                    &p.params.name,
                    format!("`relative-list {name} {max}`"),
                    *line,
                    "its end index is beyond 2^53",
                ));
            }
            format!(
                "kind = \"relative-list\", max = {max}, body = {}",
                ids.block(*body)
            )
        }
        Kind::If {
            cond,
            then,
            otherwise,
        } => format!(
            "kind = \"if\", e = {}, body = {}, other = {}",
            ids.expr(*cond),
            ids.block(*then),
            ids.block(*otherwise)
        ),
        Kind::Messages { header } => format!("kind = \"messages\", body = {}", ids.block(*header)),
    };
    let _ = write!(s, ", {args}");
    if let Some(sl) = slot {
        let _ = write!(s, ", slot = {sl}");
    }
    if let Some(r) = role {
        known_role(&p.params.name, name, *line, r.name())?;
        let _ = write!(s, ", role = \"{}\"", r.name());
    }
    if let Some(e) = enum_id {
        let _ = write!(s, ", enum = {e}");
    }
    if let Some(i) = remember {
        let _ = write!(s, ", remember = {}", i + 1);
    }
    if let Some(si) = stream {
        let _ = write!(s, ", stream = {si}");
    }
    s.push_str(" }");
    Ok(s)
}

/// A role the runtime reads, or its refusal by name.
fn known_role(protocol: &str, field: &str, line: u32, role: &str) -> Result<(), Refusal> {
    if ROLES.contains(&role) {
        return Ok(());
    }
    Err(Refusal::new(
        protocol,
        format!("`role={role}` on `{field}`"),
        line,
        "the generator does not know this role yet",
    ))
}

/// A kind of field the runtime reads, or its refusal by name.
fn known_kind(protocol: &str, field: &str, line: u32, kind: &str) -> Result<(), Refusal> {
    if KINDS.contains(&kind) {
        return Ok(());
    }
    Err(Refusal::new(
        protocol,
        format!("`{kind} {field}`"),
        line,
        "the generator does not know this kind of field yet",
    ))
}

fn blocks_table(out: &mut String, p: &Program, ids: &mut Ids) {
    let mut all: Vec<((u32, u32), usize)> = ids.blocks.iter().map(|(k, v)| (*k, *v)).collect();
    all.sort_by_key(|(_, v)| *v);
    let _ = writeln!(out, "L.B = {{");
    for ((start, len), id) in all {
        let list: Vec<String> = p
            .block(Block { start, len })
            .iter()
            .map(|n| n.to_string())
            .collect();
        let _ = writeln!(out, "    [{id}] = {{ {} }},", list.join(", "));
    }
    let _ = writeln!(out, "}}");
}

/// Expressions as postfix code (the runtime's `eval` numbers the operators).
fn exprs_table(out: &mut String, p: &Program, ids: &Ids) -> Result<(), Refusal> {
    let mut all: Vec<((u32, u32), usize)> = ids.exprs.iter().map(|(k, v)| (*k, *v)).collect();
    if let Some(e) = p.params.rule.as_ref().and_then(|r| r.when) {
        all.push(((e.start, e.len), usize::MAX));
    }
    all.sort_by_key(|(_, v)| *v);
    let _ = writeln!(out, "L.E = {{");
    let mut when = None;
    for ((start, len), id) in all {
        let ops: Vec<String> = p.expr(Expr { start, len }).iter().map(op).collect();
        if id == usize::MAX {
            when = Some(ops.join(", "));
            continue;
        }
        let _ = writeln!(out, "    [{id}] = {{ {} }},", ops.join(", "));
    }
    let _ = writeln!(out, "}}");
    if let Some(code) = when {
        let _ = writeln!(out, "L.E.when = {{ {code} }}\nL.rule.when = \"when\"");
    }
    Ok(())
}

fn op(o: &Op) -> String {
    match o {
        Op::Const(v) if lua::exact(*v) => format!("1, {v}"),
        Op::Const(v) => format!("1, {{ {}, {} }}", *v as u64 & 0xffff_ffff, (*v as u64) >> 32),
        Op::Slot(s) => format!("2, {s}"),
        Op::Remaining(false) => "3".into(),
        Op::Remaining(true) => "4".into(),
        Op::Not => "5".into(),
        Op::Neg => "6".into(),
        Op::BitNot => "7".into(),
        Op::Bin(b) => match b {
            BinOp::Mul => "10",
            BinOp::Div => "11",
            BinOp::Rem => "12",
            BinOp::Add => "13",
            BinOp::Sub => "14",
            BinOp::Shl => "15",
            BinOp::Shr => "16",
            BinOp::BitAnd => "17",
            BinOp::BitXor => "18",
            BinOp::BitOr => "19",
            BinOp::Lt => "20",
            BinOp::Le => "21",
            BinOp::Gt => "22",
            BinOp::Ge => "23",
            BinOp::Eq => "24",
            BinOp::Ne => "25",
            BinOp::And => "26",
            BinOp::Or => "27",
        }
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_or_kind_the_runtime_does_not_read_is_refused_by_name() {
        let e = known_role("game", "window", 7, "ack-window").unwrap_err();
        assert_eq!(
            e.to_string(),
            "game: `role=ack-window` on `window` (definition line 7) cannot be written as a Wireshark Lua dissector: the generator does not know this role yet"
        );
        let e = known_kind("game", "blob", 9, "compressed-blob").unwrap_err();
        assert_eq!(
            e.to_string(),
            "game: `compressed-blob blob` (definition line 9) cannot be written as a Wireshark Lua dissector: the generator does not know this kind of field yet"
        );
        assert!(known_role("game", "seq", 1, "sequence").is_ok());
        assert!(known_kind("game", "a", 1, "zigzag").is_ok());
    }
}
