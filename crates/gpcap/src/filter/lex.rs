//! Tokens, comparison words and literal values of the filter language.

use super::*;

pub(super) fn tokenize(s: &str) -> Result<Vec<(String, usize)>, FilterError> {
    let mut out = Vec::new();
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == '"' {
            // A quoted string, backslash escaping a quote or backslash; the token keeps
            // its opening quote so that it is never read as a word.
            let mut t = String::from('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' && i + 1 < b.len() {
                    i += 1;
                }
                t.push(b[i]);
                i += 1;
            }
            if i == b.len() {
                return Err(FilterError {
                    message: "the string has no closing quote".into(),
                    column: start + 1,
                });
            }
            t.push('"');
            i += 1;
            out.push((t, start));
            continue;
        }
        let two: String = b[i..(i + 2).min(b.len())].iter().collect();
        if ["&&", "||", "==", "!=", "<=", ">=", "^^"].contains(&two.as_str()) {
            out.push((two, start));
            i += 2;
        } else if "()!<>{},".contains(c) {
            out.push((c.to_string(), start));
            i += 1;
        } else {
            while i < b.len() && !b[i].is_whitespace() && !"()!<>=&|{},".contains(b[i]) {
                i += 1;
            }
            // IPv6 addresses in brackets keep their colons; `=` never starts a word.
            if i == start {
                out.push((c.to_string(), start));
                i += 1;
            } else {
                let word: String = b[start..i].iter().collect();
                // Wireshark's words for the operators.
                let word = match word.as_str() {
                    "and" => "&&".to_string(),
                    "or" => "||".to_string(),
                    "xor" => "^^".to_string(),
                    "not" => "!".to_string(),
                    _ => word,
                };
                out.push((word, start));
            }
        }
    }
    Ok(out)
}

/// A comparison, as a symbol or Wireshark's word for it.
pub(super) fn cmp_of(t: &str) -> Option<Cmp> {
    Some(match t {
        "==" | "eq" => Cmp::Eq,
        "!=" | "ne" => Cmp::Ne,
        "<" | "lt" => Cmp::Lt,
        "<=" | "le" => Cmp::Le,
        ">" | "gt" => Cmp::Gt,
        ">=" | "ge" => Cmp::Ge,
        _ => return None,
    })
}

pub(super) fn is_cmp(t: &str) -> bool {
    cmp_of(t).is_some()
}

/// An operator token as the user may have written it (`or` is read as `||`).
pub(super) fn operator_word(token: &str) -> Option<&'static str> {
    Some(match token {
        "&&" => "`and` (`&&`)",
        "||" => "`or` (`||`)",
        "!" => "`not` (`!`)",
        _ => return None,
    })
}

/// A decimal, `0x` hexadecimal or negative integer.
pub(super) fn parse_int(v: &str) -> Option<i128> {
    let (neg, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v),
    };
    let n = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(h) => i128::from_str_radix(h, 16).ok()?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => digits.parse().ok()?,
        None => return None,
    };
    Some(if neg { -n } else { n })
}

/// The text between a token's quotes.
pub(super) fn unquote(v: &str) -> &[u8] {
    let inner = v.strip_prefix('"').unwrap_or(v);
    inner.strip_suffix('"').unwrap_or(inner).as_bytes()
}
