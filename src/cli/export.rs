//! `gpcap export CAPTURE... -o DIR`: each capture through the engine into its partition
//! of a Parquet dataset (docs/export.md).

use super::Result;
use super::args::ExportArgs;
use std::process::ExitCode;

#[cfg(not(feature = "export"))]
pub fn run(_: &ExportArgs) -> Result<ExitCode> {
    Err(crate::cli::Error::Usage(
        "export is not compiled in; build with the `export` feature (on by default)".into(),
    ))
}

#[cfg(feature = "export")]
pub fn run(a: &ExportArgs) -> Result<ExitCode> {
    use super::progress_bar;
    use super::resolve;
    use crate::cli::Error;
    use gpcap::run::{Until, run_files, sample_files};
    use gpcap::sinks::export::Export;

    // With keys and inner layers, each layer's tables under `layer=NAME/` (docs/export.md).
    let mut choice = a.protocol.choice()?;
    choice.mtu_budget = a.mtu;
    choice.link_mtu = Some(a.link_mtu);
    // One protocol for the whole dataset: its tables must have one schema.
    let mut resolved = resolve(&choice, |i| sample_files(&a.captures, i))?;
    if resolved.cfg.protocol_id.is_none() && resolved.cfg.checksum.is_crc32() {
        return Err(Error::Usage(
            "no game protocol found in the captures: give it with -d DEFINITION or --protocol-id".into(),
        ));
    }
    if let Some(note) = gpcap::present::notes::identified(&resolved) {
        eprintln!("gpcap: {note}");
    }
    // Encrypted without keys: nothing inside can be read, and the stack would keep the
    // export on one core for nothing.
    if !gpcap::sinks::export::layers_readable(&resolved.cfg) {
        resolved.cfg.stack = None;
    }
    let mut names = std::collections::HashSet::new();
    for path in &a.captures {
        let name = capture_name(path);
        if !names.insert(name.clone()) {
            return Err(Error::Usage(format!(
                "two captures named {name}: each capture is the partition capture={name}; rename one"
            )));
        }
    }
    // SIGINT/SIGTERM end the capture being exported without committing it (a second
    // signal ends the program at once); captures committed before it stay.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone());
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
    limit_arenas();
    let mut committed = Vec::new();
    let mut cut_short = false;
    for path in &a.captures {
        let name = capture_name(path);
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let bar = progress_bar(size, &format!("export {name}"));
        let threads = gpcap::run_threads(std::slice::from_ref(path), a.threads);
        let mut sink = Export::new(&a.out, &a.partition, &name, resolved.cfg.clone())?.threads(threads);
        if sink.wants_acks() {
            // Acked, never acked, round trips and retransmissions are settled by later
            // packets: a pass of their own first, as `dissect` makes.
            let facts = gpcap::run::scans::ack_facts(std::slice::from_ref(path), resolved.cfg.clone())?;
            sink = sink.acks(std::sync::Arc::new(facts));
        }
        if a.bits {
            sink.bandwidth = Some(gpcap::sinks::bandwidth::Bandwidth::new(
                resolved.cfg.program.clone(),
                Default::default(),
            ));
        }
        let outcomes = run_files(
            std::slice::from_ref(path),
            resolved.cfg.clone(),
            &mut Until::new(&mut sink, &stopped),
            &mut |_, offset| {
                if let Some(b) = &bar {
                    b.set_position(offset);
                }
            },
        );
        // Cleared before a failure is said, too.
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let outcomes = outcomes?;
        if stopped() {
            // Dropping the sink removes its staging directory: nothing of this capture
            // is left that looks complete.
            drop(sink);
            let before = match committed.len() {
                0 => "no capture was exported".to_string(),
                _ => format!("exported before it, complete: {}", committed.join(", ")),
            };
            eprintln!(
                "gpcap: interrupted: {name} was not exported (its partition in {} is as it was before; {before})",
                a.out.display()
            );
            return Ok(ExitCode::from(130));
        }
        cut_short |= crate::cli::say_ends(outcomes.iter().map(|o| &o.end));
        let done = sink.close()?;
        let report = &done.report;
        let tables: Vec<String> = done.rows.iter().map(|(t, n)| format!("{t} {n}")).collect();
        eprintln!(
            "gpcap: {name}: {} frames → {} ({})",
            report.capture.frames,
            a.out.display(),
            tables.join(", ")
        );
        committed.push(name);
    }
    // A capture read only in part is exported as far as it was read (its partition holds
    // those frames) and fails the run: a pipeline sees the loss in the exit status.
    Ok(if cut_short {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Two malloc arenas for the export's dozen threads (engine, row workers, ordered stage,
/// a writer per table): one arena each kept what each had freed (a 268 MB capture on
/// 2 cores: peak RSS 125-135 MiB, 112 with two arenas).
#[cfg(feature = "export")]
fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator, which is thread-safe.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// The partition a capture is written to: its file name.
#[cfg(feature = "export")]
fn capture_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
