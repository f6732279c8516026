//! A packet type's fields as typed Arrow columns, laid out from the definition before
//! packets flow: integers in the narrowest type that holds the declared range, floats,
//! booleans, strings, bytes; vectors and named structs as structs; `if` branches and
//! inline structs spliced into their group (a field a packet's path did not read is
//! null). An array or list is its length here and its elements in a child table
//! ([`super::children`]): no repetition levels anywhere. Filled from each packet's field
//! tree.

use super::children::{Child, Key};
use super::lookup::Lookup;
use arrow_array::builder::*;
use arrow_array::{ArrayRef, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields};
use gpcap_dissect::{Dissection, Label, Program, Value, program::Block, program::Kind, program::NodeId};
use std::sync::Arc;

mod layout;
use layout::lay_out;

/// Groups nested deeper than this are refused (a definition is untrusted): an export
/// says so rather than leave their fields out.
pub(super) const MAX_NEST: u32 = 16;

/// A relative list element's index (what `objects[k].index` reads in `dissect`): not
/// `index`, which is the element's place in its list, a key of the child table.
pub(super) const LIST_INDEX: &str = "list_index";

pub(super) enum Int {
    I8(Int8Builder),
    I16(Int16Builder),
    I32(Int32Builder),
    I64(Int64Builder),
    U8(UInt8Builder),
    U16(UInt16Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
}

macro_rules! each_int {
    ($self:expr, $b:ident => $e:expr) => {
        match $self {
            Int::I8($b) => $e,
            Int::I16($b) => $e,
            Int::I32($b) => $e,
            Int::I64($b) => $e,
            Int::U8($b) => $e,
            Int::U16($b) => $e,
            Int::U32($b) => $e,
            Int::U64($b) => $e,
        }
    };
}

impl Int {
    /// The narrowest integer type that holds `min..=max`.
    fn for_range(min: i128, max: i128) -> Int {
        let fits = |lo: i128, hi: i128| min >= lo && max <= hi;
        if fits(0, u8::MAX as i128) {
            Int::U8(Default::default())
        } else if fits(0, u16::MAX as i128) {
            Int::U16(Default::default())
        } else if fits(0, u32::MAX as i128) {
            Int::U32(Default::default())
        } else if fits(0, u64::MAX as i128) {
            Int::U64(Default::default())
        } else if fits(i8::MIN as i128, i8::MAX as i128) {
            Int::I8(Default::default())
        } else if fits(i16::MIN as i128, i16::MAX as i128) {
            Int::I16(Default::default())
        } else if fits(i32::MIN as i128, i32::MAX as i128) {
            Int::I32(Default::default())
        } else {
            Int::I64(Default::default())
        }
    }

    fn range(&self) -> (i128, i128) {
        match self {
            Int::I8(_) => (i8::MIN as i128, i8::MAX as i128),
            Int::I16(_) => (i16::MIN as i128, i16::MAX as i128),
            Int::I32(_) => (i32::MIN as i128, i32::MAX as i128),
            Int::I64(_) => (i64::MIN as i128, i64::MAX as i128),
            Int::U8(_) => (0, u8::MAX as i128),
            Int::U16(_) => (0, u16::MAX as i128),
            Int::U32(_) => (0, u32::MAX as i128),
            Int::U64(_) => (0, u64::MAX as i128),
        }
    }

