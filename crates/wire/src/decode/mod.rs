//! Decode: link → IP → UDP/ICMP of each frame (stateless), and IP defragmentation
//! (the one stateful piece of decoding, run in the engine's ordered stage).

mod flow;
pub mod headers;
pub(crate) mod ipfrag;
pub(crate) mod link;
mod malformed;
pub mod services;
pub mod wire;

pub use flow::FlowId;
pub use ipfrag::{DefragStats, IpDefrag};
pub use malformed::Malformation;

pub use link::{
    Decoded, IcmpTooBig, IpInfo, QuotedDatagram, decode, decode_fast, decode_general, linktype,
    udp_from_reassembled,
};
