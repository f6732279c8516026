//! Where a byte of a KDL string's value sits in the definition's source: escapes
//! (`\t`, `\u{31}`, a `\` before whitespace), raw strings (`#"…"#`) and multi-line
//! strings (`"""`, their indentation removed) make the value's offsets differ from the
//! source's, and a caret must point at the source.

/// The offset in `raw` (an entry's source text, `key=` included) of byte `at` of its
/// string value (a bare identifier is its own text).
pub fn source_offset(raw: &str, at: usize) -> usize {
    let Some(open) = raw.find(['"', '#']) else {
        let start = raw.rfind('=').map_or(0, |e| e + 1);
        return (start + at).min(raw.len());
    };
    let hashes = raw[open..].bytes().take_while(|&b| b == b'#').count();
    let quote = open + hashes;
    if raw.as_bytes().get(quote) != Some(&b'"') {
        return 0;
    }
    if raw[quote..].starts_with("\"\"\"") {
        return multi_line(raw, quote + 3, at);
    }
    let body = quote + 1;
    if hashes > 0 {
        return (body + at).min(raw.len());
    }
    escaped(raw, body, at)
}

/// A quoted string: walks the escapes up to the value's byte `at`.
fn escaped(raw: &str, body: usize, at: usize) -> usize {
    let mut value = 0usize;
    let mut i = body;
    let bytes = raw.as_bytes();
    // A `\` before whitespace is no character: skipped even where `at` is reached.
    let continuation = |i: usize| bytes[i] == b'\\' && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace);
    while i < raw.len() && (value < at || continuation(i)) {
        match bytes[i] {
            b'"' => break,
            b'\\' => match bytes.get(i + 1) {
                Some(b'u') => {
                    let end = raw[i..].find('}').map_or(raw.len(), |e| i + e + 1);
                    let c = raw
                        .get(i + 3..end.saturating_sub(1))
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32)
                        .unwrap_or('?');
                    value += c.len_utf8();
                    i = end;
                }
                Some(c) if c.is_ascii_whitespace() => {
                    i += 1;
                    while i < raw.len() && bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                }
                Some(_) => {
                    value += 1;
                    i += 2;
                }
                None => break,
            },
            _ => {
                let n = raw[i..].chars().next().map_or(1, char::len_utf8);
                value += n;
                i += n;
            }
        }
    }
    i.min(raw.len())
}

/// A multi-line string: the value's lines are the source's between the first and the
/// last, each without the closing line's indentation.
fn multi_line(raw: &str, body: usize, at: usize) -> usize {
    let Some(first_nl) = raw[body..].find('\n') else {
        return body;
    };
    let start = body + first_nl + 1;
    let close = raw.rfind("\"\"\"").unwrap_or(raw.len());
    let indent = raw[..close].rsplit('\n').next().map_or(0, str::len);
    let mut value = 0usize;
    let mut line_start = start;
    for line in raw[start..close].split_inclusive('\n') {
        let text = line.get(indent.min(line.len())..).unwrap_or("");
        if at <= value + text.trim_end_matches('\n').len() {
            return line_start + indent.min(line.len()) + (at - value);
        }
        value += text.len();
        line_start += line.len();
    }
    start
}

#[cfg(test)]
mod tests {
    use super::source_offset;

    #[test]
    fn escapes_raw_and_multi_line_strings_map_to_the_source() {
        let raw = r#""\t\t\t\t1 + bogus""#;
        assert_eq!(&raw[source_offset(raw, 8)..][..5], "bogus");
        let raw = r#""\u{31}\u{31}\u{31}\u{31} + bogus""#;
        assert_eq!(&raw[source_offset(raw, 7)..][..5], "bogus");
        let raw = r##"#"1 + bogus"#"##;
        assert_eq!(&raw[source_offset(raw, 4)..][..5], "bogus");
        let raw = "end=\"a + \\\n      bogus\"";
        assert_eq!(&raw[source_offset(raw, 4)..][..5], "bogus");
        assert_eq!(source_offset("end=speed", 5), 9);
        let raw = "\"\"\"\n        1 +\n        bogus\n        \"\"\"";
        assert_eq!(&raw[source_offset(raw, 4)..][..5], "bogus");
    }
}
