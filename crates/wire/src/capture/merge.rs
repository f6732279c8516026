//! Several captures interleaved by timestamp into one pcapng, as mergecap does: the
//! trace a capture of all their links at once would have been. Streams (one frame held
//! per input, its buffer reused); ties keep the order the inputs were given in.

use super::error::{CaptureError, CaptureErrorKind, IoOp};
use super::reader::CaptureReader;
use super::writer::PcapNgWriter;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One input: its reader and the frame it offers next (copied out of the reader).
struct Input {
    reader: CaptureReader,
    next: Option<(i64, i32, u32, Vec<u8>)>,
    /// Reading stopped on this error (the frames before it were merged).
    error: Option<CaptureError>,
}

impl Input {
    fn advance(&mut self) {
        let mut buf = self.next.take().map(|n| n.3).unwrap_or_default();
        match self.reader.next_frame() {
            Ok(Some(f)) => {
                buf.clear();
                buf.extend_from_slice(f.data);
                self.next = Some((f.ts_ns, f.linktype, f.origlen, buf));
            }
            Ok(None) => {}
            Err(e) => self.error = Some(e),
        }
    }
}

/// What merging read: frames written, and the inputs whose reading stopped early.
#[derive(Debug, Default)]
pub struct Merged {
    pub frames: u64,
    pub errors: Vec<CaptureError>,
}

/// Writes `paths` interleaved by timestamp to `out` (pcapng, nanosecond timestamps,
/// one interface per input and link type).
pub fn merge_files(paths: &[PathBuf], out: &Path) -> Result<Merged, CaptureError> {
    let werr = |e: std::io::Error| {
        CaptureError::at_start(out.display().to_string(), CaptureErrorKind::io(IoOp::Write, e))
    };
    let mut inputs = Vec::with_capacity(paths.len());
    for p in paths {
        let mut i = Input {
            reader: CaptureReader::open(p)?,
            next: None,
            error: None,
        };
        i.advance();
        inputs.push(i);
    }
    let file = std::fs::File::create(out).map_err(werr)?;
    let mut w = PcapNgWriter::new(std::io::BufWriter::with_capacity(1 << 20, file)).map_err(werr)?;
    let mut interfaces: Vec<(usize, i32)> = Vec::new();
    let mut merged = Merged::default();
    while let Some(k) = (0..inputs.len())
        .filter(|&k| inputs[k].next.is_some())
        .min_by_key(|&k| inputs[k].next.as_ref().map(|n| n.0))
    {
        if let Some((ts, linktype, origlen, data)) = &inputs[k].next {
            let id = match interfaces.iter().position(|&x| x == (k, *linktype)) {
                Some(id) => id,
                None => {
                    w.interface(*linktype as u16, 262_144, true).map_err(werr)?;
                    interfaces.push((k, *linktype));
                    interfaces.len() - 1
                }
            };
            w.packet(id as u32, (*ts).max(0) as u64, data, *origlen)
                .map_err(werr)?;
            merged.frames += 1;
        }
        inputs[k].advance();
    }
    w.into_inner().flush().map_err(werr)?;
    merged.errors = inputs.into_iter().filter_map(|i| i.error).collect();
    Ok(merged)
}
