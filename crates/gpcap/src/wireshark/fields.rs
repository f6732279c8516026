//! One Wireshark `ProtoField` per field path: every path a layer's dissection can show,
//! named as gpcap names it (`article.scene.objects.position.x`: the protocol, the packet
//! type for a body's fields, the path without element indices), with the type its values
//! have. A path several fields share (the branches of an `if`) takes a type that holds
//! them all.

use super::refusal::Refusal;
use gpcap_dissect::program::{Block, Count, Kind, Msb, NodeId, Program};
use std::collections::HashMap;

/// What a field's values are in Wireshark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// Unsigned up to 32 bits; `hex`: shown in decimal and hex (32-bit words, checks).
    U32 {
        hex: bool,
    },
    I32,
    U64,
    I64,
    /// A `derived` value: an i64, which on a path with 64-bit unsigned fields is shown
    /// as theirs (a sequence read in one branch, derived in the other).
    Derived,
    Double,
    Bool,
    Bytes,
    Text,
    /// A group (struct, array, vector…): no value of its own, its value in its text.
    None,
}

impl FieldType {
    /// The runtime's name for it.
    pub fn code(self) -> &'static str {
        match self {
            FieldType::U32 { .. } => "u32",
            FieldType::I32 => "i32",
            FieldType::U64 => "u64",
            FieldType::I64 | FieldType::Derived => "i64",
            FieldType::Double => "dbl",
            FieldType::Bool => "bool",
            FieldType::Bytes => "bytes",
            FieldType::Text => "str",
            FieldType::None => "none",
        }
    }

    fn integer(self) -> bool {
        matches!(
            self,
            FieldType::U32 { .. }
                | FieldType::I32
                | FieldType::U64
                | FieldType::I64
                | FieldType::Derived
                | FieldType::Bool
        )
    }

    /// A type that holds the values of both (the same path in two places).
    fn join(self, o: FieldType) -> FieldType {
        use FieldType::*;
        if self == o {
            return self;
        }
        match (self, o) {
            (U32 { hex: a }, U32 { hex: b }) => U32 { hex: a && b },
            (Bool, x) | (x, Bool) if x.integer() => x,
            (Derived, U64) | (U64, Derived) => U64,
            (U32 { .. } | U64, U32 { .. } | U64) => U64,
            (a, b) if a.integer() && b.integer() => I64,
            _ => Text,
        }
    }
}

/// A `ProtoField` to declare.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    pub abbrev: String,
    /// The label Wireshark shows: the path's last name.
    pub name: String,
    pub ty: FieldType,
    /// The enum whose names the values have (`None` too when paths disagree).
    pub enum_id: Option<u16>,
    enum_conflict: bool,
    pub doc: Option<String>,
}

/// The fields of one layer, in the order first met.
#[derive(Debug, Default)]
pub struct Catalog {
    pub fields: Vec<FieldDef>,
    at: HashMap<String, usize>,
}

impl Catalog {
    fn add(&mut self, abbrev: String, ty: FieldType, enum_id: Option<u16>, doc: Option<&str>) {
        if let Some(&i) = self.at.get(&abbrev) {
            let f = &mut self.fields[i];
            f.ty = f.ty.join(ty);
            if f.enum_id != enum_id {
                f.enum_conflict = true;
            }
            if f.doc.is_none() {
                f.doc = doc.map(str::to_string);
            }
            return;
        }
        let name = abbrev.rsplit('.').next().unwrap_or(&abbrev).to_string();
        self.at.insert(abbrev.clone(), self.fields.len());
        self.fields.push(FieldDef {
            abbrev,
            name,
            ty,
            enum_id,
            enum_conflict: false,
            doc: doc.map(str::to_string),
        });
    }

    /// The enum a field's values are named by, when every path agrees on one and the
    /// type can carry Wireshark's value strings (32 bits).
    pub fn value_strings(&self, f: &FieldDef) -> Option<u16> {
        let narrow = matches!(f.ty, FieldType::U32 { .. } | FieldType::I32);
        f.enum_id.filter(|_| narrow && !f.enum_conflict)
    }
}

/// Deepest nesting of blocks walked (a definition is untrusted; gpcap's own limit is 32).
const MAX_NEST: u32 = 64;

const RUNGS: [&str; 6] = ["plus_one", "upto_5", "upto_13", "upto_29", "upto_61", "upto_125"];

