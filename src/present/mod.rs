//! Presentation for people and scripts: tables and trees as strings, JSON values. The
//! binary prints them; the TUI draws the same data.

/// A report value that JSON carries as its sentence (its `Display`): the report holds
/// the numbers, present says them, and the JSON keeps the words it always had.
macro_rules! as_sentence {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}

#[cfg(feature = "cli")]
pub mod bandwidth;
#[cfg(feature = "cli")]
pub mod diff;
mod diff_notes;
mod findings;
pub(crate) mod fit;
pub mod headers;
pub(crate) mod info;
pub mod json;
#[cfg(feature = "cli")]
pub(crate) mod layers;
pub mod notes;
#[cfg(feature = "cli")]
pub mod tables;
pub mod time;
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

/// `s` in lines of at most `width` characters, broken at spaces where it can be and
/// inside a word only when the word alone is wider.
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        let used = line.chars().count();
        if used > 0 && used + 1 + word.len() <= width {
            line.push(' ');
            line.extend(word.iter());
            continue;
        }
        if used > 0 {
            lines.push(std::mem::take(&mut line));
        }
        while word.len() > width {
            lines.push(word.drain(..width).collect());
        }
        line.extend(word.iter());
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
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
    fn wrap_breaks_at_spaces_and_long_words() {
        assert_eq!(
            super::wrap("filter: no field sizee", 10),
            ["filter: no", "field", "sizee"]
        );
        assert_eq!(super::wrap("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
        assert_eq!(super::wrap("", 5), [""]);
    }

    #[test]
    fn count_agrees_with_its_number() {
        assert_eq!(super::count(1u32, "packet type"), "1 packet type");
        assert_eq!(super::count(0u32, "burst"), "0 bursts");
        assert_eq!(super::count(2u64, "burst"), "2 bursts");
    }
}
