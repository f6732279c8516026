//! `analyze --bits`: the statistics and the profile from one run of the engine, every
//! datagram dissected into its field tree.

use super::{Bandwidth, Options};
use crate::analysis::{Report, Statistics};
use crate::capture::CaptureError;
use crate::dissect::paths;
use crate::engine::{Config, Engine, run_files};
use std::path::PathBuf;

/// The report of `captures` with its `bandwidth` profile. On one core: the field tree
/// is recorded for every datagram, which the sharded and pipelined runs do not carry.
pub fn analyze_files(
    captures: &[PathBuf],
    cfg: Config,
    opts: Options,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<Report, CaptureError> {
    let mut sinks = (
        Statistics::new(cfg.clone()),
        Bandwidth::new(cfg.program.clone(), opts),
    );
    run_files(captures, Engine::new(cfg, true), &mut sinks, progress, &|_| false)?;
    let (stats, bandwidth) = sinks;
    let mut report = stats.report();
    report.bandwidth = Some(bandwidth.report());
    Ok(report)
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
