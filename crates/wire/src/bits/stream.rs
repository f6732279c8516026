//! The article's unified serialize idea: one generic `serialize` per structure drives a
//! [`ReadStream`], a [`WriteStream`] or a [`MeasureStream`]. Each is a separate type, so
//! every call is monomorphised: no virtual call per field.

use super::error::{BitError, BitResult, ErrorKind};
use super::reader::BitReader;
use super::width::int_width;
use super::writer::BitWriter;
use serde::Serialize;

fn bad_range(at: u64) -> BitError {
    BitError::new(
        ErrorKind::Invalid {
            what: "int range with min > max or wider than 32 bits",
        },
        at,
    )
}

/// One primitive as the reference reader consumed it (the `prims` of the conformance
/// vectors); produced only by a tracing [`ReadStream`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "prim", rename_all = "snake_case")]
pub enum Prim {
    Bits { at: u64, bits: u32, value: u32 },
    Int { at: u64, min: i64, max: i64, value: i64 },
    Align { at: u64, bits: u32 },
    Bytes { at: u64, len: usize },
    Check { at: u64, expected: u32, value: u32 },
}

/// Receives each primitive a [`ReadStream`] consumes. `()` records nothing and compiles away.
pub trait Tracer {
    #[inline(always)]
    fn record(&mut self, _prim: Prim) {}
}

impl Tracer for () {}

impl Tracer for Vec<Prim> {
    fn record(&mut self, prim: Prim) {
        self.push(prim);
    }
}

impl<T: Tracer + ?Sized> Tracer for &mut T {
    #[inline(always)]
    fn record(&mut self, prim: Prim) {
        (**self).record(prim)
    }
}

pub trait Stream {
    const IS_READING: bool;
    const IS_WRITING: bool = !Self::IS_READING;

    /// `bits` (0..=32) raw bits.
    fn bits(&mut self, value: &mut u32, bits: u32) -> BitResult<()>;
    /// `value - min` in `bits_required(min, max)` bits; a read value over `max` fails.
    fn int(&mut self, value: &mut i64, min: i64, max: i64) -> BitResult<()>;
    /// Zero bits to the next byte boundary.
    fn align(&mut self) -> BitResult<()>;
    /// Whole bytes; the stream must already be aligned.
    fn bytes(&mut self, data: &mut [u8]) -> BitResult<()>;
    /// The 32-bit magic of a serialization check (alignment is the caller's).
    fn check(&mut self, magic: u32) -> BitResult<()>;
    /// Bits read, written or measured so far.
    fn bits_processed(&self) -> u64;
    /// Bits left to read; unbounded for writing and measuring.
    fn bits_available(&self) -> u64 {
        u64::MAX
    }

    /// Several fields in a row, `widths[i]` bits each: one read where the stream can (an
    /// untraced reader, when they fit 32 bits), else field by field.
    #[inline(always)]
    fn bits_run(&mut self, values: &mut [u32], widths: &[u32]) -> BitResult<()> {
        for (v, &w) in values.iter_mut().zip(widths) {
            self.bits(v, w)?;
        }
        Ok(())
    }
}

pub struct ReadStream<'a, T: Tracer = ()> {
    reader: BitReader<'a>,
    pub tracer: T,
}

impl<'a> ReadStream<'a, ()> {
    pub fn new(data: &'a [u8]) -> Self {
        ReadStream {
            reader: BitReader::new(data),
            tracer: (),
        }
    }
}

impl<'a, T: Tracer> ReadStream<'a, T> {
    pub fn with_tracer(data: &'a [u8], tracer: T) -> Self {
        ReadStream {
            reader: BitReader::new(data),
            tracer,
        }
    }

    /// A stream that goes on from `reader`'s position.
    pub fn from_reader(reader: BitReader<'a>, tracer: T) -> Self {
        ReadStream { reader, tracer }
    }

    pub fn reader(&self) -> &BitReader<'a> {
        &self.reader
    }

    pub fn into_reader(self) -> BitReader<'a> {
        self.reader
    }
}

