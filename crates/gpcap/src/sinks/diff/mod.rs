//! `gpcap diff`: two captures of one session at two points (the client and the server,
//! either side of a router) matched datagram by datagram, to say where loss, delay,
//! duplication and reordering happen. The sighting sink keeps a few words of each game
//! datagram at each point; the matcher pairs flows (through NAT) and datagrams in one
//! pass over each capture with a bounded window; the report settles which point each
//! direction passes first, fits the clocks and gives the figures. The run over both
//! captures is `run::diff`.

pub(crate) mod clock;
pub(crate) mod delays;
pub mod matcher;
pub mod notes;
pub mod pair;
pub mod report;
pub mod sighting;
pub mod timeline;

pub use delays::{Delay, Spike};
pub use gpcap_engine::FlowId;
pub use matcher::{Matcher, Options};
pub use notes::{ClockMethod, ClockReason, DelayNote, Matching, Note, Pairing};
pub use report::{ClockMode, DiffReport, Direction, Verdict, build};
pub use sighting::{Seen, Sighting, Sightings};
