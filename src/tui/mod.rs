//! The terminal UI over captures and live traffic: an index built in the background,
//! the app state and its keys, and drawing from that state.

pub mod app;
pub mod index;
pub mod ui;

pub use app::{App, Tab};
pub use index::{Index, load};