    /// A value that does not fit the column (never, for what the definition declares)
    /// is null rather than wrapped.
    fn append(&mut self, v: Option<i128>) {
        match self {
            Int::I8(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::I16(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::I32(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::I64(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::U8(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::U16(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::U32(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
            Int::U64(b) => b.append_option(v.and_then(|v| v.try_into().ok())),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        each_int!(self, b => Arc::new(b.refill()))
    }

    fn data_type(&self) -> DataType {
        match self {
            Int::I8(_) => DataType::Int8,
            Int::I16(_) => DataType::Int16,
            Int::I32(_) => DataType::Int32,
            Int::I64(_) => DataType::Int64,
            Int::U8(_) => DataType::UInt8,
            Int::U16(_) => DataType::UInt16,
            Int::U32(_) => DataType::UInt32,
            Int::U64(_) => DataType::UInt64,
        }
    }
}

pub(super) enum Col {
    Int(Int),
    Bool(BooleanBuilder),
    F32(Float32Builder),
    F64(Float64Builder),
    Str(StringBuilder),
    Bin(BinaryBuilder),
    /// A vector or quaternion: its parts as float columns, from the group's value.
    Floats {
        parts: Vec<(&'static str, Float32Builder)>,
        valid: Vec<bool>,
    },
    /// A named struct, or an element of a list: its fields from the child fields.
    Group {
        fields: Vec<Column>,
        valid: Vec<bool>,
        find: Lookup,
    },
    /// An enum field's name, beside its value: a dictionary of the enum's names, keyed by
    /// their position in the definition (null for a value the enum does not name).
    EnumName {
        /// The enum's (value, name) pairs, sorted by value.
        names: Arc<[(i64, String)]>,
        keys: UInt16Builder,
    },
    /// An array or list: its length (null where the packet did not read it); its
    /// elements are rows of its child table.
    List {
        count: UInt32Builder,
        child: Box<Child>,
    },
}

/// One column: its name, the definition nodes that fill it (an `if` and its `else`
/// may both declare `ack`), and its values.
pub struct Column {
    pub(super) name: String,
    pub(super) nodes: Vec<NodeId>,
    pub(super) col: Col,
    /// Distinct values the definition allows (None: not known from it).
    pub(super) values: Option<u64>,
}

/// A packet type's table: its columns and how many rows are buffered.
pub struct TypeColumns {
    pub(super) fields: Vec<Column>,
    pub rows: usize,
    /// Which field fills each column.
    find: Lookup,
    /// The definition line of a group nested deeper than [`MAX_NEST`], not laid out.
    pub too_deep: Option<u32>,
}

impl TypeColumns {
    /// The columns of the packet body `body` of program `p`, then those of `more` (a
    /// message type's header block: apart, so that a name in both is two columns).
    pub fn new(p: &Program, body: Block, more: Option<Block>) -> TypeColumns {
        let mut too_deep = None;
        let mut fields = Vec::new();
        lay_out(p, body, &mut fields, 0, &mut too_deep);
        if let Some(b) = more {
            let mut after = Vec::new();
            lay_out(p, b, &mut after, 0, &mut too_deep);
            fields.extend(after);
        }
        TypeColumns::of(fields, too_deep)
    }

    /// The columns `fields` (already laid out: a list's element).
    pub(super) fn of(fields: Vec<Column>, too_deep: Option<u32>) -> TypeColumns {
        TypeColumns {
            find: Lookup::new(&fields),
            fields,
            rows: 0,
            too_deep,
        }
    }

    /// Each child table of these columns (in their groups too), not their own children.
    pub(super) fn children_mut(&mut self, f: &mut dyn FnMut(&mut Child)) {
        self.lists_mut(&mut String::new(), &mut |_, c| f(c));
    }

    /// The same, with each list's path after `path`: `objects`, or `pos.items` inside
    /// the struct `pos` (`path` is as it was when this returns).
    pub(super) fn lists_mut(&mut self, path: &mut String, f: &mut dyn FnMut(&str, &mut Child)) {
        fn walk(fields: &mut [Column], path: &mut String, f: &mut dyn FnMut(&str, &mut Child)) {
            for c in fields {
                let at = path.len();
                path.push_str(&c.name);
                match &mut c.col {
                    Col::List { child, .. } => f(path, child),
                    Col::Group { fields, .. } => {
                        path.push('.');
                        walk(fields, path, f);
                    }
                    _ => {}
                }
                path.truncate(at);
            }
        }
        walk(&mut self.fields, path, f)
    }

    /// The same, read only.
    pub(super) fn children(&self, f: &mut dyn FnMut(&Child)) {
        fn walk(fields: &[Column], f: &mut dyn FnMut(&Child)) {
            for c in fields {
                match &c.col {
                    Col::List { child, .. } => f(child),
                    Col::Group { fields, .. } => walk(fields, f),
                    _ => {}
                }
            }
        }
        walk(&self.fields, f)
    }

    /// Column names, renamed where they would collide ([`distinct_names`]).
    pub fn rename(&mut self, reserved: &[&str]) {
        distinct_names(&mut self.fields, reserved);
    }

    /// The Arrow fields, in order.
    pub fn schema_fields(&self) -> Vec<Field> {
        self.fields
            .iter()
            .map(|c| Field::new(&c.name, c.col.data_type(), true))
            .collect()
    }

    /// Appends a row from a packet's field tree (the block's fields are among the roots),
    /// given its subtree ends ([`Dissection::subtree_ends`], computed once for every
    /// table the packet fills).
    /// `key`: where the row sits, for the rows its lists add to child tables.
    pub fn append_tree(&mut self, d: &Dissection, end: &[u32], payload: &[u8], key: &mut Key) {
        self.append_range(d, end, payload, 0, d.fields.len() as u32, key);
    }

    /// One row from the fields `from..to` of the tree: a message's subtree.
    pub fn append_range(
        &mut self,
        d: &Dissection,
        end: &[u32],
        payload: &[u8],
        from: u32,
        to: u32,
        key: &mut Key,
    ) {
        let t = Tree { d, end, payload };
        self.append_fields(&t, Children::new(end, from, to), key);
    }

    /// One row from the fields `fields` of `t`.
    fn append_fields(&mut self, t: &Tree, fields: Children, key: &mut Key) {
        self.find.place(t.d, fields);
        for (c, at) in self.fields.iter_mut().zip(&self.find.at) {
            c.col.append(t, *at, key);
        }
        self.rows += 1;
    }

    /// Per Parquet leaf column, in the schema's order: Some(true) when the definition
    /// allows at most [`DICTIONARY_VALUES`] values, None when it does not say.
    pub fn dictionary_leaves(&self, out: &mut Vec<Option<bool>>) {
        for c in &self.fields {
            c.col.leaves(c.values, out);
        }
    }

    /// The buffered rows as arrays (the builders start again empty).
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        self.fields.iter_mut().map(|c| c.col.finish()).collect()
    }
}

/// A dissection and where each field's subtree ends.
pub(super) struct Tree<'a> {
    d: &'a Dissection,
    end: &'a [u32],
    payload: &'a [u8],
}

impl Tree<'_> {
    fn children(&self, i: u32) -> Children<'_> {
        Children::new(self.end, i + 1, self.end[i as usize])
    }

    fn value(&self, i: u32) -> Value {
        self.d.fields[i as usize].value
    }
}

/// The direct children of a field: each next one starts where the one before ends.
#[derive(Clone)]
struct Children<'a> {
    end: &'a [u32],
    at: u32,
    stop: u32,
}

impl<'a> Children<'a> {
    fn new(end: &'a [u32], at: u32, stop: u32) -> Self {
        Children { end, at, stop }
    }
}

impl Iterator for Children<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.at >= self.stop {
            return None;
        }
        let i = self.at;
        self.at = self.end.get(i as usize).copied().unwrap_or(self.stop).max(i + 1);
        Some(i)
    }
}

impl Col {
    /// See [`TypeColumns::dictionary_leaves`]; `values`: the column's distinct values.
    fn leaves(&self, values: Option<u64>, out: &mut Vec<Option<bool>>) {
        let worth = values.map(|v| v <= DICTIONARY_VALUES);
        match self {
            Col::Floats { parts, .. } => out.extend(parts.iter().map(|_| worth)),
            Col::Group { fields, .. } => {
                for c in fields {
                    c.col.leaves(c.values, out);
                }
            }
            Col::List { .. } => out.push(None),
            Col::Int(_) | Col::F32(_) | Col::F64(_) => out.push(worth),
            Col::Bool(_) | Col::Str(_) | Col::Bin(_) | Col::EnumName { .. } => out.push(None),
        }
    }

    fn leaf(kind: &Kind) -> Option<Col> {
        let floats = |names: &[&'static str]| Col::Floats {
            parts: names.iter().map(|n| (*n, Float32Builder::new())).collect(),
            valid: Vec::new(),
        };
        Some(match kind {
            Kind::Bits(n) => Col::Int(Int::for_range(0, (1i128 << n) - 1)),
            Kind::Int { min, max } => Col::Int(Int::for_range(*min as i128, *max as i128)),
            Kind::Uint64 | Kind::LeUint(_) => Col::Int(Int::U64(Default::default())),
            Kind::Derived(_) => Col::Int(Int::I64(Default::default())),
            Kind::Bool => Col::Bool(BooleanBuilder::new()),
            Kind::Float | Kind::CompressedFloat(_) => Col::F32(Float32Builder::new()),
            Kind::Double => Col::F64(Float64Builder::new()),
            Kind::String { .. } => Col::Str(StringBuilder::new()),
            Kind::Bytes(_) | Kind::Rest { .. } | Kind::Magic(_) => Col::Bin(BinaryBuilder::new()),
            Kind::Vector | Kind::CompressedVector(_) => floats(&["x", "y", "z"]),
            Kind::Quaternion | Kind::SmallestThree(_) => floats(&["x", "y", "z", "w"]),
            Kind::Msb(_) => return Col::leaf(&kind.plain()),
            Kind::ByteInt { signed: true, .. } | Kind::Varint { zigzag: true } => {
                Col::Int(Int::I64(Default::default()))
            }
            Kind::ByteInt { .. } | Kind::Varint { .. } => Col::Int(Int::U64(Default::default())),
            Kind::Text { .. } | Kind::CString { .. } => Col::Bin(BinaryBuilder::new()),
            _ => return None,
        })
    }

    fn data_type(&self) -> DataType {
        match self {
            Col::Int(i) => i.data_type(),
            Col::Bool(_) => DataType::Boolean,
            Col::F32(_) => DataType::Float32,
            Col::F64(_) => DataType::Float64,
            Col::Str(_) => DataType::Utf8,
            Col::Bin(_) => DataType::Binary,
            Col::EnumName { .. } => {
                DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8))
            }
            Col::Floats { parts, .. } => DataType::Struct(
                parts
                    .iter()
                    .map(|(n, _)| Field::new(*n, DataType::Float32, true))
                    .collect(),
            ),
            Col::Group { fields, .. } => DataType::Struct(group_fields(fields)),
            Col::List { .. } => DataType::UInt32,
        }
    }

