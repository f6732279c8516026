//! Decode: link → IP → UDP/ICMP of each frame (stateless), and IP defragmentation
//! (the one stateful piece of decoding, run in the engine's ordered stage).

pub mod ipfrag;
pub mod link;

pub use link::{
    Decoded, IcmpTooBig, IpInfo, QuotedDatagram, decode, decode_fast, decode_general, linktype,
    udp_from_reassembled,
};
