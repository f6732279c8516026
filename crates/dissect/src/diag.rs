//! Diagnostics for definition files: file, line, column, a caret under the fault and a
//! hint, rendered miette-style.

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, NamedSource, SourceSpan};
use std::sync::Arc;

#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{message}")]
pub struct DefinitionError {
    pub message: String,
    #[source_code]
    pub src: NamedSource<Arc<String>>,
    #[label("{label}")]
    pub span: SourceSpan,
    pub label: String,
    #[help]
    pub help: Option<String>,
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
}

impl DefinitionError {
    pub fn new(
        file: &str,
        src: &Arc<String>,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<String>,
    ) -> Self {
        let offset = span.offset().min(src.len());
        let before = src.get(..offset).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        DefinitionError {
            message: message.into(),
            src: NamedSource::new(file, src.clone()),
            span,
            label: label.into(),
            help,
            file: file.to_string(),
            line,
            column,
        }
    }

    /// `file:line:col: message`, the one-line form.
    pub fn short(&self) -> String {
        format!("{}:{}:{}: {}", self.file, self.line, self.column, self.message)
    }
}

/// Renders diagnostics with the source line and a caret, without colour (`color` adds it).
pub fn render(errors: &[DefinitionError], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    for e in errors {
        out.push_str(&e.short());
        out.push('\n');
        let _ = handler.render_report(&mut out, &first_lines(e));
    }
    out
}

/// Lines of a span shown at most: a syntax error's span can run to the end of the file
/// (an unclosed block), and each of its follow-on errors printed it all again.
const SPAN_LINES: usize = 3;

/// `e` with its span cut to its first line when it covers more than [`SPAN_LINES`] (as
/// many line breaks as that).
fn first_lines(e: &DefinitionError) -> DefinitionError {
    let text = e.src.inner().as_str();
    let (at, len) = (e.span.offset().min(text.len()), e.span.len());
    let spanned = text.get(at..(at + len).min(text.len())).unwrap_or("");
    let mut short = e.clone();
    if spanned.matches('\n').count() >= SPAN_LINES {
        let line = spanned.find('\n').unwrap_or(0);
        short.span = SourceSpan::new(at.into(), line);
    }
    short
}