    /// Appends the value of field `at` (null when the packet has none).
    fn append(&mut self, t: &Tree, at: Option<u32>, key: &mut Key) {
        match self {
            Col::Group { fields, valid, find } => {
                match at {
                    Some(g) => find.place(t.d, t.children(g)),
                    None => find.at.iter_mut().for_each(|a| *a = None),
                }
                for (c, at) in fields.iter_mut().zip(&find.at) {
                    c.col.append(t, *at, key);
                }
                valid.push(at.is_some());
            }
            Col::List { count, child } => {
                let mut n = 0u32;
                for e in at.into_iter().flat_map(|i| t.children(i)) {
                    if let Label::Index(k) = t.d.fields[e as usize].label {
                        key.path.push(k);
                        child.keys(key);
                        child.columns.append_fields(t, t.children(e), key);
                        key.path.pop();
                        n += 1;
                    }
                }
                count.append_option(at.map(|_| n));
            }
            _ => self.append_value(at.map(|i| t.value(i)), t.payload),
        }
    }

    /// Appends `value` to a column of one value per row (a list's: its length; a
    /// group's: nothing); bytes and strings are read from `payload`.
    pub(super) fn append_value(&mut self, value: Option<Value>, payload: &[u8]) {
        let bytes = || match value {
            Some(Value::Bytes { offset, len }) => payload.get(offset..offset.checked_add(len)?),
            _ => None,
        };
        match self {
            Col::Int(b) => b.append(value.and_then(|v| match v {
                Value::Int(v) => Some(v as i128),
                Value::UInt(v) => Some(v as i128),
                Value::Bool(v) => Some(v as i128),
                _ => None,
            })),
            Col::Bool(b) => b.append_option(value.and_then(|v| match v {
                Value::Bool(v) => Some(v),
                Value::UInt(v) => Some(v != 0),
                _ => None,
            })),
            Col::F32(b) => b.append_option(value.and_then(|v| match v {
                Value::Float(v) => Some(v),
                _ => None,
            })),
            Col::F64(b) => b.append_option(value.and_then(|v| match v {
                Value::Double(v) => Some(v),
                Value::Float(v) => Some(v as f64),
                _ => None,
            })),
            Col::Str(b) => b.append_option(bytes().map(String::from_utf8_lossy)),
            Col::Bin(b) => b.append_option(bytes()),
            Col::EnumName { names, keys } => {
                let v = value.and_then(|v| match v {
                    Value::Int(v) => Some(v),
                    Value::UInt(v) => i64::try_from(v).ok(),
                    _ => None,
                });
                let key = v.and_then(|v| names.binary_search_by_key(&v, |(k, _)| *k).ok());
                keys.append_option(key.and_then(|k| u16::try_from(k).ok()));
            }
            Col::Floats { parts, valid } => {
                let xs: Option<&[f32]> = match &value {
                    Some(Value::Vec3(v)) => Some(v),
                    Some(Value::Quat(q)) => Some(q),
                    _ => None,
                };
                for (k, (_, b)) in parts.iter_mut().enumerate() {
                    b.append_option(xs.and_then(|xs| xs.get(k).copied()));
                }
                valid.push(xs.is_some());
            }
            Col::Group { .. } => {}
            Col::List { count, .. } => count.append_option(value.and_then(|v| match v {
                Value::UInt(n) => u32::try_from(n).ok(),
                _ => None,
            })),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Col::Int(b) => b.finish(),
            Col::Bool(b) => Arc::new(b.refill()),
            Col::F32(b) => Arc::new(b.refill()),
            Col::F64(b) => Arc::new(b.refill()),
            Col::Str(b) => Arc::new(b.refill()),
            Col::Bin(b) => Arc::new(b.refill()),
            Col::EnumName { names, keys } => {
                let values =
                    arrow_array::StringArray::from_iter_values(names.iter().map(|(_, n)| n.as_str()));
                match arrow_array::DictionaryArray::try_new(keys.refill(), Arc::new(values)) {
                    Ok(a) => Arc::new(a),
                    // Keys are positions in `names`: unreachable.
                    Err(_) => arrow_array::new_null_array(&self.data_type(), 0),
                }
            }
            Col::Floats { parts, valid } => {
                let fields: Fields = parts
                    .iter()
                    .map(|(n, _)| Field::new(*n, DataType::Float32, true))
                    .collect();
                let arrays: Vec<ArrayRef> = parts
                    .iter_mut()
                    .map(|(_, b)| Arc::new(b.refill()) as ArrayRef)
                    .collect();
                let (len, nulls) = nulls_of(valid);
                struct_array(fields, arrays, len, nulls)
            }
            Col::Group { fields, valid, .. } => {
                let schema = group_fields(fields);
                let arrays: Vec<ArrayRef> = fields.iter_mut().map(|c| c.col.finish()).collect();
                let (len, nulls) = nulls_of(valid);
                struct_array(schema, arrays, len, nulls)
            }
            Col::List { count, .. } => Arc::new(count.refill()),
        }
    }
}

/// The child table of the list at `path` (column places through groups and lists).
pub(super) fn child_in<'a>(fields: &'a mut [Column], path: &[u32]) -> Option<&'a mut Child> {
    let (&i, rest) = path.split_first()?;
    match &mut fields.get_mut(i as usize)?.col {
        Col::Group { fields, .. } => child_in(fields, rest),
        Col::List { child, .. } => match rest.is_empty() {
            true => Some(child),
            false => child_in(&mut child.columns.fields, rest),
        },
        _ => None,
    }
}