impl<T: Tracer> Stream for ReadStream<'_, T> {
    const IS_READING: bool = true;

    #[inline(always)]
    fn bits(&mut self, value: &mut u32, bits: u32) -> BitResult<()> {
        let at = self.reader.bits_read();
        *value = self.reader.read_bits(bits)?;
        self.tracer.record(Prim::Bits {
            at,
            bits,
            value: *value,
        });
        Ok(())
    }

    #[inline(always)]
    fn int(&mut self, value: &mut i64, min: i64, max: i64) -> BitResult<()> {
        let at = self.reader.bits_read();
        let read = self.reader.read_int(min, max);
        let traced = match read {
            Ok(v) => Some(v),
            Err(BitError {
                kind: ErrorKind::OutOfRange { value, .. },
                ..
            }) => Some(value),
            Err(_) => None,
        };
        if let Some(v) = traced {
            self.tracer.record(Prim::Int {
                at,
                min,
                max,
                value: v,
            });
        }
        *value = read?;
        Ok(())
    }

    #[inline]
    fn align(&mut self) -> BitResult<()> {
        let at = self.reader.bits_read();
        let bits = self.reader.read_align()?;
        if bits > 0 {
            self.tracer.record(Prim::Align { at, bits });
        }
        Ok(())
    }

    fn bytes(&mut self, data: &mut [u8]) -> BitResult<()> {
        let at = self.reader.bits_read();
        let src = self.reader.read_bytes(data.len())?;
        data.copy_from_slice(src);
        self.tracer.record(Prim::Bytes { at, len: data.len() });
        Ok(())
    }

    #[inline]
    fn check(&mut self, magic: u32) -> BitResult<()> {
        let at = self.reader.bits_read();
        let got = self.reader.read_bits(32)?;
        self.tracer.record(Prim::Check {
            at,
            expected: magic,
            value: got,
        });
        if got != magic {
            return Err(BitError::new(
                ErrorKind::CheckMismatch { expected: magic, got },
                at,
            ));
        }
        Ok(())
    }

    fn bits_processed(&self) -> u64 {
        self.reader.bits_read()
    }

    fn bits_available(&self) -> u64 {
        self.reader.bits_remaining()
    }
}

/// The bare reader is an untraced read stream: the fastest way to read primitives.
impl Stream for BitReader<'_> {
    const IS_READING: bool = true;

    #[inline(always)]
    fn bits(&mut self, value: &mut u32, bits: u32) -> BitResult<()> {
        *value = self.read_bits(bits)?;
        Ok(())
    }

    #[inline(always)]
    fn int(&mut self, value: &mut i64, min: i64, max: i64) -> BitResult<()> {
        *value = self.read_int(min, max)?;
        Ok(())
    }

    #[inline(always)]
    fn align(&mut self) -> BitResult<()> {
        self.read_align().map(|_| ())
    }

    fn bytes(&mut self, data: &mut [u8]) -> BitResult<()> {
        data.copy_from_slice(self.read_bytes(data.len())?);
        Ok(())
    }

    #[inline(always)]
    fn check(&mut self, magic: u32) -> BitResult<()> {
        let at = self.bits_read();
        let got = self.read_bits(32)?;
        if got != magic {
            return Err(BitError::new(
                ErrorKind::CheckMismatch { expected: magic, got },
                at,
            ));
        }
        Ok(())
    }

    #[inline(always)]
    fn bits_processed(&self) -> u64 {
        self.bits_read()
    }

    #[inline(always)]
    fn bits_available(&self) -> u64 {
        self.bits_remaining()
    }

    #[inline(always)]
    fn bits_run(&mut self, values: &mut [u32], widths: &[u32]) -> BitResult<()> {
        let total: u32 = widths.iter().sum();
        if total > 32 {
            for (v, &w) in values.iter_mut().zip(widths) {
                *v = self.read_bits(w)?;
            }
            return Ok(());
        }
        // LSB first: the first field is in the low bits.
        let mut all = self.read_bits(total)? as u64;
        for (v, &w) in values.iter_mut().zip(widths) {
            *v = (all & ((1u64 << w) - 1)) as u32;
            all >>= w;
        }
        Ok(())
    }
}

