//! Zero-copy LSB-first bit reader (SPEC §1).
//!
//! The reference writer packs values LSB-first into a 64-bit scratch and flushes
//! little-endian 32-bit words, so bit `i` of the stream is bit `i % 8` of byte `i / 8`.
//! Reading a field is therefore one unaligned little-endian 8-byte load, a shift and a
//! mask, with a single bounds check against the bit length up front.

use super::error::{BitError, BitResult, ErrorKind};

#[derive(Debug, Clone)]
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: u64,
    len_bits: u64,
}

#[inline(always)]
fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// The little-endian 8 bytes at `byte`, zeros past the end. Near the end it is still
/// one load (the last 8 bytes, shifted down): assembling the tail through the stack cost
/// a call to memcpy and a store-forwarding stall on the last fields of every datagram.
#[inline(always)]
fn word_at(data: &[u8], byte: usize) -> u64 {
    // One comparison: `byte` is at most a datagram's length, far from overflowing.
    match data.get(byte..byte.wrapping_add(8)) {
        Some(&[a, b, c, d, e, f, g, h]) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => word_near_end(data, byte),
    }
}

#[inline]
fn word_near_end(data: &[u8], byte: usize) -> u64 {
    match data.last_chunk::<8>() {
        Some(last) => {
            let skip = byte.saturating_sub(data.len() - 8).min(8) as u32;
            u64::from_le_bytes(*last).checked_shr(8 * skip).unwrap_or(0)
        }
        None => data
            .get(byte..)
            .unwrap_or(&[])
            .iter()
            .rev()
            .fold(0, |w, &b| (w << 8) | u64::from(b)),
    }
}