fn group_fields(fields: &[Column]) -> Fields {
    fields
        .iter()
        .map(|c| Field::new(&c.name, c.col.data_type(), true))
        .collect()
}

/// Rows `valid` as a null buffer, None when every row is valid (the Parquet writer then
/// skips a check per row and per leaf below); `valid` is emptied, its room kept. Also
/// the number of rows.
pub(super) fn nulls_of(valid: &mut Vec<bool>) -> (usize, Option<NullBuffer>) {
    let len = valid.len();
    let nulls = (!valid.iter().all(|v| *v)).then(|| NullBuffer::from(valid.as_slice()));
    valid.clear();
    (len, nulls)
}

/// Finishes a builder into its array and leaves it room for as many rows again: left
/// empty, each builder regrew from nothing for every batch (reallocations and copies).
pub(super) trait Refill {
    type Array;
    fn refill(&mut self) -> Self::Array;
}

impl<T: arrow_array::ArrowPrimitiveType> Refill for PrimitiveBuilder<T> {
    type Array = arrow_array::PrimitiveArray<T>;
    fn refill(&mut self) -> Self::Array {
        let rows = self.len();
        let a = self.finish();
        *self =
            PrimitiveBuilder::with_capacity(rows).with_data_type(arrow_array::Array::data_type(&a).clone());
        a
    }
}

