//! Traffic generation: packets written from a definition through the shared writer, a
//! network simulator, and the ground truth of what happened.

pub(crate) mod encrypt;
pub mod net;
pub(crate) mod packet;
pub mod points;
pub(crate) mod rng;
pub mod sim;
mod words;

pub use net::{Link, ip_packets};
pub use packet::{GenError, Leaf, PacketWriter};
pub use rng::Rng;
