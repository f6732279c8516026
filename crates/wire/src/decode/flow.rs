//! A UDP conversation in one direction, as decoding finds it: the key every layer above
//! (decryption, identification, the engine's flows, the report) names a flow by.

use serde::Serialize;
use std::fmt;
use std::net::SocketAddr;

/// A UDP conversation in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FlowId {
    pub src: SocketAddr,
    pub dst: SocketAddr,
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} → {}", self.src, self.dst)
    }
}