impl Refill for BooleanBuilder {
    type Array = arrow_array::BooleanArray;
    fn refill(&mut self) -> Self::Array {
        let rows = self.len();
        let a = self.finish();
        *self = BooleanBuilder::with_capacity(rows);
        a
    }
}

impl<T: arrow_array::types::ByteArrayType> Refill for GenericByteBuilder<T> {
    type Array = arrow_array::GenericByteArray<T>;
    fn refill(&mut self) -> Self::Array {
        let (rows, bytes) = (self.len(), self.values_slice().len());
        let a = self.finish();
        *self = GenericByteBuilder::with_capacity(rows, bytes);
        a
    }
}

fn struct_array(fields: Fields, arrays: Vec<ArrayRef>, len: usize, nulls: Option<NullBuffer>) -> ArrayRef {
    if fields.is_empty() {
        return Arc::new(StructArray::new_empty_fields(len, nulls));
    }
    match StructArray::try_new(fields.clone(), arrays, nulls) {
        Ok(a) => Arc::new(a),
        // Every child gets one value per row: unreachable.
        Err(_) => arrow_array::new_null_array(&DataType::Struct(fields), len),
    }
}

/// Renames columns so that no two are equal ignoring case (DuckDB and Spark fold case)
/// and none takes a name in `reserved` (the table's key columns and partitions): the
/// later one gets `_2`, `_3`… Groups' fields likewise, among themselves.
pub(super) fn distinct_names(fields: &mut [Column], reserved: &[&str]) {
    let mut taken: std::collections::HashSet<String> = reserved.iter().map(|r| r.to_lowercase()).collect();
    for c in fields.iter_mut() {
        if !taken.insert(c.name.to_lowercase()) {
            let mut k = 2;
            while taken.contains(&format!("{}_{k}", c.name).to_lowercase()) {
                k += 1;
            }
            c.name = format!("{}_{k}", c.name);
            taken.insert(c.name.to_lowercase());
        }
        // A list's element fields are renamed with its child table's keys.
        if let Col::Group { fields, .. } = &mut c.col {
            distinct_names(fields, &[]);
        }
    }
}

