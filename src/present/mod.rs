//! Presentation for people and scripts: tables and trees as strings, JSON values. The
//! binary prints them; the TUI draws the same data.

#[cfg(feature = "cli")]
pub mod bandwidth;
#[cfg(feature = "cli")]
pub mod diff;
pub(crate) mod fit;
pub(crate) mod info;
pub mod json;
#[cfg(feature = "cli")]
pub(crate) mod layers;
#[cfg(feature = "cli")]
pub mod tables;
pub mod tree;

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

#[cfg(test)]
mod tests {
    #[test]
    fn count_agrees_with_its_number() {
        assert_eq!(super::count(1u32, "packet type"), "1 packet type");
        assert_eq!(super::count(0u32, "burst"), "0 bursts");
        assert_eq!(super::count(2u64, "burst"), "2 bursts");
    }
}
