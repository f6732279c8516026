//! Every serialize primitive of SPEC §1, written once over [`Stream`] so the same call
//! reads, writes or measures.

use super::error::{BitError, BitResult, ErrorKind};
use super::stream::Stream;
use super::width::bits_required;

#[inline(always)]
pub fn serialize_bits<S: Stream>(s: &mut S, value: &mut u32, bits: u32) -> BitResult<()> {
    s.bits(value, bits)
}

#[inline]
pub fn serialize_bool<S: Stream>(s: &mut S, value: &mut bool) -> BitResult<()> {
    let mut v = *value as u32;
    s.bits(&mut v, 1)?;
    *value = v != 0;
    Ok(())
}

#[inline(always)]
pub fn serialize_int<S: Stream>(s: &mut S, value: &mut i64, min: i64, max: i64) -> BitResult<()> {
    s.int(value, min, max)
}

/// `int(min, max)` for an `i32` field, the article's usual integer.
#[inline]
pub fn serialize_int32<S: Stream>(s: &mut S, value: &mut i32, min: i32, max: i32) -> BitResult<()> {
    let mut v = *value as i64;
    s.int(&mut v, min as i64, max as i64)?;
    *value = v as i32;
    Ok(())
}

/// Low 32 bits first, then the high 32.
#[inline(always)]
pub fn serialize_uint64<S: Stream>(s: &mut S, value: &mut u64) -> BitResult<()> {
    let mut lo = *value as u32;
    let mut hi = (*value >> 32) as u32;
    s.bits(&mut lo, 32)?;
    s.bits(&mut hi, 32)?;
    *value = (hi as u64) << 32 | lo as u64;
    Ok(())
}

pub fn serialize_float<S: Stream>(s: &mut S, value: &mut f32) -> BitResult<()> {
    let mut b = value.to_bits();
    s.bits(&mut b, 32)?;
    *value = f32::from_bits(b);
    Ok(())
}

pub fn serialize_double<S: Stream>(s: &mut S, value: &mut f64) -> BitResult<()> {
    let mut b = value.to_bits();
    serialize_uint64(s, &mut b)?;
    *value = f64::from_bits(b);
    Ok(())
}

/// Quantisation of `compressed_float(min, max, res)`, in `f32` like the reference code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompressedFloat {
    pub min: f32,
    pub max: f32,
    pub max_int: u32,
    pub bits: u32,
}

impl CompressedFloat {
    /// `None` when the range is empty, reversed, not finite, or needs over 32 bits.
    pub fn new(min: f32, max: f32, res: f32) -> Option<Self> {
        let delta = max - min;
        if !(delta.is_finite() && delta > 0.0 && res.is_finite() && res > 0.0) {
            return None;
        }
        let values = (delta / res).ceil();
        if !(values >= 1.0 && values <= u32::MAX as f32) {
            return None;
        }
        let max_int = values as u32;
        Some(CompressedFloat {
            min,
            max,
            max_int,
            bits: bits_required(max_int),
        })
    }

    pub fn quantize(&self, v: f32) -> u32 {
        let delta = self.max - self.min;
        let normalized = ((v - self.min) / delta).clamp(0.0, 1.0);
        (normalized * self.max_int as f32 + 0.5).floor() as u32
    }

    /// Decimal places that show every value this encoding can carry and no more: the
    /// step between neighbouring values, in decimals (0.01 → 2, 0.05 → 2, 0.5 → 1).
    pub fn decimals(&self) -> usize {
        (-self.step().log10() - 1e-6).ceil().clamp(0.0, 9.0) as usize
    }

    /// The step between neighbouring values: the resolution a value is known to.
    pub fn step(&self) -> f64 {
        (self.max as f64 - self.min as f64) / self.max_int as f64
    }

    pub fn dequantize(&self, i: u32) -> f32 {
        let delta = self.max - self.min;
        (i as f32 / self.max_int as f32) * delta + self.min
    }
}

/// The wire layout of a compressed float: its integer in `cf.bits` bits, at most
/// `cf.max_int` (checked on read).
#[inline(always)]
pub fn serialize_quantized<S: Stream>(s: &mut S, i: &mut u32, cf: &CompressedFloat) -> BitResult<()> {
    let at = s.bits_processed();
    s.bits(i, cf.bits)?;
    if S::IS_READING && *i > cf.max_int {
        return Err(BitError::new(
            ErrorKind::OutOfRange {
                value: *i as i64,
                min: 0,
                max: cf.max_int as i64,
            },
            at,
        ));
    }
    Ok(())
}

