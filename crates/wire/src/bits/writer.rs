//! LSB-first bit writer with the reference layout: a 64-bit scratch flushed as
//! little-endian 32-bit words; the final partial word sends only `ceil(bits/8)` bytes.

use super::error::{BitError, BitResult, ErrorKind};

#[derive(Debug, Default, Clone)]
pub struct BitWriter {
    out: Vec<u8>,
    scratch: u64,
    scratch_bits: u32,
}

impl BitWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reuses `buf` (cleared) so a caller can write many packets without allocating.
    pub fn with_buffer(mut buf: Vec<u8>) -> Self {
        buf.clear();
        BitWriter {
            out: buf,
            scratch: 0,
            scratch_bits: 0,
        }
    }

    #[inline]
    pub fn bits_written(&self) -> u64 {
        self.out.len() as u64 * 8 + self.scratch_bits as u64
    }

    #[inline]
    pub fn align_bits(&self) -> u32 {
        (8 - (self.scratch_bits & 7)) & 7
    }

    fn invalid(&self, what: &'static str) -> BitError {
        BitError::new(ErrorKind::Invalid { what }, self.bits_written())
    }

    /// Writes the low `bits` (0..=32) bits of `value`; higher bits must be zero.
    #[inline]
    pub fn write_bits(&mut self, value: u32, bits: u32) -> BitResult<()> {
        if bits > 32 {
            return Err(self.invalid("bit width over 32"));
        }
        if bits < 32 && (value >> bits) != 0 {
            return Err(self.invalid("value wider than its bit width"));
        }
        self.scratch |= (value as u64) << self.scratch_bits;
        self.scratch_bits += bits;
        if self.scratch_bits >= 32 {
            self.out.extend_from_slice(&(self.scratch as u32).to_le_bytes());
            self.scratch >>= 32;
            self.scratch_bits -= 32;
        }
        Ok(())
    }

    /// Zero bits up to the next byte boundary; returns how many.
    pub fn write_align(&mut self) -> BitResult<u32> {
        let pad = self.align_bits();
        self.write_bits(0, pad)?;
        Ok(pad)
    }

    /// Appends whole bytes; the writer must be byte aligned.
    pub fn write_bytes(&mut self, data: &[u8]) -> BitResult<()> {
        if self.scratch_bits & 7 != 0 {
            return Err(self.invalid("bytes written while not byte aligned"));
        }
        while self.scratch_bits >= 8 {
            self.out.push(self.scratch as u8);
            self.scratch >>= 8;
            self.scratch_bits -= 8;
        }
        self.out.extend_from_slice(data);
        Ok(())
    }

    /// Flushes the partial word and returns the bytes to send.
    pub fn finish(mut self) -> Vec<u8> {
        let tail = self.scratch_bits.div_ceil(8);
        for _ in 0..tail {
            self.out.push(self.scratch as u8);
            self.scratch >>= 8;
        }
        self.out
    }
}
