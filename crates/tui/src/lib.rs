//! The terminal UI over captures and live traffic: the app state and its keys, and
//! drawing from that state. The packet index it shows is a sink of the engine
//! ([`gpcap::sinks::index`]), built on another thread and sent here as updates.

pub(crate) mod app;
pub(crate) mod bits;
pub mod diff;
pub(crate) mod keys;
pub(crate) mod layered;
pub(crate) mod messages;
pub(crate) mod prompt;
mod scan;
pub(crate) mod series;
pub(crate) mod ui;

pub use app::{App, Drawn, Mode, Tab};
pub use gpcap::run::scans::load;
pub use gpcap::run::seek::{Replay, Replayed};
pub use gpcap::sinks::index::{Index, Update};
pub use keys::markdown as keys_markdown;
pub use layered::{LayerRow, rows as layer_rows};
pub use prompt::Ask;
pub use ui::{draw, render};
