//! Help for a definition's author: nesting refused before parsing, common mistakes named
//! in words, "did you mean" for a misspelt word, and each primitive's usage line.

/// Deepest `{` nesting accepted before parsing (the KDL parser recurses per level).
pub(super) const MAX_BRACES: usize = 64;

/// Where the `{` nesting (outside strings and comments, roughly) first exceeds the limit.
pub(super) fn too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    let mut in_str = false;
    while i < b.len() {
        match b[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'{' if !in_str => {
                depth += 1;
                if depth > MAX_BRACES {
                    return Some(i);
                }
            }
            b'}' if !in_str => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Mistakes of people used to other languages that KDL reports as a cascade: `#`
/// comments and `} else {` on one line. (offset, message, help) for each, outside strings
/// and comments.
pub(super) fn common_mistakes(text: &str) -> Vec<(usize, String, &'static str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'#' => {
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + hashes) == Some(&b'"') {
                    // A raw string: #"…"#, ##"…"##.
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', hashes))
                        .collect();
                    i += hashes + 1;
                    while i < b.len() && !b[i..].starts_with(&close) {
                        i += 1;
                    }
                    i += close.len().saturating_sub(1);
                } else {
                    let word: Vec<u8> = b[i + 1..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
                        .copied()
                        .collect();
                    let keyword = matches!(
                        &word[..],
                        b"true" | b"false" | b"null" | b"inf" | b"-inf" | b"nan"
                    );
                    if !keyword {
                        out.push((
                            i,
                            "`#` does not start a comment in KDL".to_string(),
                            "comments are `// to the end of the line` or `/* … */`",
                        ));
                        while i < b.len() && b[i] != b'\n' {
                            i += 1;
                        }
                    }
                }
            }
            b'}' => {
                let mut j = i + 1;
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                let word = b.get(j..j + 4) == Some(b"else")
                    && b.get(j + 4)
                        .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_' && *c != b'-');
                if word {
                    out.push((
                        j,
                        "`else` must start a new line: in KDL `}` ends the `if` node".to_string(),
                        "write `}` and then `else {` (or `else if \"…\" {`) on the next line",
                    ));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

pub(super) fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    fn dist(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }
    candidates
        .into_iter()
        .map(|c| (dist(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c)
}

pub(super) fn usage(kind: &str) -> String {
    match kind {
        "bits" => "usage: `bits NAME WIDTH` (WIDTH 1..=32)".into(),
        "int" => "usage: `int NAME MIN MAX`".into(),
        "compressed-float" => "usage: `compressed-float NAME MIN MAX RESOLUTION`".into(),
        "compressed-vector" => "usage: `compressed-vector NAME MIN MAX RESOLUTION`".into(),
        "smallest-three" => "usage: `smallest-three NAME BITS` (BITS 2..=10)".into(),
        "bytes" => "usage: `bytes NAME COUNT` (COUNT a number or an expression over earlier fields)".into(),
        "string" => "usage: `string NAME MAX` (length sent as int(0, MAX-1))".into(),
        "array" => "usage: `array NAME COUNT { fields }`".into(),
        "relative-list" => "usage: `relative-list NAME MAX { fields }`".into(),
        "packet" => "usage: `packet TYPE-ID \"name\" { fields }`".into(),
        "if" => "usage: `if \"condition\" { fields }`".into(),
        "list" => "usage: `list NAME end=\"condition\" { fields }`".into(),
        "check" => "usage: `check \"name to hash\"` or `check magic=0x…`".into(),
        "align" => "usage: `align` (to the next byte)".into(),
        "derived" => "usage: `derived NAME \"expression over earlier fields\"`".into(),
        "le-uint" => {
            "usage: `le-uint NAME BYTES` (1..=8 bytes, little-endian; BYTES a number or an expression)".into()
        }
        "be-uint" | "be-int" | "le-int" => format!(
            "usage: `{kind} NAME BYTES` (1..=8 bytes, {} first{}; BYTES a number or an expression)",
            if kind.starts_with("be") {
                "most significant"
            } else {
                "least significant"
            },
            if kind.ends_with("uint") {
                ""
            } else {
                ", two's complement"
            }
        ),
        "varint" => "usage: `varint NAME` (unsigned LEB128, up to 10 bytes)".into(),
        "zigzag" => "usage: `zigzag NAME` (a LEB128 varint, zigzag-decoded to a signed value)".into(),
        "text" => "usage: `text NAME LEN` (LEN bytes shown as text; a number or an expression)".into(),
        "cstring" => "usage: `cstring NAME MAX` (text up to a NUL, MAX bytes at most with it)".into(),
        "rest" => "usage: `rest NAME` or `rest NAME { what the bytes start with }`".into(),
        "bool" | "uint64" | "float" | "double" | "vector" | "quaternion" => {
            format!("usage: `{kind} NAME`")
        }
        _ => format!("usage: `{kind} NAME …`"),
    }
}
