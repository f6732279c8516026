//! A node's arguments and properties: positional values, integers and floats in range,
//! the properties a node allows, expressions and counts.

use super::*;

pub(super) fn positional(n: &KdlNode) -> Vec<&KdlEntry> {
    n.entries().iter().filter(|e| e.name().is_none()).collect()
}

pub(super) fn prop<'n>(n: &'n KdlNode, key: &str) -> Option<&'n KdlEntry> {
    n.entries()
        .iter()
        .find(|e| e.name().map(|k| k.value()) == Some(key))
}

impl<'d> Compiler<'d> {
    pub(super) fn arg_entry<'n>(&mut self, n: &'n KdlNode, i: usize, what: &str) -> Option<&'n KdlEntry> {
        let args = positional(n);
        match args.get(i) {
            Some(e) => Some(*e),
            None => {
                let span = args.last().map(|e| e.span()).unwrap_or(Self::name_span(n));
                self.error(
                    span,
                    format!("`{}` is missing {what}", n.name().value()),
                    "expected another argument after this",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    pub(super) fn arg_str(&mut self, n: &KdlNode, i: usize, what: &str) -> Option<String> {
        let e = self.arg_entry(n, i, what)?;
        match e.value().as_string() {
            Some(s) => Some(s.to_string()),
            None => {
                self.error(
                    e.span(),
                    format!("expected {what} (a name)"),
                    "not a name",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    pub(super) fn arg_int(&mut self, n: &KdlNode, i: usize, what: &str) -> Option<i64> {
        let e = self.arg_entry(n, i, what)?;
        match e.value().as_integer() {
            Some(v) if v >= i64::MIN as i128 && v <= i64::MAX as i128 => Some(v as i64),
            _ => {
                self.error(
                    e.span(),
                    format!("expected {what} (an integer)"),
                    "not an integer",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    pub(super) fn arg_f32(&mut self, n: &KdlNode, i: usize, what: &str) -> Option<f32> {
        let e = self.arg_entry(n, i, what)?;
        match e.value() {
            KdlValue::Integer(v) => Some(*v as f32),
            KdlValue::Float(v) => Some(*v as f32),
            _ => {
                self.error(
                    e.span(),
                    format!("expected {what} (a number)"),
                    "not a number",
                    Some(usage(n.name().value())),
                );
                None
            }
        }
    }

    /// Positional arguments past the `expected` ones: an error at the first of them.
    pub(super) fn extra_arguments(&mut self, n: &KdlNode, expected: usize, usage: &str) {
        let args = positional(n);
        if let Some(extra) = args.get(expected) {
            let takes = match expected {
                0 => "no arguments".to_string(),
                1 => "1 argument".to_string(),
                k => format!("{k} arguments"),
            };
            self.error(
                extra.span(),
                format!(
                    "`{}` takes {takes}, but has {}: `{}` is extra",
                    n.name().value(),
                    args.len(),
                    extra.value()
                ),
                "extra argument",
                Some(usage.trim_start_matches("usage: ").to_string()),
            );
        }
    }

    pub(super) fn check_props(&mut self, n: &KdlNode, allowed: &[&str]) {
        for e in n.entries() {
            if let Some(k) = e.name()
                && !allowed.contains(&k.value())
            {
                {
                    let hint = closest(k.value(), allowed.iter().copied())
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("`{}` takes: {}", n.name().value(), allowed.join(", ")));
                    self.error(
                        k.span(),
                        format!("unknown property `{}` on `{}`", k.value(), n.name().value()),
                        "unknown property",
                        Some(hint),
                    );
                }
            }
        }
    }

    /// Compiles an expression held in entry `e` against the fields in scope.
    pub(super) fn expression(&mut self, e: &KdlEntry) -> Option<Expr> {
        let (text, raw) = match e.value() {
            KdlValue::String(s) => {
                let span = e.span();
                let raw = self
                    .src
                    .get(span.offset()..span.offset() + span.len())
                    .unwrap_or("");
                (s.clone(), (span.offset(), raw.to_string()))
            }
            KdlValue::Integer(v) => {
                let start = self.code.len() as u32;
                self.code.push(Op::Const(*v as i64));
                return Some(Expr { start, len: 1 });
            }
            KdlValue::Bool(b) => {
                let start = self.code.len() as u32;
                self.code.push(Op::Const(*b as i64));
                return Some(Expr { start, len: 1 });
            }
            _ => {
                self.error(
                    e.span(),
                    "expected an expression in quotes",
                    "",
                    Some("for example \"count > 0 && flag\"".into()),
                );
                return None;
            }
        };
        let scope = &self.scope;
        let mut resolve = |name: &str| -> Result<Op, (String, String)> {
            match scope.find(name) {
                Some(Some(slot)) => Ok(Op::Slot(slot)),
                None if name == "remaining" => Ok(Op::Remaining(false)),
                None if name == "remaining_bits" => Ok(Op::Remaining(true)),
                Some(None) => Err((
                    format!("`{name}` cannot be used in an expression"),
                    "expressions read integer fields: bits, bool, int and uint64".to_string(),
                )),
                None => Err((
                    format!("unknown field `{name}`"),
                    match closest(name, scope.names()) {
                        Some(c) => format!("did you mean `{c}`?"),
                        None if scope.is_empty() => "no fields are declared before this point".into(),
                        None => format!(
                            "fields declared before this point: {}",
                            scope.names().collect::<Vec<_>>().join(", ")
                        ),
                    },
                )),
            }
        };
        match expr::compile(&text, &mut resolve) {
            Ok(ops) if expr::divides_by_zero(&ops) => {
                self.error(
                    e.span(),
                    "this expression divides by zero whatever the packet holds",
                    "division by zero",
                    Some("every packet would be malformed (`expression`) here".into()),
                );
                None
            }
            Ok(ops) => {
                self.remaining |= ops.iter().any(|o| matches!(o, Op::Remaining(_)));
                let start = self.code.len() as u32;
                self.code.extend(ops);
                Some(Expr {
                    start,
                    len: self.code.len() as u32 - start,
                })
            }
            Err(err) => {
                // The error's offsets are into the decoded text; the caret goes in the source.
                let (base, raw) = raw;
                let from = base + crate::strings::source_offset(&raw, err.offset);
                let to = base + crate::strings::source_offset(&raw, err.offset + err.len.max(1));
                let span = SourceSpan::from(from..to.max(from + 1));
                self.error(span, err.message, "here", err.help);
                None
            }
        }
    }

    /// A count (argument 1) that, when constant, is at most `most`: a larger one would
    /// fail every packet (the dissector's limit, or a datagram's size).
    pub(super) fn count_within(&mut self, n: &KdlNode, most: u64, what: &str) -> Option<Count> {
        let count = self.count(n, 1)?;
        if let Count::Const(c) = count
            && c > most
        {
            self.error(
                positional(n)[1].span(),
                format!("a count of {c} is over the {most} {what}"),
                "count",
                Some("every packet would be malformed here".into()),
            );
            return None;
        }
        Some(count)
    }

    pub(super) fn count(&mut self, n: &KdlNode, i: usize) -> Option<Count> {
        let e = self.arg_entry(n, i, "a count (a number or an expression)")?;
        match e.value() {
            KdlValue::Integer(v) if *v >= 0 && *v <= u64::MAX as i128 => Some(Count::Const(*v as u64)),
            KdlValue::String(_) => self.expression(e).map(Count::Expr),
            _ => {
                self.error(
                    e.span(),
                    "a count is a non-negative integer or an expression",
                    "",
                    None,
                );
                None
            }
        }
    }
}