struct Walk<'p> {
    p: &'p Program,
    layer: &'p str,
    out: Catalog,
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Every field path of layer `p` as its `ProtoField`s.
pub fn catalog(p: &Program) -> Result<Catalog, Refusal> {
    let mut w = Walk {
        p,
        layer: &p.params.name,
        out: Catalog::default(),
    };
    w.block(p.header, "", "", 0)?;
    if let Some(f) = p.fragment {
        w.block(f, "", "", 0)?;
    }
    // With datagram kinds, the messages node is read where a kind's body says.
    if let Some(m) = p.messages.filter(|_| !p.kinds) {
        w.node(m, "", "", 0)?;
    }
    let reassembled: Vec<u32> = p
        .params
        .message_fragments
        .iter()
        .filter_map(|f| f.reassembled_as)
        .collect();
    for d in &p.packets {
        let zone = format!("{}.", d.name);
        match p.messages {
            Some(_) if d.message || !p.kinds => {
                w.block(d.body, "", "messages", 0)?;
                if reassembled.contains(&d.type_id) {
                    w.block(d.body, &zone, "", 0)?;
                }
            }
            _ => w.block(d.body, &zone, "", 0)?,
        }
    }
    if p.params.end_check.is_some() {
        w.leaf("", "align", FieldType::U32 { hex: false }, None, None);
        w.leaf("", "end_check", FieldType::U32 { hex: true }, None, None);
    }
    Ok(w.out)
}

