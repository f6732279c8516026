//! Values for the byte-level primitives the generator writes (most-significant-first
//! fields, whole-byte integers in either order).

use super::rng::Rng;
use gpcap_dissect::program::Msb;

/// A random value for an MSB-first field, or the role's (its raw bits).
pub fn msb_value(rng: &mut Rng, m: Msb, role: Option<u64>) -> u64 {
    let w = m.width();
    let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
    match m {
        Msb::Int { min, max } => {
            let v = role.map_or_else(|| rng.range(min, max), |r| r as i64);
            (v.wrapping_sub(min) as u64) & mask
        }
        Msb::Float => ((rng.unit() as f32 - 0.5) * 2000.0).to_bits() as u64,
        Msb::Double => ((rng.unit() - 0.5) * 1e6).to_bits(),
        _ => role.unwrap_or_else(|| rng.next_u64()) & mask,
    }
}

/// What expressions read of an MSB-first field written with raw bits `v`.
pub fn msb_slot(m: Msb, v: u64) -> i64 {
    match m {
        Msb::Int { min, .. } => min.wrapping_add(v as i64),
        _ => v as i64,
    }
}

/// `v`'s low `n` bytes, most significant first when `big`.
pub fn byte_int_bytes(v: u64, n: u32, big: bool) -> Vec<u8> {
    let le = v.to_le_bytes();
    let mut b = le[..n as usize].to_vec();
    if big {
        b.reverse();
    }
    b
}
