//! `gpcap analyze CAPTURE...`: the report.

use super::args::AnalyzeArgs;
use super::{Result, json_or_text, progress_bar};
use crate::outln;
use gpcap::analysis::gates::Gate;
use gpcap::analysis::{Report, Statistics};
use gpcap::engine::resolve::{Missing, resolve};
use gpcap::engine::{Config, Engine, run_files, sample_files};
use gpcap::present;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(a: &AnalyzeArgs) -> Result<ExitCode> {
    let gates = a
        .fail_on
        .iter()
        .map(|g| Gate::parse(g))
        .collect::<Result<Vec<_>>>()?;
    let mut choice = a.protocol.choice()?;
    choice.mtu_budget = a.mtu;
    choice.link_mtu = Some(a.link_mtu);
    let resolved = resolve(&choice, Missing::Refuse, |i| sample_files(&a.captures, i))?;
    if !a.json
        && let Some(note) = resolved.note()
    {
        outln!("{note}\n");
    }
    let mut report = analyze_files(&a.captures, resolved.cfg)?;
    report.identification = resolved.identification;
    json_or_text(a.json, &report, || present::tables::render(&report))?;
    let failed: Vec<String> = gates.iter().filter_map(|g| g.crossed(&report)).collect();
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("gpcap: gate failed: {f}");
        }
        return Ok(ExitCode::from(3));
    }
    let unreadable = report
        .capture
        .files
        .iter()
        .any(|f| f.error.is_some() && f.frames == 0);
    Ok(if unreadable {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads every capture through the engine into the statistics. Large inputs are sharded
/// over the cores by IP address pair (the same report: tests/parallel.rs). A file that
/// cannot be opened is an error; one that breaks midway keeps what was read and says
/// where it stopped.
pub fn analyze_files(captures: &[PathBuf], cfg: Config) -> Result<Report> {
    let sizes: Vec<u64> = captures
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .collect();
    let total: u64 = sizes.iter().sum();
    let bar = progress_bar(total, "");
    let mut progress = |file: usize, offset: u64| {
        if let Some(b) = &bar {
            let before: u64 = sizes[..file].iter().sum();
            b.set_position((before + offset).min(total));
        }
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let report = if cores > 1 && total > 8 << 20 {
        gpcap::engine::parallel::analyze_files(captures, cfg, (cores + 1).min(4), &mut progress)?
    } else {
        let mut stats = Statistics::new(cfg.clone());
        run_files(
            captures,
            Engine::new(cfg, false),
            &mut stats,
            &mut progress,
            &|_| false,
        )?;
        stats.report()
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for f in &report.capture.files {
        if let Some(e) = &f.error {
            eprintln!("gpcap: {e}");
        }
        if let Some(t) = &f.truncated_tail {
            eprintln!("gpcap: warning: {t}");
        }
    }
    Ok(report)
}