impl<'a> BitReader<'a> {
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            len_bits: data.len() as u64 * 8,
        }
    }

    /// A reader positioned at `bit` (clamped to the end).
    #[inline]
    pub fn at(data: &'a [u8], bit: u64) -> Self {
        let mut r = Self::new(data);
        r.pos = bit.min(r.len_bits);
        r
    }

    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    #[inline]
    pub fn bits_read(&self) -> u64 {
        self.pos
    }

    #[inline]
    pub fn len_bits(&self) -> u64 {
        self.len_bits
    }

    /// `bits` (0..=32) bits at bit `pos`, which the caller has checked lie in `data`
    /// (the validation plan checks a run of fields once, then reads them).
    #[inline(always)]
    pub fn peek_at(data: &[u8], pos: u64, bits: u32) -> u32 {
        let word = word_at(data, (pos >> 3) as usize);
        ((word >> (pos & 7)) & mask(bits.min(32))) as u32
    }

    /// The bits of `mask` (a run of ones from bit 0, at most 32) at bit `pos`, which
    /// the caller has checked lie in `data`: [`BitReader::peek_at`] with the mask made
    /// before packets flow.
    #[inline(always)]
    pub fn peek_masked(data: &[u8], pos: u64, mask: u32) -> u32 {
        (word_at(data, (pos >> 3) as usize) >> (pos & 7)) as u32 & mask
    }

    #[inline]
    pub fn bits_remaining(&self) -> u64 {
        self.len_bits - self.pos
    }

    /// Zero bits needed to reach the next byte boundary.
    #[inline]
    pub fn align_bits(&self) -> u32 {
        ((8 - (self.pos & 7)) & 7) as u32
    }

    #[inline(always)]
    fn past_end(&self, needed: u64) -> BitError {
        BitError::new(
            ErrorKind::PastEnd {
                needed,
                available: self.bits_remaining(),
            },
            self.pos,
        )
    }

    /// Reads `bits` (0..=32) bits without consuming them.
    #[inline(always)]
    pub fn peek_bits(&self, bits: u32) -> BitResult<u32> {
        if bits > 32 {
            return Err(BitError::new(
                ErrorKind::Invalid {
                    what: "bit width over 32",
                },
                self.pos,
            ));
        }
        if self.pos + bits as u64 > self.len_bits {
            return Err(self.past_end(bits as u64));
        }
        let byte = (self.pos >> 3) as usize;
        let shift = (self.pos & 7) as u32;
        let word = word_at(self.data, byte);
        Ok(((word >> shift) & mask(bits)) as u32)
    }

    /// Reads `bits` (0..=32) bits, least significant first.
    #[inline(always)]
    pub fn read_bits(&mut self, bits: u32) -> BitResult<u32> {
        let v = self.peek_bits(bits)?;
        self.pos += bits as u64;
        Ok(v)
    }

    /// Skips `bits` bits (any count) or fails without moving.
    #[inline]
    pub fn skip_bits(&mut self, bits: u64) -> BitResult<()> {
        if bits > self.bits_remaining() {
            return Err(self.past_end(bits));
        }
        self.pos += bits;
        Ok(())
    }

    /// Consumes the pad bits up to the next byte boundary; they must be zero.
    #[inline]
    pub fn read_align(&mut self) -> BitResult<u32> {
        let pad = self.align_bits();
        if pad == 0 {
            return Ok(0);
        }
        let at = self.pos;
        let v = self.read_bits(pad)?;
        if v != 0 {
            return Err(BitError::new(
                ErrorKind::NonZeroPadding { value: v, bits: pad },
                at,
            ));
        }
        Ok(pad)
    }

    /// The pad bits to the next byte boundary when the byte was filled most significant
    /// bit first (its low bits are the pad); they must be zero.
    #[inline]
    pub fn read_align_msb(&mut self) -> BitResult<u32> {
        let pad = self.align_bits();
        if pad == 0 {
            return Ok(0);
        }
        let at = self.pos;
        let v = super::msb::read_msb(self.data, at, pad).ok_or_else(|| self.past_end(pad as u64))?;
        if v != 0 {
            return Err(BitError::new(
                ErrorKind::NonZeroPadding {
                    value: v as u32,
                    bits: pad,
                },
                at,
            ));
        }
        self.pos += pad as u64;
        Ok(pad)
    }

    /// `int(min, max)`: `value - min` in `bits_required(min, max)` bits. A value over `max`
    /// fails with `OutOfRange` carrying the value read.
    #[inline(always)]
    pub fn read_int(&mut self, min: i64, max: i64) -> BitResult<i64> {
        let at = self.pos;
        let width = super::width::int_width(min, max).ok_or(BitError::new(
            ErrorKind::Invalid {
                what: "int range with min > max or wider than 32 bits",
            },
            at,
        ))?;
        let v = min + self.read_bits(width)? as i64;
        if v > max {
            return Err(BitError::new(ErrorKind::OutOfRange { value: v, min, max }, at));
        }
        Ok(v)
    }

    /// Borrows `n` whole bytes; the reader must be byte aligned.
    #[inline]
    pub fn read_bytes(&mut self, n: usize) -> BitResult<&'a [u8]> {
        if self.pos & 7 != 0 {
            return Err(BitError::new(
                ErrorKind::Invalid {
                    what: "bytes read while not byte aligned",
                },
                self.pos,
            ));
        }
        let needed = n as u64 * 8;
        if needed > self.bits_remaining() {
            return Err(self.past_end(needed));
        }
        let start = (self.pos >> 3) as usize;
        let out = self.data.get(start..start + n).ok_or(self.past_end(needed))?;
        self.pos += needed;
        Ok(out)
    }

    /// The bytes from the current (aligned) position to the end.
    #[inline]
    pub fn read_rest(&mut self) -> BitResult<&'a [u8]> {
        let n = (self.bits_remaining() / 8) as usize;
        self.read_bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit `i` of the stream, one at a time: the definition `peek_at` must agree with.
    fn naive(data: &[u8], pos: u64, bits: u32) -> u32 {
        (0..bits as u64)
            .map(|i| {
                let at = pos + i;
                let bit = data.get((at / 8) as usize).map_or(0, |b| (b >> (at % 8)) & 1);
                u32::from(bit) << i
            })
            .sum()
    }

    #[test]
    fn peek_at_agrees_bit_by_bit_near_the_end_and_in_short_data() {
        let bytes: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
        for len in 0..bytes.len() {
            let data = &bytes[..len];
            for pos in 0..=(len as u64 * 8) {
                for bits in [0, 1, 7, 13, 21, 32] {
                    let bits = bits.min((len as u64 * 8 - pos) as u32);
                    assert_eq!(
                        BitReader::peek_at(data, pos, bits),
                        naive(data, pos, bits),
                        "len {len} pos {pos} bits {bits}"
                    );
                    assert_eq!(
                        BitReader::at(data, pos).peek_bits(bits).ok(),
                        Some(naive(data, pos, bits))
                    );
                }
            }
        }
    }
}
