//! Capture input and output: pcap/pcapng/gzip records read as borrowed frames (and
//! read back at an offset), and pcap/pcapng writers.

mod error;
mod frame_at;
mod legacy;
pub(crate) mod merge;
pub(crate) mod reader;
pub(crate) mod writer;

pub use error::{
    BlockLength, CaptureError, CaptureErrorKind, IoFailure, IoOp, Malformed, Missing, NotACapture, Refill,
    Truncation,
};
pub use frame_at::{FrameAt, OwnedFrame};
pub use merge::{Merged, merge_files};
pub use reader::{CaptureReader, Frame, show_as, shown};
pub use writer::{PcapNgWriter, PcapWriter};

/// A classic pcap header's link type: its low 26 bits, as libpcap reads it
/// (`LT_LINKTYPE`); the bits above say whether frames end in an FCS and how long it is,
/// which decoding does not need (it reads up to the IP datagram's own length).
pub(crate) fn link_type(network: u32) -> i32 {
    (network & 0x03ff_ffff) as i32
}
