//! The Fit section: how well the description fits the traffic, first in the report.

use crate::sinks::analysis::fit::{Failing, Fit, Sign, Verdict};
use std::fmt::{self, Write};

/// A sign in words: the text report's lines and the JSON's `rests_on` strings.
impl fmt::Display for Sign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let none_of = |n: u64, what: &str| match n {
            1 => format!("the one {what}"),
            n => format!("none of the {n} {what}s"),
        };
        let pct = |n: u64, of: u64| {
            if of == 0 {
                0.0
            } else {
                n as f64 * 100.0 / of as f64
            }
        };
        match self {
            Sign::NoUdp => f.write_str("the capture holds no UDP datagram"),
            Sign::NotOnPorts { udp, ports } => {
                let ports: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
                let verb = if *udp == 1 { "is not" } else { "is" };
                write!(
                    f,
                    "{} {verb} on the protocol's ports ({})",
                    none_of(*udp, "UDP datagram"),
                    ports.join(" ")
                )
            }
            Sign::NoneValid {
                examined,
                crc_mismatch,
                too_short,
                truncated,
            } => {
                let verb = if *examined == 1 { "did not pass" } else { "passed" };
                write!(
                    f,
                    "{} on the protocol's ports {verb} validation ({crc_mismatch} failed the checksum, {too_short} too short, {truncated} cut short)",
                    none_of(*examined, "datagram"),
                )
            }
            Sign::Share { n, datagrams, what } => {
                let what = match what {
                    Failing::Header => "fail the header",
                    Failing::Body => "fail the body",
                    Failing::Trailing => "leave trailing bytes",
                };
                write!(
                    f,
                    "{n} of {datagrams} datagrams ({:.1}%) {what}",
                    pct(*n, *datagrams)
                )
            }
            Sign::FlowsDoNotRead {
                flows,
                game_flows,
                datagrams,
                game_datagrams,
            } => write!(
                f,
                "{flows} of {game_flows} flows have a sequence or fragment field that does not read as one ({datagrams} of {game_datagrams} datagrams)"
            ),
            Sign::SeqLost { lost, received } => {
                write!(f, "{lost} lost, more than the {received} sequences seen")
            }
            Sign::SeqJumps { bits, jumps } => write!(
                f,
                "the sequence jumped by over a quarter of its {bits}-bit space {jumps} times"
            ),
            Sign::SeqLate { late, received } => write!(f, "{late} of {received} sequences arrived late"),
            Sign::RefusedFragments {
                refused,
                count_changed,
                id_out_of_range,
                count_out_of_range,
                completed,
                seen,
            } => write!(
                f,
                "{refused} fragments refused (count changed {count_changed}, id out of range {id_out_of_range}, count out of range {count_out_of_range}) beside {completed} of {seen} fragmented packets completed"
            ),
            Sign::NeverSharedGroup { fragments, groups } => write!(
                f,
                "{fragments} fragments never shared a group ({groups} packets, none completed)"
            ),
            Sign::NeverAcked {
                flow,
                never_acked,
                captured_loss,
            } => write!(
                f,
                "acks of {flow}: {:.1}% never acked, where the capture shows at most {:.1}% lost either way",
                never_acked * 100.0,
                captured_loss * 100.0
            ),
            Sign::AcksOfUnsent { flow, unsent, acked } => write!(
                f,
                "acks of {flow}: {unsent} acks and NAKs name sequences never sent, beside {acked} acked"
            ),
            Sign::StreamLost {
                name,
                key,
                flow,
                lost,
                received,
            } => write!(
                f,
                "stream {name} {key} of {flow}: {lost} lost, more than the {received} received"
            ),
            Sign::StreamLate {
                name,
                key,
                flow,
                late,
                received,
            } => write!(
                f,
                "stream {name} {key} of {flow}: {late} of {received} sequences arrived late"
            ),
        }
    }
}

// JSON carries a sign as its sentence, as `rests_on` always has.
as_sentence!(Sign);

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

fn first_failure(f: &crate::sinks::analysis::fit::FirstFailure) -> String {
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
#[cfg(feature = "tables")]
pub fn render(r: &crate::sinks::analysis::Report) -> String {
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
            (f.rests_on.iter().map(|s| s.to_string()))
                .collect::<Vec<_>>()
                .join("; ")
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