pub fn serialize_compressed_float<S: Stream>(
    s: &mut S,
    value: &mut f32,
    min: f32,
    max: f32,
    res: f32,
) -> BitResult<()> {
    let at = s.bits_processed();
    let cf = CompressedFloat::new(min, max, res).ok_or(BitError::new(
        ErrorKind::Invalid {
            what: "compressed float range",
        },
        at,
    ))?;
    let mut i = if S::IS_WRITING { cf.quantize(*value) } else { 0 };
    serialize_quantized(s, &mut i, &cf)?;
    if S::IS_READING {
        *value = cf.dequantize(i);
    }
    Ok(())
}

pub fn serialize_vector<S: Stream>(s: &mut S, v: &mut [f32; 3]) -> BitResult<()> {
    v.iter_mut().try_for_each(|c| serialize_float(s, c))
}

pub fn serialize_compressed_vector<S: Stream>(
    s: &mut S,
    v: &mut [f32; 3],
    min: f32,
    max: f32,
    res: f32,
) -> BitResult<()> {
    v.iter_mut()
        .try_for_each(|c| serialize_compressed_float(s, c, min, max, res))
}

pub fn serialize_quaternion<S: Stream>(s: &mut S, q: &mut [f32; 4]) -> BitResult<()> {
    q.iter_mut().try_for_each(|c| serialize_float(s, c))
}

const SMALLEST_THREE_MIN: f32 = -std::f32::consts::FRAC_1_SQRT_2;
const SMALLEST_THREE_MAX: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// Maps one smallest-three integer back to its component.
pub fn smallest_three_component(i: u32, bits: u32) -> f32 {
    let scale = ((1u32 << bits) - 1) as f32;
    i as f32 / scale * (SMALLEST_THREE_MAX - SMALLEST_THREE_MIN) + SMALLEST_THREE_MIN
}

/// Rebuilds `[x, y, z, w]` from the index of the largest and the other three in order.
pub fn smallest_three_decode(largest: u32, small: [f32; 3]) -> [f32; 4] {
    let [a, b, c] = small;
    let big = (1.0 - a * a - b * b - c * c).max(0.0).sqrt();
    match largest & 3 {
        0 => [big, a, b, c],
        1 => [a, big, b, c],
        2 => [a, b, big, c],
        _ => [a, b, c, big],
    }
}

/// Widths of a smallest-three quaternion's four reads: the largest component's index,
/// then the other three.
pub const fn smallest_three_widths(bits: u32) -> [u32; 4] {
    [2, bits, bits, bits]
}

/// The wire layout of a smallest-three quaternion: 2 bits for the largest component's
/// index, then the other three in x,y,z,w order, each in `bits` (2..=10) bits.
#[inline(always)]
pub fn serialize_smallest_three_raw<S: Stream>(
    s: &mut S,
    largest: &mut u32,
    small: &mut [u32; 3],
    bits: u32,
) -> BitResult<()> {
    if !(2..=10).contains(&bits) {
        return Err(BitError::new(
            ErrorKind::Invalid {
                what: "smallest_three bits outside 2..=10",
            },
            s.bits_processed(),
        ));
    }
    let mut v = [*largest, small[0], small[1], small[2]];
    let res = s.bits_run(&mut v, &smallest_three_widths(bits));
    [*largest, small[0], small[1], small[2]] = v;
    res
}

/// A quaternion as its three smallest components over [-1/√2, +1/√2] (see
/// [`serialize_smallest_three_raw`] for the layout).
pub fn serialize_smallest_three<S: Stream>(s: &mut S, q: &mut [f32; 4], bits: u32) -> BitResult<()> {
    let scale = ((1u32 << bits.min(31)) - 1) as f32;
    let mut largest = 0u32;
    let mut ints = [0u32; 3];
    if S::IS_WRITING {
        for (i, c) in q.iter().enumerate() {
            if c.abs() > q[largest as usize].abs() {
                largest = i as u32;
            }
        }
        let sign = if q[largest as usize] < 0.0 { -1.0 } else { 1.0 };
        let mut k = 0;
        for (i, c) in q.iter().enumerate() {
            if i as u32 != largest {
                let normal = ((c * sign - SMALLEST_THREE_MIN) / (SMALLEST_THREE_MAX - SMALLEST_THREE_MIN))
                    .clamp(0.0, 1.0);
                ints[k] = (normal * scale + 0.5).floor() as u32;
                k += 1;
            }
        }
    }
    serialize_smallest_three_raw(s, &mut largest, &mut ints, bits)?;
    if S::IS_READING {
        *q = smallest_three_decode(largest, ints.map(|i| smallest_three_component(i, bits)));
    }
    Ok(())
}

