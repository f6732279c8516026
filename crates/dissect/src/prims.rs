//! The leaf primitives of the definition language. Each leaf's bit layout is the one in
//! [`crate::bits::serialize`]; here a leaf kind is mapped to it once, and the reads or
//! writes it traces become fields once — so the interpreter (validating or recording),
//! the generator and the measurer all go through the same two functions. Adding a leaf
//! primitive touches `serialize_leaf`, `fields` and `Kind`.

use super::model::Value;
use super::program::Kind;
use crate::bits::{
    BitError, BitResult, CompressedFloat, ErrorKind, Prim, Stream, serialize_bits, serialize_check,
    serialize_int, serialize_quantized, serialize_smallest_three_raw, serialize_uint64,
    smallest_three_component, smallest_three_decode, smallest_three_widths,
};

/// A float's bits (vector and quaternion components).
const FLOAT_BITS: u32 = 32;

/// A leaf's wire values: one per read, at most four (integers as their value, floats as
/// their bits, compressed floats as their integer). Expressions see the first (only
/// integer leaves can be referenced).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raw(pub [u64; 4]);

/// Reads, writes or measures one leaf: the only mapping from a leaf kind to its layout.
/// Returns the fields the leaf makes (a group counts as one; padding before a check is
/// one when there is any), or 0 when `kind` is not a leaf primitive (nothing is read).
#[inline(always)]
pub fn serialize_leaf<S: Stream>(s: &mut S, kind: &Kind, raw: &mut Raw) -> BitResult<u32> {
    let r = &mut raw.0;
    // One 32-bit part in `r[k]`.
    #[inline(always)]
    fn part<S: Stream>(
        s: &mut S,
        r: &mut u64,
        f: impl FnOnce(&mut S, &mut u32) -> BitResult<()>,
    ) -> BitResult<()> {
        let mut x = *r as u32;
        let res = f(s, &mut x);
        *r = x as u64;
        res
    }
    match kind {
        Kind::Bits(n) => part(s, &mut r[0], |s, x| serialize_bits(s, x, *n)).map(|_| 1),
        Kind::Bool => part(s, &mut r[0], |s, x| serialize_bits(s, x, 1)).map(|_| 1),
        Kind::Int { min, max } => {
            let mut v = r[0] as i64;
            let res = serialize_int(s, &mut v, *min, *max);
            r[0] = v as u64;
            res.map(|_| 1)
        }
        Kind::Uint64 | Kind::Double => serialize_uint64(s, &mut r[0]).map(|_| 1),
        Kind::Float => part(s, &mut r[0], |s, x| serialize_bits(s, x, 32)).map(|_| 1),
        Kind::CompressedFloat(cf) => part(s, &mut r[0], |s, x| serialize_quantized(s, x, cf)).map(|_| 1),
        Kind::Vector => r[..3]
            .iter_mut()
            .try_for_each(|x| part(s, x, |s, x| serialize_bits(s, x, FLOAT_BITS)))
            .map(|_| 4),
        Kind::Quaternion => r
            .iter_mut()
            .try_for_each(|x| part(s, x, |s, x| serialize_bits(s, x, FLOAT_BITS)))
            .map(|_| 5),
        Kind::CompressedVector(cf) => r[..3]
            .iter_mut()
            .try_for_each(|x| part(s, x, |s, x| serialize_quantized(s, x, cf)))
            .map(|_| 4),
        Kind::SmallestThree(bits) => {
            let mut largest = r[0] as u32;
            let mut small = [r[1] as u32, r[2] as u32, r[3] as u32];
            let res = serialize_smallest_three_raw(s, &mut largest, &mut small, *bits);
            *r = [largest as u64, small[0] as u64, small[1] as u64, small[2] as u64];
            res.map(|_| 5)
        }
        Kind::Check { magic } => {
            r[0] = *magic as u64;
            let padding = !s.bits_processed().is_multiple_of(8) as u32;
            serialize_check(s, *magic).map(|_| 1 + padding)
        }
        _ => Ok(0),
    }
}

/// Fields a leaf makes at most: one (two for a check after padding), or a group and its
/// parts; 0 for what is not a leaf primitive.
#[inline(always)]
pub fn field_count(kind: &Kind) -> u32 {
    match kind {
        Kind::Bits(_)
        | Kind::Bool
        | Kind::Int { .. }
        | Kind::Uint64
        | Kind::Float
        | Kind::Double
        | Kind::CompressedFloat(_) => 1,
        Kind::Check { .. } => 2,
        Kind::Vector | Kind::CompressedVector(_) => 4,
        Kind::Quaternion | Kind::SmallestThree(_) => 5,
        _ => 0,
    }
}

