//! Why a frame's link, IP or UDP header could not be read, as a value: counted and shown
//! for every bad frame, so it allocates nothing; `Display` gives the words.

use etherparse::err::{LenError, ip::LaxHeaderSliceError, packet::SliceError};
use std::fmt;

/// What was wrong with a header (the layer is named beside it, in `Decoded::Malformed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformation {
    /// The frame is shorter than the link header: `have` bytes, `need` at least.
    Short { have: usize, need: usize },
    /// A header cut short (etherparse's account: which layer, how long, how much needed).
    Len(LenError),
    /// The IP header could not be read.
    Ip(LaxHeaderSliceError),
    /// A layer after the first could not be read.
    Slice(SliceError),
    /// The IP header says UDP and no UDP header follows.
    UdpMissing,
}

impl fmt::Display for Malformation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformation::Short { have, need } => write!(f, "{have} bytes, header needs {need}"),
            Malformation::Len(e) => e.fmt(f),
            Malformation::Ip(e) => e.fmt(f),
            Malformation::Slice(e) => e.fmt(f),
            Malformation::UdpMissing => f.write_str("udp header missing"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are those the reports printed when the reason was a string.
    #[test]
    fn the_words_are_the_old_ones() {
        let short = Malformation::Short { have: 3, need: 4 };
        assert_eq!(short.to_string(), "3 bytes, header needs 4");
        assert_eq!(Malformation::UdpMissing.to_string(), "udp header missing");
        let Err(e) = etherparse::UdpSlice::from_slice_lax(&[0; 3]) else {
            panic!("3 bytes are no UDP header")
        };
        assert_eq!(Malformation::Len(e.clone()).to_string(), e.to_string());
    }
}