pub fn serialize_align<S: Stream>(s: &mut S) -> BitResult<()> {
    s.align()
}

/// Align, then the bytes of `data`.
pub fn serialize_bytes<S: Stream>(s: &mut S, data: &mut [u8]) -> BitResult<()> {
    s.align()?;
    s.bytes(data)
}

/// Align, then `len` bytes into `data` (resized on read only after the length is known
/// to be available, so a hostile length cannot allocate).
pub fn serialize_byte_vec<S: Stream>(s: &mut S, data: &mut Vec<u8>, len: usize) -> BitResult<()> {
    s.align()?;
    if S::IS_READING {
        let needed = len as u64 * 8;
        if needed > s.bits_available() {
            return Err(BitError::new(
                ErrorKind::PastEnd {
                    needed,
                    available: s.bits_available(),
                },
                s.bits_processed(),
            ));
        }
        data.clear();
        data.resize(len, 0);
    } else if data.len() != len {
        return Err(BitError::new(
            ErrorKind::Invalid {
                what: "byte vector length differs from its count",
            },
            s.bits_processed(),
        ));
    }
    s.bytes(data)
}

/// `int(0, max-1)` length, then `bytes(length)`; no terminator.
pub fn serialize_string<S: Stream>(s: &mut S, value: &mut Vec<u8>, max: u32) -> BitResult<()> {
    let mut len = value.len() as i64;
    s.int(&mut len, 0, max.saturating_sub(1) as i64)?;
    serialize_byte_vec(s, value, len as usize)
}

/// The one-at-a-time hash of SPEC §1 (a–z upper-cased, start 0, no final mix).
pub const fn hash_string(name: &str) -> u32 {
    let b = name.as_bytes();
    let mut h: u32 = 0;
    let mut i = 0;
    while i < b.len() {
        h = h.wrapping_add(b[i].to_ascii_uppercase() as u32);
        h = h.wrapping_add(h << 10);
        h ^= h >> 6;
        i += 1;
    }
    h
}

/// `hash_string("end of packet")`.
pub const END_OF_PACKET: u32 = hash_string("end of packet");

/// Align, then the 32-bit magic.
#[inline(always)]
pub fn serialize_check<S: Stream>(s: &mut S, magic: u32) -> BitResult<()> {
    s.align()?;
    s.check(magic)
}

/// The article's relative object index ladder; `previous` starts at -1 and the list
/// ends with index `max`.
pub fn serialize_relative_index<S: Stream>(
    s: &mut S,
    previous: &mut i64,
    current: &mut i64,
    max: i64,
) -> BitResult<()> {
    let mut difference = 0i64;
    if S::IS_WRITING {
        if *current <= *previous || *current > max {
            return Err(BitError::new(
                ErrorKind::OutOfRange {
                    value: *current,
                    min: *previous + 1,
                    max,
                },
                s.bits_processed(),
            ));
        }
        difference = *current - *previous;
    }
    let mut plus_one = difference == 1;
    serialize_bool(s, &mut plus_one)?;
    if plus_one {
        *current = *previous + 1;
        *previous = *current;
        return Ok(());
    }
    for (lo, hi) in RELATIVE_INDEX_LADDER {
        let mut here = difference <= hi;
        serialize_bool(s, &mut here)?;
        if here {
            s.int(&mut difference, lo, hi)?;
            *current = *previous + difference;
            *previous = *current;
            return Ok(());
        }
    }
    let at = s.bits_processed();
    s.int(&mut difference, 126, max + 1)?;
    *current = *previous + difference;
    *previous = *current;
    if S::IS_READING && *current > max {
        return Err(BitError::new(
            ErrorKind::OutOfRange {
                value: *current,
                min: 0,
                max,
            },
            at,
        ));
    }
    Ok(())
}

/// The `(min, max)` difference of each flagged rung after the +1 bit.
pub const RELATIVE_INDEX_LADDER: [(i64, i64); 5] = [(2, 5), (6, 13), (14, 29), (30, 61), (62, 125)];
