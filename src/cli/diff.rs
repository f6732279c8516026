//! `gpcap diff A B`: two captures of one session at two points, matched datagram by
//! datagram: where loss, delay, duplication and reordering happen.

use super::args::ProtocolArgs;
use super::resolve;
use super::{Result, json_or_text};
use crate::cli::Error;
use clap::Args;
use gpcap::run::sample_files;
use gpcap::sinks::diff::{ClockMode, Options, Verdict};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct DiffArgs {
    /// The capture at the first point (pcap or pcapng, gzip too), e.g. the client's.
    pub a: PathBuf,
    /// The capture at the second point, e.g. the server's.
    pub b: PathBuf,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Print the report as JSON (docs/json.md, `gpcap diff --json`).
    #[arg(long)]
    pub json: bool,
    /// The clocks: `fit` their offset and skew from the delays (default), or `same`
    /// when both captures were stamped by one clock (one host, network namespaces, PTP).
    #[arg(long, default_value = "fit", value_parser = ["fit", "same"])]
    pub clock: String,
    /// Seconds a datagram waits for its copy at the other point (0.01 to 600): longer
    /// than any delay between them.
    #[arg(long, default_value_t = 10.0, value_parser = window)]
    pub window: f64,
    /// Browse the two timelines in the terminal, lost and late datagrams marked.
    #[arg(long, conflicts_with = "json")]
    pub tui: bool,
    /// Also write the report's tables as Parquet under this directory
    /// (`diff_directions/`, `diff_events/`; docs/export.md).
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
}

fn window(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number (0.01 to 600)"))?;
    if !(0.01..=600.0).contains(&v) {
        return Err(format!("`{s}` is outside 0.01 to 600"));
    }
    Ok(v)
}

pub fn run(a: &DiffArgs) -> Result<ExitCode> {
    // Fail before reading anything when either capture cannot be opened.
    for p in [&a.a, &a.b] {
        gpcap::capture::CaptureReader::open(p)?;
    }
    let paths = [a.a.clone(), a.b.clone()];
    let resolved = resolve(&a.protocol.choice()?, |i| sample_files(&paths, i))?;
    if resolved.cfg.protocol_id.is_none() && resolved.cfg.checksum.is_crc32() {
        return Err(Error::Usage(
            "no game protocol found in the captures: give it with -d DEFINITION or --protocol-id".into(),
        ));
    }
    if !a.json
        && let Some(note) = gpcap::present::notes::identified(&resolved)
    {
        eprintln!("gpcap: {note}");
    }
    let opts = Options {
        window_ns: (a.window * 1e9) as i64,
        ..Options::default()
    };
    let mode = if a.clock == "same" {
        ClockMode::Same
    } else {
        ClockMode::Fit
    };
    let diffed = gpcap::run::diff::diff(paths, resolved.cfg, opts, mode)?;
    let report = &diffed.report;
    if let Some(dir) = &a.out {
        write_tables(dir, report)?;
    }
    if a.tui {
        super::diff_tui::run(report)?;
    } else {
        json_or_text(a.json, report, || gpcap::present::diff::render(report))?;
    }
    let short = super::say_ends(diffed.outcomes.iter().map(|o| &o.end));
    Ok(if short {
        ExitCode::from(2)
    } else if report.verdict != Verdict::Compared {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(feature = "export")]
fn write_tables(dir: &std::path::Path, r: &gpcap::sinks::diff::DiffReport) -> Result<()> {
    let n = gpcap::sinks::export::diff::write(dir, r).map_err(|e| Error::Usage(e.to_string()))?;
    eprintln!(
        "gpcap: wrote {} under {}",
        gpcap::present::count(n as u64, "table"),
        dir.display()
    );
    Ok(())
}

#[cfg(not(feature = "export"))]
fn write_tables(_: &std::path::Path, _: &gpcap::sinks::diff::DiffReport) -> Result<()> {
    Err(Error::Usage(
        "-o needs the `export` feature (on by default)".into(),
    ))
}
