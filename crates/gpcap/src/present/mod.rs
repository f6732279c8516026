//! Presentation for people and scripts: tables and trees as strings, JSON values. The
//! binary prints them; the TUI draws the same data. One packet's tree, Info column and
//! JSON are made in `print/` (below the sinks that print them), re-exported here.

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

#[cfg(feature = "tables")]
pub mod bandwidth;
#[cfg(feature = "tables")]
pub mod diff;
mod diff_notes;
mod findings;
pub mod fit;
pub use crate::print::{ack_words, clip, count, headers, info, json, message_verdict, seq_note, time, tree};
#[cfg(feature = "tables")]
pub(crate) mod layers;
pub mod notes;
#[cfg(feature = "tables")]
pub mod tables;

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

/// An estimate's `rests_on` in the JSON: what it rests on, said (in every build: the
/// report serializes without the command line too).
impl serde::Serialize for crate::sinks::bandwidth::ValuesSeen {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{} values seen", self.0))
    }
}

/// The fit's note, said.
impl std::fmt::Display for crate::sinks::analysis::fit::FitNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::ReferenceMisfit {
                header_errors,
                datagrams,
            } => {
                let pct = match datagrams {
                    0 => 0.0,
                    n => header_errors as f64 * 100.0 / n as f64,
                };
                write!(
                    f,
                    "the reference header does not fit this traffic ({pct:.0}% header errors): pass -d"
                )
            }
        }
    }
}

/// The fit's note in the JSON: said, as the text report says it.
impl serde::Serialize for crate::sinks::analysis::fit::FitNote {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
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
