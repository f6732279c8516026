//! Presentation for people and scripts: tables and trees as strings, JSON values. The
//! binary prints them; the TUI draws the same data.

#[cfg(feature = "cli")]
pub mod tables;
pub mod tree;