/// Widths of a grouped leaf's parts, read one after the other, and how many there are.
#[inline]
pub fn part_widths(kind: &Kind) -> ([u32; 4], usize) {
    match kind {
        Kind::Vector => ([FLOAT_BITS; 4], 3),
        Kind::Quaternion => ([FLOAT_BITS; 4], 4),
        Kind::CompressedVector(cf) => ([cf.bits; 4], 3),
        Kind::SmallestThree(b) => (smallest_three_widths(*b), 4),
        _ => ([0; 4], 0),
    }
}

/// Hands `emit` the parts of a grouped leaf read without a trace (they lie one after
/// the other from `start`, [`part_widths`] wide), and returns the group's value.
#[inline]
pub fn parts_of(
    kind: &Kind,
    raw: &Raw,
    start: u64,
    values: bool,
    emit: &mut impl FnMut(&LeafField),
) -> Value {
    let (widths, n) = part_widths(kind);
    let largest = raw.0[0];
    let first_float = matches!(kind, Kind::SmallestThree(_)) as usize;
    let mut floats = [0f32; 4];
    let mut at = start;
    for (k, (&width, &v)) in widths[..n].iter().zip(&raw.0).enumerate() {
        let v = v as u32;
        let (kind_name, value) = part(kind, k, v, values);
        if let (Value::Float(x), Some(slot)) = (value, k.checked_sub(first_float)) {
            floats[slot] = x;
        }
        emit(&LeafField {
            part: Some(part_name(kind, k, largest)),
            kind: kind_name,
            bit_offset: at,
            bit_len: width as u64,
            raw: v as u64,
            value,
        });
        at += width as u64;
    }
    group_value(kind, floats, largest)
}

/// Whether the leaf shows as a group of parts (vector x y z, …).
pub fn is_group(kind: &Kind) -> bool {
    field_count(kind) > 2
}

/// One field made by a leaf's reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeafField {
    /// `None`: the leaf itself; `Some("align")`: padding before it; else a part's name.
    pub part: Option<&'static str>,
    pub kind: &'static str,
    pub bit_offset: u64,
    pub bit_len: u64,
    /// The bits as read.
    pub raw: u64,
    pub value: Value,
}

const XYZW: [&str; 4] = ["x", "y", "z", "w"];

/// The components other than the largest, in x y z w order, by the largest's index.
const SMALLEST: [[&str; 3]; 4] = [["y", "z", "w"], ["x", "z", "w"], ["x", "y", "w"], ["x", "y", "z"]];

#[inline]
pub fn part_name(kind: &Kind, k: usize, largest: u64) -> &'static str {
    match kind {
        Kind::SmallestThree(_) if k == 0 => "largest",
        Kind::SmallestThree(_) => SMALLEST[(largest & 3) as usize]
            .get(k - 1)
            .copied()
            .unwrap_or("?"),
        _ => XYZW.get(k).copied().unwrap_or("?"),
    }
}

/// A grouped leaf's value from its parts' floats.
#[inline]
fn group_value(kind: &Kind, parts: [f32; 4], largest: u64) -> Value {
    match kind {
        Kind::Vector | Kind::CompressedVector(_) => Value::Vec3([parts[0], parts[1], parts[2]]),
        Kind::Quaternion => Value::Quat(parts),
        Kind::SmallestThree(_) => Value::Quat(smallest_three_decode(
            largest as u32,
            [parts[0], parts[1], parts[2]],
        )),
        _ => Value::None,
    }
}

/// The bits and value of a one-field leaf from its wire value (`raw.0[0]`), for
/// every leaf that is not a group.
#[inline]
pub fn single(kind: &Kind, v: u64, values: bool) -> (u64, Value) {
    match kind {
        Kind::Bool => (v, Value::Bool(v != 0)),
        Kind::Int { min, .. } => ((v as i64).wrapping_sub(*min) as u64, Value::Int(v as i64)),
        Kind::Double => (v, Value::Double(f64::from_bits(v))),
        Kind::Float => (v, Value::Float(f32::from_bits(v as u32))),
        Kind::CompressedFloat(cf) => (
            v,
            Value::Float(if values { cf.dequantize(v as u32) } else { 0.0 }),
        ),
        _ => (v, Value::UInt(v)),
    }
}

