//! The terminal UI over captures and live traffic: the app state and its keys, and
//! drawing from that state. The packet index it shows is a sink of the engine
//! ([`crate::sinks::index`]), built on another thread and sent here as updates.

pub mod app;
pub(crate) mod bits;
pub mod keys;
pub mod layered;
pub mod prompt;
mod scan;
pub(crate) mod series;
pub mod ui;

pub use crate::sinks::index::{Index, Update, load};
pub use app::{App, Tab};
