//! Capture input: files (pcap, pcapng, gzip) and the link/IP/UDP decode of each frame.

pub mod decode;
pub mod ipfrag;
pub mod reader;
pub mod writer;

pub use decode::{Decoded, IcmpTooBig, IpInfo, QuotedDatagram, decode};
pub use reader::{CaptureError, CaptureReader, Frame};
