//! `analyze --bits`: the statistics and the profile from one run of the engine, every
//! datagram dissected into its field tree — sharded over the cores by address pair when
//! the traffic spreads, as `analyze` is, and the same report.

use crate::run::{self as parallel, run_files};
use crate::sinks::analysis::{Analyzer, Report, Statistics};
use crate::sinks::bandwidth::{Bandwidth, Options};
use gpcap_dissect::paths;
use gpcap_engine::Config;
use gpcap_wire::capture::CaptureError;
use std::path::PathBuf;

/// [`analyze_files`] on `shards` cores when the capture can be sharded (its traffic
/// spread over address pairs, no sequence space shared across them): each shard
/// profiles its own flows and the profiles are merged. When the shards together may
/// have reached a cap (of the engine's or of the profile's kept values) the capture is
/// profiled again on one core, so the report is always the sequential one.
pub fn analyze_sharded(
    captures: &[PathBuf],
    cfg: Config,
    opts: Options,
    shards: usize,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Report, super::RunError> {
    let spread = || {
        captures
            .first()
            .is_some_and(|p| parallel::busiest_shard_share(p, shards) < 0.75)
    };
    if shards <= 1 {
        return analyze_files(captures, cfg, opts, progress);
    }
    if !parallel::shardable(&cfg) || !spread() {
        return match pipelined(captures, &cfg, &opts, shards, progress)? {
            Some(report) => Ok(report),
            None => analyze_files(captures, cfg, opts, progress),
        };
    }
    match shard_profile(captures, &cfg, &opts, shards, progress)? {
        Some(report) => Ok(report),
        None => {
            parallel::release_freed_memory();
            analyze_files(captures, cfg, opts, progress)
        }
    }
}

/// The report and profile of `captures` from `shards` shards by address pair, merged
/// (`None`: the shards may have reached a cap, and only a run on one core is exact).
pub fn shard_profile(
    captures: &[PathBuf],
    cfg: &Config,
    opts: &Options,
    shards: usize,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Option<Report>, CaptureError> {
    let make = |c: &Config| {
        let (b, record) = Bandwidth::for_config(c, opts.clone(), !opts.trees);
        Analyzer::with_sink(c.clone(), record, b)
    };
    let Some((mut report, parts)) = parallel::shard_files(captures, cfg, shards, progress, make)? else {
        return Ok(None);
    };
    if Bandwidth::shards_may_reach_caps(&parts) {
        return Ok(None);
    }
    let mut parts = parts.into_iter();
    let Some(mut whole) = parts.next() else {
        return Ok(None);
    };
    for p in parts {
        whole.merge(p);
    }
    report.bandwidth = Some(whole.report());
    Ok(Some(report))
}

/// The report and profile of `captures` with `workers` validation threads ahead of the
/// ordered stage that counts the profile, as `analyze` runs one busy flow (`None`: the
/// profile needs field trees, which only the ordered stage could record). The ordered
/// stage is the sequential run with the verdicts handed in: the same profile.
pub fn pipelined(
    captures: &[PathBuf],
    cfg: &Config,
    opts: &Options,
    workers: usize,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Option<Report>, CaptureError> {
    if opts.trees || !cfg.pipelinable() || !crate::sinks::bandwidth::fast::eligible(cfg) {
        return Ok(None);
    }
    let (bandwidth, record) = Bandwidth::for_config(cfg, opts.clone(), true);
    let analyzer = Analyzer::with_sink(cfg.clone(), record, bandwidth);
    let (stats, bandwidth) =
        crate::run::pipeline::run_pipelined(captures, cfg.clone(), analyzer, workers, progress)?;
    Ok(Some(profiled(stats, bandwidth)))
}

/// The report of `captures` with its `bandwidth` profile, on one core: counted from the
/// plan when the definition allows ([`crate::sinks::bandwidth::fast`]), else from the field tree recorded
/// for every datagram.
pub fn analyze_files(
    captures: &[PathBuf],
    cfg: Config,
    opts: Options,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Report, super::RunError> {
    let (bandwidth, _) = Bandwidth::for_config(&cfg, opts.clone(), !opts.trees);
    let mut sinks = (Statistics::new(cfg.clone()), bandwidth);
    run_files(captures, cfg, &mut sinks, progress)?;
    let (stats, bandwidth) = sinks;
    Ok(profiled(stats, bandwidth))
}

/// The report of a run's statistics with the profile counted beside them.
fn profiled(stats: Statistics, bandwidth: Bandwidth) -> Report {
    let mut report = stats.report();
    report.bandwidth = Some(bandwidth.report());
    report
}

/// Checks each `--what-if` path against the definition: a path it lacks is named with
/// the nearest one it has.
pub fn check_what_if(cfg: &Config, opts: &Options) -> Result<(), String> {
    let Some(p) = cfg.program.as_deref() else {
        return match opts.what_if.first() {
            Some((path, _)) => Err(format!(
                "--what-if {path}: no definition given (-d) whose fields it could name"
            )),
            None => Ok(()),
        };
    };
    let catalog = paths::catalog(p);
    let type_names: Vec<&str> = p.packets.iter().map(|d| d.name.as_str()).collect();
    for (path, _) in &opts.what_if {
        let bare = type_names
            .iter()
            .find_map(|t| path.strip_prefix(t).and_then(|r| r.strip_prefix('.')))
            .unwrap_or(path);
        let found = catalog.iter().find(|c| c.path == bare || c.path == *path);
        match found {
            Some(c) if matches!(c.holds, paths::Holds::Float { .. } | paths::Holds::Double) => {}
            Some(_) => {
                return Err(format!(
                    "--what-if {path}: not a float field (a resolution applies to floats)"
                ));
            }
            None => {
                let hint = paths::nearest(&catalog, bare)
                    .map(|n| format!("; did you mean {n}?"))
                    .unwrap_or_default();
                return Err(format!(
                    "--what-if {path}: the definition has no field {bare}{hint}"
                ));
            }
        }
    }
    Ok(())
}
