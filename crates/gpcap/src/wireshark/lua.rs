//! Lua source text: literals that read back as the same value in Lua 5.2 to 5.4.

use std::fmt::Write;

/// A Lua string literal: printable ASCII as is, everything else as `\ddd` escapes (a
/// definition's doc strings are untrusted text).
pub fn string(s: &str) -> String {
    bytes(s.as_bytes())
}

/// A Lua string literal of any bytes (a magic of bytes in quotes).
pub fn bytes(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
    out
}

/// An f32 or f64 by the shortest text that reads back as it.
pub fn float(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else if x.is_nan() {
        "(0/0)".into()
    } else if x > 0.0 {
        "math.huge".into()
    } else {
        "(-math.huge)".into()
    }
}

/// Integers Lua numbers hold exactly (below 2^53 either way).
pub const EXACT: i64 = 1 << 53;

pub fn exact(v: i64) -> bool {
    v > -EXACT && v < EXACT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_what_is_not_printable() {
        assert_eq!(string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string("é\n"), r#""\195\169\010""#);
    }

    #[test]
    fn floats_read_back() {
        assert_eq!(float(-1000.0), "-1000.0");
        assert_eq!(float(0.001), "0.001");
        assert_eq!(float(f64::INFINITY), "math.huge");
    }
}
