//! Capture input and output: pcap/pcapng/gzip records read as borrowed frames (and
//! read back at an offset), and pcap/pcapng writers.

mod legacy;
pub mod merge;
pub mod reader;
pub mod writer;

pub use reader::{CaptureError, CaptureReader, Frame, show_as, shown};
