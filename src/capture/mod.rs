//! Capture input and output: pcap/pcapng/gzip records read as borrowed frames (and
//! read back at an offset), and pcap/pcapng writers.

mod error;
mod legacy;
pub mod merge;
pub mod reader;
pub mod writer;

pub use error::{
    BlockLength, CaptureError, CaptureErrorKind, IoFailure, IoOp, Malformed, Missing, NotACapture, Refill,
    Truncation,
};
pub use reader::{CaptureReader, Frame, show_as, shown};
