//! Capture input and output: pcap/pcapng/gzip records read as borrowed frames (and
//! read back at an offset), and pcap/pcapng writers.

mod error;
mod legacy;
pub(crate) mod merge;
pub(crate) mod reader;
pub(crate) mod writer;

pub use error::{
    BlockLength, CaptureError, CaptureErrorKind, IoFailure, IoOp, Malformed, Missing, NotACapture, Refill,
    Truncation,
};
pub use merge::{Merged, merge_files};
pub use reader::{CaptureReader, Frame, show_as, shown};
pub use writer::{PcapNgWriter, PcapWriter};
