//! How many bits a range of values takes: what the reader, the streams and every
//! primitive's layout share.

/// `bits_required(min, max)` of SPEC §1, or `None` when `max - min` does not fit 32 bits
/// or `min > max`.
#[inline]
pub const fn int_width(min: i64, max: i64) -> Option<u32> {
    if min > max {
        return None;
    }
    let span = (max as i128) - (min as i128);
    if span > u32::MAX as i128 {
        return None;
    }
    Some(bits_required(span as u32))
}

/// Bits needed to hold `0..=span`.
#[inline]
pub const fn bits_required(span: u32) -> u32 {
    32 - span.leading_zeros()
}
