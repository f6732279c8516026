//! A field's primitive: its keyword (`PRIMITIVES`, which typo hints use), its positional
//! arguments checked in range, and the `Kind` it compiles to; the arguments each takes.

use super::*;

pub(super) const PRIMITIVES: &[&str] = &[
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
    "le-int",
    "be-int",
    "varint",
    "zigzag",
    "text",
    "cstring",
    "array",
    "list",
    "relative-list",
    "if",
    "else",
];

/// What a field node is besides its name: its keyword, and whether it is a struct used
/// inline or the protocol's header read again.
#[derive(Clone, Copy)]
pub(super) struct Shape<'n> {
    pub(super) keyword: &'n str,
    pub(super) inline_struct: bool,
    pub(super) header_reread: bool,
    /// A bare `messages` in a datagram kind's body: the messages are read there.
    pub(super) messages_use: bool,
}

impl<'d> Compiler<'d> {
    /// The field's `Kind` from its keyword and arguments; `allowed` gains the properties
    /// the primitive takes.
    pub(super) fn kind(
        &mut self,
        n: &'d KdlNode,
        s: Shape,
        depth: u32,
        allowed: &mut Vec<&'static str>,
    ) -> Option<Kind> {
        let kind_name = s.keyword;
        let kind = match kind_name {
            "bits" => {
                allowed.extend(["role", "enum"]);
                self.bits_kind(n)?
            }
            "bool" => {
                // A flag's role (a fragment's first or last).
                allowed.push("role");
                Kind::Bool
            }
            "int" => {
                allowed.extend(["role", "enum"]);
                self.int_kind(n)?
            }
            "uint64" => {
                allowed.push("role");
                Kind::Uint64
            }
            "float" => Kind::Float,
            "double" => Kind::Double,
            "compressed-float" | "compressed-vector" => self.compressed_kind(n, kind_name)?,
            "vector" => Kind::Vector,
            "quaternion" => Kind::Quaternion,
            "smallest-three" => self.smallest_three_kind(n)?,
            "align" => Kind::Align,
            "bytes" => {
                // A message's fragment data.
                if self.in_messages {
                    allowed.push("role");
                }
                Kind::Bytes(self.count_within(n, 65_535, "bytes a UDP datagram can hold")?)
            }
            "string" => self.string_kind(n)?,
            "check" => {
                allowed.push("magic");
                self.check_kind(n)?
            }
            "rest" => {
                allowed.extend(["role", "dissect-as"]);
                let body = self.block(n.children(), depth + 1);
                Kind::Rest { body }
            }
            "derived" => {
                allowed.extend(["role", "enum"]);
                self.derived_kind(n)?
            }
            "le-uint" | "be-uint" | "be-int" | "le-int" => {
                allowed.extend(["role", "enum"]);
                self.byte_int_kind(n, kind_name)?
            }
            "varint" | "zigzag" => {
                allowed.extend(["role", "enum"]);
                Kind::Varint {
                    zigzag: kind_name == "zigzag",
                }
            }
            "text" => Kind::Text {
                len: self.count(n, 1)?,
            },
            "cstring" => self.cstring_kind(n)?,
            "header" if s.header_reread => Kind::Struct {
                body: self.header_block.unwrap_or_default(),
            },
            "messages" if s.messages_use => self.messages_use(n)?,
            "array" => {
                let most = Limits::default().max_elements;
                let count = self.count_within(n, most, "elements a packet's array may have")?;
                let body = self.block(n.children(), depth + 1);
                Kind::Array { count, body }
            }
            "list" => {
                allowed.push("end");
                self.list_kind(n, depth)?
            }
            "relative-list" => self.relative_list_kind(n, depth)?,
            "if" => {
                let e = self.arg_entry(n, 0, "a condition")?;
                let cond = self.expression(e)?;
                let then = self.block(n.children(), depth + 1);
                Kind::If {
                    cond,
                    then,
                    otherwise: Block::default(),
                }
            }
            other => self.struct_kind(n, other, s.inline_struct, depth)?,
        };
        Some(kind)
    }

    /// How many positional arguments (the name included) a field of `kind` takes.
    pub(super) fn expected_arguments(n: &KdlNode, kind: &Kind, header_reread: bool) -> usize {
        match kind {
            Kind::Bits(_) | Kind::SmallestThree(_) | Kind::Bytes(_) | Kind::String { .. } => 2,
            Kind::Derived(_) | Kind::LeUint(_) | Kind::ByteInt { .. } => 2,
            Kind::Text { .. } | Kind::CString { .. } => 2,
            Kind::Struct { .. } if header_reread => 0,
            Kind::Messages { .. } => 0,
            Kind::Array { .. } | Kind::RelativeList { .. } => 2,
            Kind::Int { .. } => 3,
            Kind::CompressedFloat(_) | Kind::CompressedVector(_) => 4,
            Kind::Align => 0,
            Kind::Check { .. } | Kind::Magic(_) => usize::from(prop(n, "magic").is_none()),
            Kind::If { .. } => 1,
            Kind::Inline { .. } => 0,
            _ => 1,
        }
    }

