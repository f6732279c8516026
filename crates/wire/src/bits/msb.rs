//! Most-significant-bit-first reads, and the byte-level encodings real protocols use
//! beside the articles' LSB-first packing: network-order words (ENet, RakNet), LEB128
//! varints (protobuf, QUIC-like protocols), zigzag for signed varints.
//!
//! A position is a bit index as everywhere else: bit `i` of the stream is bit
//! `7 - i % 8` of byte `i / 8` here, so `n` bits from a byte boundary, `n` a multiple of
//! 8, are a big-endian integer.

/// `n` (0..=64) bits from bit `pos`, the first read the most significant; `None` past
/// the end.
#[inline]
pub fn read_msb(data: &[u8], pos: u64, n: u32) -> Option<u64> {
    if n == 0 {
        return Some(0);
    }
    if n > 64 {
        return None;
    }
    let end = pos.checked_add(n as u64)?;
    if end > (data.len() as u64) * 8 {
        return None;
    }
    let first = (pos / 8) as usize;
    let last = ((end - 1) / 8) as usize;
    // At most 9 bytes: 64 bits starting mid-byte.
    let acc = data[first..=last].iter().fold(0u128, |a, &b| a << 8 | b as u128);
    let shift = ((last + 1) as u64 * 8 - end) as u32;
    let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    Some((acc >> shift) as u64 & mask)
}

/// An integer of `bytes` (1..=8) whole bytes from `pos`, big- or little-endian,
/// sign-extended when `signed`; `None` past the end.
#[inline]
pub fn read_byte_int(data: &[u8], pos: u64, bytes: u32, big: bool, signed: bool) -> Option<i64> {
    if !(1..=8).contains(&bytes) {
        return None;
    }
    let mut v = 0u64;
    for i in 0..bytes as u64 {
        let b = read_msb(data, pos + 8 * i, 8)?;
        v = if big { v << 8 | b } else { v | b << (8 * i) };
    }
    Some(extend(v, bytes * 8, signed))
}

/// `v`'s low `bits` bits as a signed value when `signed`.
#[inline]
pub fn extend(v: u64, bits: u32, signed: bool) -> i64 {
    if !signed || bits >= 64 {
        return v as i64;
    }
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The datagram ends before the last byte (top bit clear).
    PastEnd,
    /// More than 10 bytes, or a tenth byte over 1: the value does not fit 64 bits.
    TooLong,
}

/// An unsigned LEB128 from bit `pos`: the value and its length in bytes.
#[inline]
pub fn read_varint(data: &[u8], pos: u64) -> Result<(u64, u32), VarintError> {
    let mut v = 0u64;
    for i in 0..10u32 {
        let b = read_msb(data, pos + 8 * i as u64, 8).ok_or(VarintError::PastEnd)?;
        if i == 9 && b > 1 {
            return Err(VarintError::TooLong);
        }
        v |= (b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err(VarintError::TooLong)
}

/// The bytes of `v` as unsigned LEB128 (the generator's side).
#[inline]
pub fn varint_bytes(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Zigzag: 0, 1, 2, 3… ↔ 0, -1, 1, -2….
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

#[cfg(test)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msb_reads_network_order_and_bit_fields_inside_words() {
        // ENet's peer word 0x8FFF: sent-time flag, compressed flag, session 2 bits, peer 12.
        let d = [0x8f, 0xff, 0x20, 0x47];
        assert_eq!(read_msb(&d, 0, 16), Some(0x8fff));
        assert_eq!(read_msb(&d, 0, 1), Some(1));
        assert_eq!(read_msb(&d, 1, 1), Some(0));
        assert_eq!(read_msb(&d, 2, 2), Some(0));
        assert_eq!(read_msb(&d, 4, 12), Some(0xfff));
        assert_eq!(read_msb(&d, 0, 32), Some(0x8fff2047));
        assert_eq!(read_msb(&d, 4, 28), Some(0xfff2047));
        assert_eq!(read_msb(&d, 1, 32), None);
        let e = [0xff; 9];
        assert_eq!(read_msb(&e, 4, 64), Some(u64::MAX));
    }

    #[test]
    fn byte_ints_in_both_orders() {
        let d = [0x00, 0x01, 0xff, 0xfe];
        assert_eq!(read_byte_int(&d, 0, 2, true, false), Some(1));
        assert_eq!(read_byte_int(&d, 0, 2, false, false), Some(256));
        assert_eq!(read_byte_int(&d, 16, 2, true, true), Some(-2));
        assert_eq!(read_byte_int(&d, 16, 2, false, true), Some(-257));
        assert_eq!(read_byte_int(&d, 24, 2, true, false), None);
    }

    #[test]
    fn varints_round_trip_and_refuse_overlong() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            varint_bytes(v, &mut b);
            assert_eq!(read_varint(&b, 0), Ok((v, b.len() as u32)));
        }
        assert_eq!(read_varint(&[0x80, 0x80], 0), Err(VarintError::PastEnd));
        assert_eq!(read_varint(&[0xff; 11], 0), Err(VarintError::TooLong));
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
    }
}
