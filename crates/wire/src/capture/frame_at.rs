//! Single frames read back by the offset of their record (the TUI's detail view, a row
//! scan), through the same reader as a whole file.

use super::error::{CaptureError, CaptureErrorKind as Kind, IoOp, Missing};
use super::reader::{CaptureReader, gzip_or_plain, shown};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// A frame read back on its own, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFrame {
    pub ts_ns: i64,
    pub linktype: i32,
    pub origlen: u32,
    pub data: Vec<u8>,
}

/// Reads single frames back by the offset of their record (the TUI's detail view), with
/// the same reader as everything else: the file's head (everything before its first
/// record: headers and interface descriptions) is kept and replayed before the record.
pub struct FrameAt {
    path: std::path::PathBuf,
    head: Vec<u8>,
    gzip: bool,
}

impl FrameAt {
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let mut r = CaptureReader::open(path)?;
        let first = match r.next_frame()? {
            Some(f) => f.offset,
            None => r.offset(),
        };
        let name = shown(path);
        let err = |e: std::io::Error| CaptureError::at_start(&name, Kind::io(IoOp::Read, e));
        let mut head = Vec::new();
        let (mut src, _) = gzip_or_plain(File::open(path).map_err(err)?).map_err(err)?;
        src.by_ref().take(first).read_to_end(&mut head).map_err(err)?;
        let mut magic = [0u8; 2];
        let gzip = File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
            && magic == [0x1f, 0x8b];
        Ok(FrameAt {
            path: path.to_path_buf(),
            head,
            gzip,
        })
    }

    /// Whether a record is reached without reading all that comes before it (not gzip).
    pub fn seekable(&self) -> bool {
        !self.gzip
    }

    /// The file opened, and how a fault at `offset` of it is told.
    pub fn open_at(&self, offset: u64) -> Result<(File, impl Fn(Kind) -> CaptureError), CaptureError> {
        let file = shown(&self.path);
        let err = move |kind: Kind| CaptureError {
            file: file.clone(),
            offset,
            frame: 0,
            kind,
        };
        let f = File::open(&self.path).map_err(|e| err(Kind::io(IoOp::Open, e)))?;
        Ok((f, err))
    }

    /// A reader of the records from `offset` of an uncompressed file on (the head
    /// replayed first), and what to add to the offsets it reports to get the file's.
    pub fn records_from(&self, offset: u64) -> Result<(CaptureReader, i64), CaptureError> {
        use std::io::Seek;
        let name = shown(&self.path);
        let (mut f, err) = self.open_at(offset)?;
        f.seek(std::io::SeekFrom::Start(offset))
            .map_err(|e| err(Kind::io(IoOp::Seek, e)))?;
        let stream = std::io::Cursor::new(self.head.clone()).chain(f);
        let r = CaptureReader::from_read(&name, stream)?;
        Ok((r, offset as i64 - self.head.len() as i64))
    }

    /// The frame whose record starts at `offset` of the (decompressed) file.
    pub fn frame(&self, offset: u64) -> Result<OwnedFrame, CaptureError> {
        let name = shown(&self.path);
        let (mut f, err) = self.open_at(offset)?;
        let body: Box<dyn Read + Send> = if self.gzip {
            // No seeking in a gzip stream: read up to the record.
            let (mut gz, _) = gzip_or_plain(f).map_err(|e| err(Kind::io(IoOp::Read, e)))?;
            std::io::copy(&mut gz.by_ref().take(offset), &mut std::io::sink())
                .map_err(|e| err(Kind::io(IoOp::Read, e)))?;
            gz
        } else {
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(offset))
                .map_err(|e| err(Kind::io(IoOp::Seek, e)))?;
            Box::new(BufReader::new(f))
        };
        let stream = std::io::Cursor::new(self.head.clone()).chain(body);
        let mut r = CaptureReader::from_read(&name, stream)?;
        match r.next_frame()? {
            Some(fr) => Ok(OwnedFrame {
                ts_ns: fr.ts_ns,
                linktype: fr.linktype,
                origlen: fr.origlen,
                data: fr.data.to_vec(),
            }),
            None => Err(err(Missing::NoRecordAt.into())),
        }
    }
}
