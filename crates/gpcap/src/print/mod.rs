//! One packet as people and scripts read it: the field tree (in the spirit of
//! `tshark -V`), the Info column, JSON, the link/IP/UDP headers, timestamps, and the
//! analyses' verdicts in words. Pure functions of an engine event, below the sinks
//! that print them (`sinks/printer`) and the reports (`present`), which re-exports them.

pub mod headers;
pub mod info;
pub mod json;
pub mod time;
pub mod tree;
mod verdicts;

pub(crate) use verdicts::*;
pub use verdicts::{ack_words, message_verdict, seq_note};

/// `n` and the noun, plural when `n` is not 1: "1 packet type", "2 packet types".
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// At most `max` characters of `s`, an ellipsis marking a cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The bytes of a text field as shown: a fixed-length `text` without the NULs that pad it.
pub(crate) fn text_bytes<'a>(kind: &str, b: &'a [u8]) -> &'a [u8] {
    match kind {
        "text" => &b[..b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1)],
        _ => b,
    }
}
