//! Traffic generation: packets written from a definition through the shared writer, a
//! network simulator, and the ground truth of what happened.

pub mod check;
pub(crate) mod encrypt;
pub mod net;
pub mod packet;
pub mod rng;
pub mod sim;
mod words;