    /// `bits NAME WIDTH`: 1 to 32 bits.
    fn bits_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        let b = self.arg_int(n, 1, "the width in bits")?;
        if !(1..=32).contains(&b) {
            self.error(
                positional(n)[1].span(),
                format!("bits width {b} is outside 1..=32"),
                "width",
                Some("use uint64 for 64-bit values".into()),
            );
            return None;
        }
        Some(Kind::Bits(b as u32))
    }

    /// `int NAME MIN MAX`: a range that fits in 32 bits.
    fn int_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        let min = self.arg_int(n, 1, "the minimum")?;
        let max = self.arg_int(n, 2, "the maximum")?;
        if min > max {
            self.error(
                SourceSpan::from(
                    positional(n)[1].span().offset()
                        ..positional(n)[2].span().offset() + positional(n)[2].span().len(),
                ),
                format!("int range has min {min} > max {max}"),
                "min > max",
                Some("write the smaller bound first: `int NAME MIN MAX`".into()),
            );
            return None;
        }
        if int_width(min, max).is_none() {
            self.error(
                positional(n)[2].span(),
                format!("int range {min}..={max} needs more than 32 bits"),
                "range too wide",
                Some(
                    "int(min,max) is sent in bits_required(min,max) ≤ 32 bits; use uint64 or two fields"
                        .into(),
                ),
            );
            return None;
        }
        Some(Kind::Int { min, max })
    }

    /// `compressed-float` / `compressed-vector NAME MIN MAX RESOLUTION`.
    fn compressed_kind(&mut self, n: &'d KdlNode, kind_name: &str) -> Option<Kind> {
        let min = self.arg_f32(n, 1, "the minimum")?;
        let max = self.arg_f32(n, 2, "the maximum")?;
        let res = self.arg_f32(n, 3, "the resolution")?;
        let Some(cf) = CompressedFloat::new(min, max, res) else {
            self.error(
                SourceSpan::from(
                    positional(n)[1].span().offset()
                        ..positional(n)[3].span().offset() + positional(n)[3].span().len(),
                ),
                format!(
                    "compressed float range ({min}, {max}, {res}) is empty, reversed or needs over 32 bits"
                ),
                "bad range",
                Some("need min < max and 0 < resolution, with (max-min)/resolution < 2^32".into()),
            );
            return None;
        };
        Some(if kind_name == "compressed-float" {
            Kind::CompressedFloat(cf)
        } else {
            Kind::CompressedVector(cf)
        })
    }

    /// `smallest-three NAME BITS`: 2 to 10 bits per component.
    fn smallest_three_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        let b = self.arg_int(n, 1, "the bits per component")?;
        if !(2..=10).contains(&b) {
            self.error(
                positional(n)[1].span(),
                format!("smallest-three takes 2..=10 bits per component, not {b}"),
                "bits",
                None,
            );
            return None;
        }
        Some(Kind::SmallestThree(b as u32))
    }

    /// `string NAME MAX`: a length-prefixed string of at most MAX bytes.
    fn string_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        let max = self.arg_int(n, 1, "the maximum length (buffer size)")?;
        if !(1..=1 << 20).contains(&max) {
            self.error(
                positional(n)[1].span(),
                "string max must be 1..=1048576",
                "",
                None,
            );
            return None;
        }
        Some(Kind::String { max: max as u32 })
    }

    /// `check "NAME"` (its hash) or `check magic=0x…`.
    fn check_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        Some(
            match (
                positional(n).first(),
                prop(n, "magic").and_then(|e| e.value().as_integer()),
            ) {
                (_, Some(m)) if (0..=u32::MAX as i128).contains(&m) => Kind::Check { magic: m as u32 },
                (None, None) if prop(n, "magic").is_some_and(|e| e.value().is_string()) => {
                    return self.magic_bytes(n);
                }
                (Some(e), None) if e.value().is_string() => Kind::Check {
                    magic: hash_string(e.value().as_string().unwrap_or("")),
                },
                _ => {
                    self.error(
                        Self::name_span(n),
                        "`check` needs a name to hash or magic=0x…",
                        "",
                        Some("for example `check \"misc body\"`".into()),
                    );
                    return None;
                }
            },
        )
    }

    /// `check magic="HEX"`: 1 to 256 bytes written as hex digits (spaces allowed).
    fn magic_bytes(&mut self, n: &KdlNode) -> Option<Kind> {
        let e = prop(n, "magic")?;
        let text: String = e.value().as_string().unwrap_or("").split_whitespace().collect();
        let digits = text.strip_prefix("0x").unwrap_or(&text);
        let bytes: Option<Vec<u8>> = digits
            .len()
            .is_multiple_of(2)
            .then(|| {
                (0..digits.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
                    .collect()
            })
            .flatten();
        match bytes {
            Some(b) if (1..=256).contains(&b.len()) => Some(Kind::Magic(b.into_boxed_slice())),
            _ => {
                self.error(
                    e.span(),
                    "a magic in quotes is 1 to 256 bytes in hex digits, two a byte",
                    "magic",
                    Some("for example `check magic=\"00ffff00fefefefefdfdfdfd12345678\"`; a 32-bit one may be `magic=0x…`".into()),
                );
                None
            }
        }
    }

    /// `derived NAME "EXPR"`: a value computed, not read.
    fn derived_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        let e = self.arg_entry(n, 1, "the expression that computes it")?;
        if !e.value().is_string() && e.value().as_integer().is_none() {
            self.error(
                e.span(),
                "expected an expression in quotes",
                "",
                Some(usage("derived")),
            );
            return None;
        }
        Some(Kind::Derived(self.expression(e)?))
    }

    /// `le-uint`, `be-uint`, `le-int`, `be-int NAME COUNT`: 1 to 8 whole bytes.
    fn byte_int_kind(&mut self, n: &'d KdlNode, kind_name: &str) -> Option<Kind> {
        let count = self.count(n, 1)?;
        if let Count::Const(c) = count
            && !(1..=8).contains(&c)
        {
            self.error(
                positional(n)[1].span(),
                format!("{kind_name} takes 1 to 8 bytes, not {c}"),
                "byte count",
                Some(usage(kind_name)),
            );
            return None;
        }
        Some(if kind_name == "le-uint" {
            Kind::LeUint(count)
        } else {
            Kind::ByteInt {
                count,
                big: kind_name.starts_with("be"),
                signed: !kind_name.ends_with("uint"),
            }
        })
    }

    /// `cstring NAME MAX`: NUL-terminated, at most MAX bytes with the NUL.
    fn cstring_kind(&mut self, n: &'d KdlNode) -> Option<Kind> {
        let max = self.arg_int(n, 1, "the most bytes, the NUL included")?;
        if !(1..=65535).contains(&max) {
            self.error(
                positional(n)[1].span(),
                "cstring MAX is 1..=65535 bytes",
                "",
                Some(usage("cstring")),
            );
            return None;
        }
        Some(Kind::CString { max: max as u32 })
    }

    /// `list NAME end="EXPR" { … }`: elements until the condition holds.
    fn list_kind(&mut self, n: &'d KdlNode, depth: u32) -> Option<Kind> {
        let Some(end_entry) = prop(n, "end") else {
            self.error(Self::name_span(n), "`list` needs end=\"…\", the condition that ends it", "", Some("for example `list events end=\"kind == 0\" { int kind 0 7 … }`: checked after each element's first field".into()));
            return None;
        };
        // The end condition reads the element's first field, so compile the body first.
        let mark = self.scope.len();
        let body = self.block(n.children(), depth + 1);
        let end = self.expression(end_entry)?;
        self.scope.truncate(mark);
        Some(Kind::List { end, body })
    }

    /// `relative-list NAME MAX { … }`: elements by relative index up to the sentinel.
    fn relative_list_kind(&mut self, n: &'d KdlNode, depth: u32) -> Option<Kind> {
        let max = self.arg_int(n, 1, "the sentinel index (max objects)")?;
        if !(1..=1 << 24).contains(&max) {
            self.error(
                positional(n)[1].span(),
                "relative-list max must be 1..=16777216",
                "",
                None,
            );
            return None;
        }
        let body = self.block(n.children(), depth + 1);
        Some(Kind::RelativeList { max, body })
    }

    /// A struct's name: its body, inline when used without a name; else an unknown
    /// primitive, with the nearest name.
    fn struct_kind(&mut self, n: &'d KdlNode, other: &str, inline_struct: bool, depth: u32) -> Option<Kind> {
        Some(match self.struct_body(other, Self::name_span(n), depth) {
            Some(body) if inline_struct => Kind::Inline { body },
            Some(body) => Kind::Struct { body },
            None if self.structs.contains_key(other) => return None,
            None => {
                let names: Vec<String> = self.structs.keys().cloned().collect();
                let hint = closest(
                    other,
                    PRIMITIVES.iter().copied().chain(names.iter().map(|s| s.as_str())),
                )
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| {
                    "a field is a primitive (bits, int, float, …) or the name of a struct".into()
                });
                self.error(
                    Self::name_span(n),
                    format!("unknown primitive or struct `{other}`"),
                    "unknown type",
                    Some(hint),
                );
                return None;
            }
        })
    }
}
