//! The Fit section: how well the description fits the traffic, first in the report.

use crate::analysis::fit::{Fit, Verdict};
use std::fmt::Write;

/// One line: the verdict, its first reason, the first failure and where (status lines,
/// gates).
pub fn summary(fit: &Fit) -> String {
    let mut s = fit.verdict.as_str().to_string();
    if let Some(first) = fit.rests_on.first() {
        let _ = write!(s, ": {first}");
    }
    if let Some(f) = &fit.first_failure
        && fit.verdict != Verdict::Good
    {
        let _ = write!(s, "; first failure {}", first_failure(f));
    }
    s
}

fn first_failure(f: &crate::analysis::fit::FirstFailure) -> String {
    let mut s = format!("frame {}", f.frame);
    if f.file > 0 {
        let _ = write!(s, " of file {}", f.file + 1);
    }
    let _ = write!(s, ": {}", f.cause);
    if let Some(field) = &f.field {
        let _ = write!(s, " at field `{field}`");
    }
    if let Some(bit) = f.bit {
        let _ = write!(s, " bit {bit}");
    }
    s
}

/// The Fit section (the text report's).
#[cfg(feature = "cli")]
pub fn render(r: &crate::analysis::Report) -> String {
    let fit = &r.fit;
    let mut out = String::new();
    let _ = writeln!(out, "Fit: {}", fit.verdict.as_str());
    let share = |n: u64| {
        if fit.datagrams == 0 {
            0.0
        } else {
            n as f64 * 100.0 / fit.datagrams as f64
        }
    };
    let _ = writeln!(
        out,
        "  {} judged: {} header errors ({:.1}%), {} body errors ({:.1}%), {} with trailing bytes ({:.1}%); {} with a sequence or fragment field that does not read as one",
        crate::present::count(fit.datagrams, "datagram"),
        fit.header_errors,
        share(fit.header_errors),
        fit.body_errors,
        share(fit.body_errors),
        fit.trailing_bytes,
        share(fit.trailing_bytes),
        crate::present::count(fit.flows.len() as u64, "flow"),
    );
    for why in &fit.rests_on {
        let _ = writeln!(out, "  - {why}");
    }
    for f in fit.flows.iter().take(10) {
        let _ = writeln!(
            out,
            "  - {} → {} ({}): {}",
            f.flow.src,
            f.flow.dst,
            f.verdict.as_str(),
            f.rests_on.join("; ")
        );
    }
    if fit.flows.len() > 10 {
        let _ = writeln!(
            out,
            "  ({} more flows; --json lists them all)",
            fit.flows.len() - 10
        );
    }
    if let Some(f) = &fit.first_failure {
        let _ = writeln!(out, "  first failure: {}", first_failure(f));
    }
    for s in &fit.suppressed {
        let _ = writeln!(
            out,
            "  finding held back (it rests on loss figures the fit puts in doubt): {s}"
        );
    }
    if let Some(note) = &fit.note {
        let _ = writeln!(out, "\n{note}");
    }
    let _ = writeln!(out);
    out
}