/// The kind name and value of part `k` of a grouped leaf from the bits read for it.
#[inline]
fn part(kind: &Kind, k: usize, v: u32, values: bool) -> (&'static str, Value) {
    let dequantize = |cf: &CompressedFloat| if values { cf.dequantize(v) } else { 0.0 };
    match kind {
        Kind::CompressedVector(cf) => ("compressed-float", Value::Float(dequantize(cf))),
        Kind::SmallestThree(_) if k == 0 => ("bits", Value::UInt(v as u64)),
        Kind::SmallestThree(b) => (
            "bits",
            Value::Float(if values {
                smallest_three_component(v, *b)
            } else {
                0.0
            }),
        ),
        _ => ("float", Value::Float(f32::from_bits(v))),
    }
}

/// Hands `emit` the fields of one leaf, built from the primitives traced while it was
/// read or written (values decoded only when `values` is set: validation needs none),
/// and returns the value of its group (grouped leaves).
pub fn fields(kind: &Kind, prims: &[Prim], values: bool, emit: &mut impl FnMut(&LeafField)) -> Value {
    let name = kind.name();
    let grouped = is_group(kind);
    let mut parts = [0f32; 4];
    let mut k = 0usize;
    let mut largest = 0u64;
    // The first half of a 64-bit leaf (uint64, double: two 32-bit reads).
    let mut low: Option<(u64, u64)> = None;
    for p in prims {
        let (at, bits, v) = match *p {
            Prim::Align { at, bits } => {
                emit(&LeafField {
                    part: Some("align"),
                    kind: "align",
                    bit_offset: at,
                    bit_len: bits as u64,
                    raw: 0,
                    value: Value::UInt(0),
                });
                continue;
            }
            Prim::Bytes { .. } => continue,
            Prim::Check { at, value, .. } => (at, 32, value as u64),
            Prim::Int { at, min, max, value } => {
                (at, crate::bits::int_width(min, max).unwrap_or(0), value as u64)
            }
            Prim::Bits { at, bits, value } => (at, bits, value as u64),
        };
        if matches!(kind, Kind::Uint64 | Kind::Double) {
            match low.take() {
                None => {
                    low = Some((at, v));
                    continue;
                }
                Some((lo_at, lo)) => {
                    let (raw, value) = single(kind, v << 32 | lo, values);
                    emit(&LeafField {
                        part: None,
                        kind: name,
                        bit_offset: lo_at,
                        bit_len: 64,
                        raw,
                        value,
                    });
                    continue;
                }
            }
        }
        if !grouped {
            let (raw, value) = single(kind, v, values);
            emit(&LeafField {
                part: None,
                kind: name,
                bit_offset: at,
                bit_len: bits as u64,
                raw,
                value,
            });
            continue;
        }
        if k == 0 {
            largest = v;
        }
        let (kind_name, value) = part(kind, k, v as u32, values);
        if let Value::Float(x) = value {
            let slot = if matches!(kind, Kind::SmallestThree(_)) {
                k.wrapping_sub(1)
            } else {
                k
            };
            if let Some(p) = parts.get_mut(slot) {
                *p = x;
            }
        }
        emit(&LeafField {
            part: Some(part_name(kind, k, largest)),
            kind: kind_name,
            bit_offset: at,
            bit_len: bits as u64,
            raw: v,
            value,
        });
        k += 1;
    }
    group_value(kind, parts, largest)
}

/// The name of the part a read error stopped at: the part after those traced, or the
/// last traced one when the read itself was refused (a value out of range).
pub fn failed_part(kind: &Kind, prims: &[Prim], e: &BitError) -> Option<&'static str> {
    if matches!(e.kind, ErrorKind::NonZeroPadding { .. }) {
        return Some("align");
    }
    if !is_group(kind) {
        return None;
    }
    let reads: Vec<&Prim> = prims
        .iter()
        .filter(|p| !matches!(p, Prim::Align { .. }))
        .collect();
    let k = match e.kind {
        ErrorKind::OutOfRange { .. } | ErrorKind::CheckMismatch { .. } => reads.len().saturating_sub(1),
        _ => reads.len(),
    };
    let largest = match reads.first() {
        Some(Prim::Bits { value, .. }) => *value as u64,
        _ => 0,
    };
    Some(part_name(kind, k, largest))
}
