//! The `protocol` block: its parameters (id, header format, sequence spaces,
//! fragments, encryption…) and its `checksum` rule.

use super::*;

impl<'d> Compiler<'d> {
    pub(super) fn protocol(&mut self, p: &'d KdlNode, params: &mut Params, spaces: &mut Vec<SequenceSpace>) {
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
                "id" | "protocol-id" => self.protocol_id_param(n, first, params),
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
                    if let Some(v) = self.bounded(
                        n,
                        "the number of packet types",
                        1..=65536,
                        "packet types must be 1..=65536",
                    ) {
                        params.format.num_types = v;
                    }
                }
                "end-check" => self.end_check_param(n, first, params),
                "fragment-size" => {
                    if let Some(v) = self.bounded(
                        n,
                        "the fragment size in bytes",
                        1..=65535,
                        "fragment size must be 1..=65535 bytes",
                    ) {
                        params.format.fragment_size = v;
                    }
                }
                "max-fragments" => {
                    if let Some(v) = self.bounded(
                        n,
                        "the maximum number of fragments",
                        1..=256,
                        "max-fragments must be 1..=256",
                    ) {
                        params.format.max_fragments = v;
                    }
                }
                "fragment-count" => self.fragment_count_param(n, first, params),
                "max-message-size" => {
                    if let Some(v) = self.bounded(
                        n,
                        "the largest reassembled message in bytes",
                        1..=1 << 30,
                        "max-message-size must be 1..=1073741824 bytes",
                    ) {
                        params.max_message_size = v;
                    }
                }
                "mtu-budget" => {
                    if let Some(v) = self.bounded(
                        n,
                        "the MTU budget in bytes",
                        1..=65507,
                        "mtu-budget must be 1..=65507 bytes",
                    ) {
                        params.format.mtu_budget = v;
                    }
                }
                "doc" => {}
                "bit-order" | "byte-order" => self.order_param(n, key, first, params),
                "sequence-space" => self.sequence_space(n, spaces),
                other => self.unknown_param(n, other),
            }
        }
    }

    /// The node's first argument, an integer in `range` (else `message` at it).
    fn bounded(
        &mut self,
        n: &KdlNode,
        what: &str,
        range: std::ops::RangeInclusive<i64>,
        message: &str,
    ) -> Option<u32> {
        let v = self.arg_int(n, 0, what)?;
        if range.contains(&v) {
            Some(v as u32)
        } else {
            self.error(positional(n)[0].span(), message, "", None);
            None
        }
    }

    /// `id 0x…` (`bits=64` for a 64-bit id).
    fn protocol_id_param(&mut self, n: &KdlNode, first: Option<&KdlEntry>, params: &mut Params) {
        match first.map(|e| e.value()) {
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
        }
    }

    /// `end-check "NAME"`, a 32-bit magic, or `#null`.
    fn end_check_param(&mut self, n: &KdlNode, first: Option<&KdlEntry>, params: &mut Params) {
        match first.map(|e| e.value()) {
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
        }
    }

    /// `fragment-count "count"` or `"count-1"`: how a fragment's count is written.
    fn fragment_count_param(&mut self, n: &KdlNode, first: Option<&KdlEntry>, params: &mut Params) {
        match first.and_then(|e| e.value().as_string()) {
            Some("count") => params.format.count_encoding = CountEncoding::Count,
            Some("count-1") | Some("count-minus-one") => {
                params.format.count_encoding = CountEncoding::CountMinusOne
            }
            _ => self.error(
                first.map(|e| e.span()).unwrap_or(Self::name_span(n)),
                "fragment-count is \"count\" or \"count-1\"",
                "encoding",
                Some(
                    "\"count\" writes the count itself (the article); \"count-1\" lets 256 fit in 8 bits"
                        .into(),
                ),
            ),
        }
    }

    /// `bit-order` / `byte-order`: "msb" ("big") or "lsb" ("little").
    fn order_param(&mut self, n: &KdlNode, key: &str, first: Option<&KdlEntry>, params: &mut Params) {
        match first.and_then(|e| e.value().as_string()) {
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
        }
    }

    /// `sequence-space NAME [per="flow"|"sender"]`: at most 16, each named once.
    fn sequence_space(&mut self, n: &KdlNode, spaces: &mut Vec<SequenceSpace>) {
        self.check_props(n, &["per", "doc"]);
        let Some(name) = self.arg_str(n, 0, "the space's name") else {
            return;
        };
        let per_sender = match prop(n, "per").map(|e| (e, e.value().as_string())) {
            None | Some((_, Some("flow"))) => false,
            Some((_, Some("sender"))) => true,
            Some((e, _)) => {
                self.error(
                    e.span(),
                    "`per` is \"flow\" or \"sender\"",
                    "",
                    Some("\"sender\": one counter for every flow from the same address and port".into()),
                );
                false
            }
        };
        if spaces.iter().any(|s| s.name == name) {
            self.error(
                positional(n)[0].span(),
                format!("sequence space `{name}` is declared twice"),
                "",
                None,
            );
        } else if spaces.len() >= 16 {
            self.error(positional(n)[0].span(), "at most 16 sequence spaces", "", None);
        } else {
            spaces.push(SequenceSpace { name, per_sender });
        }
    }

    /// An unknown protocol parameter, with the nearest known one.
    fn unknown_param(&mut self, n: &KdlNode, other: &str) {
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
        self.error(
            Self::name_span(n),
            format!("unknown protocol parameter `{other}`"),
            "",
            Some(hint),
        );
    }

    /// `checksum "ALGORITHM" [field=NAME] [prefix="id"|"none"] [stand-in=NAME]
    /// [stand-in-when=EXPR]`. Alone, `"crc32"` is the articles' scheme.
    fn checksum(&mut self, n: &'d KdlNode, params: &mut Params) {
        use crate::program::{ChecksumAlgorithm, ChecksumRule};
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

    /// The articles' CRC covers the datagram's first four bytes: its field must be the
    /// header's first. A declared checksum's `field=` must name the role=crc field.
    pub(super) fn checksum_position(&mut self, header: Block, params: &Params) -> bool {
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
        if let Some(bit) = self.bit_in_header(header, crc).filter(|b| b % 8 != 0) {
            self.error(
                self.spans[crc as usize],
                format!("the checksum field `{name}` starts at bit {bit} of the header: a declared checksum's field is whole bytes, replaced while computing"),
                "role=crc",
                Some("move it to a byte boundary, or pad the fields before it to whole bytes".into()),
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

    /// Where `field` starts in the header, when every field before it has a fixed width.
    fn bit_in_header(&self, header: Block, field: NodeId) -> Option<u64> {
        let ids = &self.children[header.start as usize..(header.start + header.len) as usize];
        let mut at = 0u64;
        for &id in ids {
            if id == field {
                return Some(at);
            }
            at += fixed_bits(&self.nodes[id as usize].kind)? as u64;
        }
        None
    }

    /// `stand-in=NAME` names a value some field remembers.
    pub(super) fn resolve_stand_in(&mut self, params: &mut Params) {
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
}

/// The bits a field always reads, when that is fixed.
fn fixed_bits(kind: &Kind) -> Option<u32> {
    let bytes = |c: &Count| match c {
        Count::Const(n) => u32::try_from(*n).ok().map(|n| n.saturating_mul(8)),
        Count::Expr(_) => None,
    };
    match kind.plain() {
        Kind::Bits(n) => Some(n),
        Kind::Bool => Some(1),
        Kind::Int { min, max } => int_width(min, max),
        Kind::Uint64 | Kind::Double => Some(64),
        Kind::Float => Some(32),
        Kind::Vector => Some(96),
        Kind::Quaternion => Some(128),
        Kind::CompressedFloat(cf) => Some(cf.bits),
        Kind::CompressedVector(cf) => Some(3 * cf.bits),
        Kind::Derived(_) => Some(0),
        Kind::LeUint(c) | Kind::Bytes(c) | Kind::Text { len: c } => bytes(&c),
        _ => None,
    }
}