/// Writes through the shared writer; its tracer sees every primitive written, as a
/// [`ReadStream`]'s sees every one read.
#[derive(Default)]
pub struct WriteStream<T: Tracer = ()> {
    pub writer: BitWriter,
    pub tracer: T,
}

impl WriteStream<()> {
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T: Tracer> WriteStream<T> {
    pub fn with_tracer(writer: BitWriter, tracer: T) -> Self {
        WriteStream { writer, tracer }
    }

    pub fn finish(self) -> Vec<u8> {
        self.writer.finish()
    }
}

impl<T: Tracer> Stream for WriteStream<T> {
    const IS_READING: bool = false;

    #[inline(always)]
    fn bits(&mut self, value: &mut u32, bits: u32) -> BitResult<()> {
        let at = self.writer.bits_written();
        self.writer.write_bits(*value, bits)?;
        self.tracer.record(Prim::Bits {
            at,
            bits,
            value: *value,
        });
        Ok(())
    }

    #[inline(always)]
    fn int(&mut self, value: &mut i64, min: i64, max: i64) -> BitResult<()> {
        let at = self.writer.bits_written();
        let width = int_width(min, max).ok_or_else(|| bad_range(at))?;
        if *value < min || *value > max {
            return Err(BitError::new(
                ErrorKind::OutOfRange {
                    value: *value,
                    min,
                    max,
                },
                at,
            ));
        }
        self.writer.write_bits((*value - min) as u32, width)?;
        self.tracer.record(Prim::Int {
            at,
            min,
            max,
            value: *value,
        });
        Ok(())
    }

    fn align(&mut self) -> BitResult<()> {
        let at = self.writer.bits_written();
        let bits = self.writer.write_align()?;
        if bits > 0 {
            self.tracer.record(Prim::Align { at, bits });
        }
        Ok(())
    }

    fn bytes(&mut self, data: &mut [u8]) -> BitResult<()> {
        let at = self.writer.bits_written();
        self.writer.write_bytes(data)?;
        self.tracer.record(Prim::Bytes { at, len: data.len() });
        Ok(())
    }

    fn check(&mut self, magic: u32) -> BitResult<()> {
        let at = self.writer.bits_written();
        self.writer.write_bits(magic, 32)?;
        self.tracer.record(Prim::Check {
            at,
            expected: magic,
            value: magic,
        });
        Ok(())
    }

    fn bits_processed(&self) -> u64 {
        self.writer.bits_written()
    }
}

/// Counts the bits a write would produce, exactly (alignment included).
#[derive(Default)]
pub struct MeasureStream {
    bits: u64,
}

impl MeasureStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes the written packet will take.
    pub fn bytes(&self) -> u64 {
        self.bits.div_ceil(8)
    }
}

impl Stream for MeasureStream {
    const IS_READING: bool = false;

    fn bits(&mut self, _value: &mut u32, bits: u32) -> BitResult<()> {
        if bits > 32 {
            return Err(BitError::new(
                ErrorKind::Invalid {
                    what: "bit width over 32",
                },
                self.bits,
            ));
        }
        self.bits += bits as u64;
        Ok(())
    }

    fn int(&mut self, value: &mut i64, min: i64, max: i64) -> BitResult<()> {
        let width = int_width(min, max).ok_or_else(|| bad_range(self.bits))?;
        if *value < min || *value > max {
            return Err(BitError::new(
                ErrorKind::OutOfRange {
                    value: *value,
                    min,
                    max,
                },
                self.bits,
            ));
        }
        self.bits += width as u64;
        Ok(())
    }

    fn align(&mut self) -> BitResult<()> {
        self.bits = self.bits.div_ceil(8) * 8;
        Ok(())
    }

    fn bytes(&mut self, data: &mut [u8]) -> BitResult<()> {
        self.bits += data.len() as u64 * 8;
        Ok(())
    }

    fn check(&mut self, _magic: u32) -> BitResult<()> {
        self.bits += 32;
        Ok(())
    }

    fn bits_processed(&self) -> u64 {
        self.bits
    }
}