/// Leaves of at most this many distinct values by the definition (an enum, a small
/// `int`) are written by dictionary; others plain ([`super::encodings`]).
pub(super) const DICTIONARY_VALUES: u64 = 1 << 8;

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    /// Regression (found in review): two struct types of one shape in an `if` and its
    /// `else` share the column `q`, which was laid out from the first only: read through
    /// the `else`, `q.x` was null though `dissect` shows it.
    #[test]
    fn a_struct_column_two_struct_types_share_holds_both_fields() {
        let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/export-struct-twice.kdl");
        let p = std::sync::Arc::new(gpcap_dissect::load(&path).unwrap());
        let def = p.packets.iter().find(|d| d.name == "branches").unwrap();
        let mut columns = TypeColumns::new(&p, def.body, None);
        let mut d = gpcap_dissect::Dissector::new(p.clone());
        d.record = true;
        for (c, x) in [(1, 0x12), (0, 0xab)] {
            // crc, sequence, type 2, then `c` and the branch's `x`.
            let mut w = gpcap_wire::bits::BitWriter::new();
            for (v, bits) in [(0, 32), (7, 16), (def.type_id, 2), (c, 1), (x, 8)] {
                w.write_bits(v, bits).unwrap();
            }
            w.write_align().unwrap();
            let payload = w.finish();
            let tree = d.dissect(&payload);
            assert!(tree.fault.is_none(), "{:?}", tree.fault);
            let mut end = Vec::new();
            tree.subtree_ends(&mut end);
            columns.append_tree(&tree, &end, &payload, &mut Key::default());
        }
        let arrays = columns.finish();
        let at = columns.fields.iter().position(|c| c.name == "q").unwrap();
        let q = arrays[at].as_any().downcast_ref::<StructArray>().unwrap();
        let x = q
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::UInt8Array>()
            .unwrap();
        assert_eq!((q.is_valid(0), x.value(0)), (true, 0x12));
        assert_eq!(
            (q.is_valid(1), x.is_valid(1)),
            (true, true),
            "the else branch's q.x"
        );
        assert_eq!(x.value(1), 0xab);
    }

    /// A builder refilled after a batch makes the next batch's array of the same type
    /// (a timestamp keeps its zone) and holds only the new rows.
    #[test]
    fn refilled_builders_keep_their_type_and_start_empty() {
        let mut ts = TimestampMicrosecondBuilder::new().with_timezone("UTC");
        ts.append_value(1);
        ts.append_null();
        let first = ts.refill();
        ts.append_value(2);
        let second = ts.refill();
        assert_eq!(first.data_type(), second.data_type());
        assert_eq!((first.len(), first.null_count()), (2, 1));
        assert_eq!((second.len(), second.value(0)), (1, 2));
        let mut s = StringBuilder::new();
        s.append_value("datagram");
        s.refill();
        s.append_value("reassembled");
        assert_eq!(s.refill().value(0), "reassembled");
        let mut b = BooleanBuilder::new();
        b.append_value(true);
        b.refill();
        assert_eq!(b.refill().len(), 0);
    }

    /// No null buffer when every row is valid; the rows counted either way, and the
    /// flags emptied for the next batch.
    #[test]
    fn null_buffers_only_where_a_row_is_null() {
        let mut valid = vec![true, true, true];
        assert_eq!(nulls_of(&mut valid), (3, None));
        assert!(valid.is_empty());
        let mut valid = vec![true, false, true];
        let (len, nulls) = nulls_of(&mut valid);
        assert_eq!((len, nulls.map(|n| n.null_count())), (3, Some(1)));
        assert_eq!(nulls_of(&mut Vec::new()), (0, None));
    }
}
