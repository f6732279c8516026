//! Why a capture could not be read, as values a program can match on: where (file, byte
//! offset, frame) and what ([`CaptureErrorKind`]); `Display` says it in words.

use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// A capture that could not be opened or read on, or a frame that is not where it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {kind}{}", self.location())]
pub struct CaptureError {
    /// The file as it is shown to people (a stream read from `-` keeps that name).
    pub file: String,
    /// Byte offset in the (decompressed) file.
    pub offset: u64,
    /// Frames read before the error.
    pub frame: u64,
    pub kind: CaptureErrorKind,
}

impl CaptureError {
    /// Where in the file, in words: nothing for a file that could not be opened (no byte
    /// of it was read).
    fn location(&self) -> String {
        match self.kind {
            CaptureErrorKind::Io { op: IoOp::Open, .. } => String::new(),
            _ => format!(" at byte offset {} (after frame {})", self.offset, self.frame),
        }
    }

    /// Nothing read yet: offset and frame 0.
    pub fn at_start(file: impl Into<String>, kind: CaptureErrorKind) -> Self {
        CaptureError {
            file: file.into(),
            offset: 0,
            frame: 0,
            kind,
        }
    }
}

/// Reports keep the error as JSON prints it: `file`, `offset`, `frame` and `message`.
impl Serialize for CaptureError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("CaptureError", 4)?;
        st.serialize_field("file", &self.file)?;
        st.serialize_field("offset", &self.offset)?;
        st.serialize_field("frame", &self.frame)?;
        st.serialize_field("message", &self.kind.to_string())?;
        st.end()
    }
}

/// What went wrong, by kind: not a capture, cut short, malformed, or I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureErrorKind {
    /// Opening, reading, seeking or writing the file failed.
    #[error("{op}: {error}")]
    Io { op: IoOp, error: IoFailure },
    /// The file does not start as a pcap or pcapng capture does.
    #[error(transparent)]
    NotACapture(#[from] NotACapture),
    /// The file (or its gzip stream) ends inside a record: the frames before it are good.
    #[error(transparent)]
    Truncated(#[from] Truncation),
    /// A record that does not parse: reading stops at it.
    #[error(transparent)]
    Malformed(#[from] Malformed),
    /// A frame read again is not where it was found.
    #[error(transparent)]
    Missing(#[from] Missing),
    /// Formatting this frame failed, so output stops before it.
    #[error("formatting this packet failed: output stops before it")]
    OutputStopped,
    /// A thread reading or analyzing captures panicked.
    #[error("an analysis thread failed")]
    ThreadFailed,
}

impl CaptureErrorKind {
    pub fn io(op: IoOp, error: std::io::Error) -> Self {
        CaptureErrorKind::Io {
            op,
            error: IoFailure(Arc::new(error)),
        }
    }
}

/// The I/O operation that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    Open,
    Read,
    Seek,
    Write,
    /// Reading a record past the header.
    ReadRecord,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Open => "cannot open",
            IoOp::Read => "cannot read",
            IoOp::Seek => "cannot seek",
            IoOp::Write => "cannot write",
            IoOp::ReadRecord => "read failed",
        })
    }
}

/// An I/O error, shared so that a [`CaptureError`] stays `Clone`; equal when their kind
/// and words are.
#[derive(Debug, Clone)]
pub struct IoFailure(pub Arc<std::io::Error>);

impl IoFailure {
    pub fn error(&self) -> &std::io::Error {
        &self.0
    }
}

impl PartialEq for IoFailure {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for IoFailure {}

impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Why the file's header is not a capture's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotACapture {
    #[error("not a pcap or pcapng file (unknown magic)")]
    UnknownMagic,
    #[error("file too short to hold a capture header")]
    TooShort,
    #[error("cannot read the capture header (a read failed)")]
    ReadFailed,
    #[error("the capture header is larger than the read buffer")]
    TooLarge,
    #[error("the capture header does not parse (malformed)")]
    Malformed,
}

/// How the file was cut short (not a frame cut by the snaplen: that is a frame's
/// `origlen` over its length, read as usual).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Truncation {
    /// The last record is incomplete: `bytes` of it were there.
    #[error("last record truncated ({bytes} bytes of an incomplete record)")]
    LastRecord { bytes: usize },
    #[error("the gzip stream is cut short; every complete frame before the cut was read")]
    GzipCut,
    #[error("the file ends inside a record")]
    InsideRecord,
}

/// A record that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Larger than the reader's bound on one record.
    #[error("record larger than {max_mib} MiB")]
    TooLarge { max_mib: usize },
    /// A classic pcap record header claiming more than the snaplen allows.
    #[error(
        "corrupt record header: it claims {caplen} captured bytes, more than the file allows; reading stopped here"
    )]
    CorruptHeader { caplen: u32, frames_before: u64 },
    #[error("record data outside the read buffer")]
    OutsideBuffer,
    #[error("malformed record: its header, length or contents do not parse")]
    Record,
    /// A pcapng block whose length field cannot be right.
    #[error(transparent)]
    BlockLength(BlockLength),
    #[error("the file could not be read further (a read failed)")]
    ReadFailed,
    #[error("a section header of an unknown format")]
    UnknownSection,
    #[error("a record larger than the read buffer")]
    LargerThanBuffer,
    /// A pcapng packet block naming an interface no block described.
    #[error("packet block names interface {id} but only {described} are described")]
    UnknownInterface { id: u32, described: usize },
    #[error("simple packet block before any interface")]
    SimpleBeforeInterface,
    /// The parser stopped while refilling its buffer.
    #[error("read failed ({0})")]
    Refill(Refill),
}

/// What is wrong with a pcapng block's length (malformed, not cut short).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BlockLength {
    #[error("pcapng block length {0} is under the 12-byte minimum (malformed, not cut short)")]
    UnderMinimum(u32),
    #[error("pcapng block length {0} is not a multiple of 4 (malformed, not cut short)")]
    NotMultipleOf4(u32),
    #[error("pcapng block of {0} bytes does not parse: its contents or trailing length are malformed")]
    Contents(u32),
}

/// Why the parser could not refill its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refill {
    #[error("the file could not be read")]
    Read,
    #[error("a record larger than the read buffer")]
    BufferTooSmall,
    #[error("an unknown header")]
    UnknownHeader,
    #[error("the data does not parse")]
    DoesNotParse,
}

/// A frame looked for again that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    #[error("no packet record at this offset")]
    NoRecordAt,
    #[error("the record of this frame is not there (the file changed?)")]
    RecordGone,
}