impl Walk<'_> {
    fn leaf(&mut self, zone: &str, path: &str, ty: FieldType, enum_id: Option<u16>, doc: Option<&str>) {
        self.out
            .add(format!("{}.{zone}{path}", self.layer), ty, enum_id, doc);
    }

    fn block(&mut self, b: Block, zone: &str, prefix: &str, nest: u32) -> Result<(), Refusal> {
        if nest > MAX_NEST {
            return Err(Refusal::new(
                self.layer,
                format!("`{prefix}`"),
                0,
                format!("blocks nested more than {MAX_NEST} deep"),
            ));
        }
        for &id in self.p.block(b) {
            self.node(id, zone, prefix, nest)?;
        }
        Ok(())
    }

    /// The relative index ladder's fields under `at` (`objects.index`, `objects.end.index`).
    fn ladder(&mut self, zone: &str, at: &str) {
        self.leaf(zone, at, FieldType::I32, None, None);
        for rung in RUNGS {
            self.leaf(zone, &join(at, rung), FieldType::Bool, None, None);
        }
        self.leaf(zone, &join(at, "difference"), FieldType::I32, None, None);
    }

    fn node(&mut self, id: NodeId, zone: &str, prefix: &str, nest: u32) -> Result<(), Refusal> {
        let p = self.p;
        let n = &p.nodes[id as usize];
        let here = join(prefix, &n.name);
        let doc = n.doc.as_deref();
        let e = n.enum_id;
        let align = |w: &mut Self| {
            w.leaf(
                zone,
                &join(prefix, "align"),
                FieldType::U32 { hex: false },
                None,
                None,
            )
        };
        let parts = |w: &mut Self, names: &[&str], ty: FieldType| {
            w.leaf(zone, &here, FieldType::None, None, doc);
            for part in names {
                w.leaf(zone, &join(&here, part), ty, None, None);
            }
        };
        let wide = |c: &Count| !matches!(c, Count::Const(n) if *n <= 4);
        match &n.kind {
            Kind::Bits(b) => self.leaf(zone, &here, FieldType::U32 { hex: *b == 32 }, e, doc),
            Kind::Bool => self.leaf(zone, &here, FieldType::Bool, None, doc),
            Kind::Int { min, max } => {
                let narrow = *min >= i32::MIN as i64 && *max <= i32::MAX as i64;
                let ty = if narrow { FieldType::I32 } else { FieldType::I64 };
                self.leaf(zone, &here, ty, e, doc)
            }
            Kind::Uint64 => self.leaf(zone, &here, FieldType::U64, e, doc),
            Kind::Float | Kind::Double | Kind::CompressedFloat(_) => {
                self.leaf(zone, &here, FieldType::Double, None, doc)
            }
            Kind::Vector | Kind::CompressedVector(_) => parts(self, &["x", "y", "z"], FieldType::Double),
            Kind::Quaternion => parts(self, &["x", "y", "z", "w"], FieldType::Double),
            Kind::SmallestThree(_) => {
                parts(self, &["x", "y", "z", "w"], FieldType::Double);
                self.leaf(
                    zone,
                    &join(&here, "largest"),
                    FieldType::U32 { hex: false },
                    None,
                    None,
                );
            }
            Kind::Align => align(self),
            Kind::Bytes(_) => {
                align(self);
                self.leaf(zone, &here, FieldType::Bytes, None, doc)
            }
            Kind::Text { .. } | Kind::CString { .. } => {
                align(self);
                self.leaf(zone, &here, FieldType::Text, None, doc)
            }
            Kind::String { .. } => {
                self.leaf(zone, &here, FieldType::Text, None, doc);
                self.leaf(zone, &join(&here, "length"), FieldType::I32, None, None);
                self.leaf(
                    zone,
                    &join(&here, "align"),
                    FieldType::U32 { hex: false },
                    None,
                    None,
                );
                self.leaf(zone, &join(&here, "data"), FieldType::Bytes, None, None);
            }
            Kind::Check { .. } => {
                align(self);
                self.leaf(zone, &here, FieldType::U32 { hex: true }, None, doc)
            }
            Kind::Magic(_) => {
                align(self);
                self.leaf(zone, &here, FieldType::Bytes, None, doc)
            }
            Kind::Rest { body } => {
                align(self);
                self.leaf(zone, &here, FieldType::Bytes, None, doc);
                self.block(*body, zone, &here, nest + 1)?;
            }
            Kind::Derived(_) => self.leaf(zone, &here, FieldType::Derived, e, doc),
            Kind::LeUint(c) => {
                let ty = if wide(c) {
                    FieldType::U64
                } else {
                    FieldType::U32 { hex: false }
                };
                self.leaf(zone, &here, ty, e, doc)
            }
            Kind::Msb(m) => {
                let ty = match m {
                    Msb::Bits(b) => FieldType::U32 { hex: *b == 32 },
                    Msb::Bool => FieldType::Bool,
                    Msb::Int { min, max } if *min >= i32::MIN as i64 && *max <= i32::MAX as i64 => {
                        FieldType::I32
                    }
                    Msb::Int { .. } => FieldType::I64,
                    Msb::Float | Msb::Double => FieldType::Double,
                    Msb::Uint64 => FieldType::U64,
                };
                let e = if matches!(m, Msb::Bool) { None } else { e };
                self.leaf(zone, &here, ty, e, doc)
            }
            Kind::ByteInt { count, signed, .. } => {
                align(self);
                let ty = match (wide(count), signed) {
                    (false, false) => FieldType::U32 { hex: false },
                    (false, true) => FieldType::I32,
                    (true, false) => FieldType::U64,
                    (true, true) => FieldType::I64,
                };
                self.leaf(zone, &here, ty, e, doc)
            }
            Kind::Varint { zigzag } => {
                align(self);
                let ty = if *zigzag { FieldType::I64 } else { FieldType::U64 };
                self.leaf(zone, &here, ty, e, doc)
            }
            Kind::Struct { body } => {
                self.leaf(zone, &here, FieldType::None, None, doc);
                self.block(*body, zone, &here, nest + 1)?;
            }
            Kind::Inline { body } => self.block(*body, zone, prefix, nest + 1)?,
            // A datagram kind's messages are read at the top, as without kinds.
            Kind::Messages { header } if self.p.kinds => {
                self.leaf("", "messages", FieldType::None, None, doc);
                self.block(*header, "", "messages", nest + 1)?;
            }
            Kind::Array { body, .. } | Kind::List { body, .. } | Kind::Messages { header: body } => {
                self.leaf(zone, &here, FieldType::None, None, doc);
                self.block(*body, zone, &here, nest + 1)?;
            }
            Kind::RelativeList { body, .. } => {
                self.leaf(zone, &here, FieldType::None, None, doc);
                self.ladder(zone, &join(&here, "index"));
                self.leaf(zone, &join(&here, "end"), FieldType::I32, None, None);
                self.ladder(zone, &join(&here, "end.index"));
                self.block(*body, zone, &here, nest + 1)?;
            }
            Kind::If { then, otherwise, .. } => {
                self.block(*then, zone, prefix, nest + 1)?;
                self.block(*otherwise, zone, prefix, nest + 1)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_of_one_path_join() {
        use FieldType::*;
        assert_eq!(U32 { hex: false }.join(I64), I64);
        assert_eq!(U32 { hex: true }.join(U32 { hex: false }), U32 { hex: false });
        assert_eq!(Bool.join(U32 { hex: false }), U32 { hex: false });
        assert_eq!(U64.join(U32 { hex: false }), U64);
        assert_eq!(Double.join(I32), Text);
        assert_eq!(Bytes.join(Text), Text);
        assert_eq!(Derived.join(U64), U64);
        assert_eq!(Derived.join(U32 { hex: false }), I64);
    }
}
