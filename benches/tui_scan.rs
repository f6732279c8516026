//! The TUI's index and field-filter scan on a capture: bytes of index per packet and the
//! scan's seconds. `GPCAP_TUI_SCAN=FILE cargo bench --bench tui_scan` (a bundled capture
//! without it; `gpcap gen -d dissectors/article.kdl -o F --clients 128 --duration 850`
//! writes the 10M-frame capture of the targets). `GPCAP_TUI_FILTER` changes the filter.

use gpcap::analysis::Config;
use gpcap_tui::{App, Index, load};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The process's resident memory, KiB (Linux).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = std::env::var_os("GPCAP_TUI_SCAN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("captures/lossy-bursts.pcap"));
    let filter = std::env::var("GPCAP_TUI_FILTER")
        .unwrap_or_else(|_| "scene.objects.at_rest == true && !reassembled".into());
    let p = Arc::new(gpcap::dissect::load(&root.join("dissectors/article.kdl")).expect("article.kdl"));
    let cfg = Config::from_program(p);
    let (tx, rx) = std::sync::mpsc::channel();
    let started = Instant::now();
    let before = rss_kib();
    let loader = {
        let (path, cfg) = (path.clone(), cfg.clone());
        std::thread::spawn(move || load(&path, cfg, tx))
    };
    let mut app = App::new(Index::new(&path), rx, cfg.clone());
    while !app.index.done {
        app.tick();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    loader.join().expect("loader");
    app.tick();
    let rows = app.index.rows.len() as f64;
    let after = rss_kib();
    println!(
        "{}: {} rows indexed in {:.2} s",
        path.display(),
        rows,
        started.elapsed().as_secs_f64()
    );
    let ix = &app.index;
    println!(
        "index: {:.1} bytes/row ({:.1} the rows, {:.1} the fragments' frames, {:.1} kept bytes), {:.1} bytes/row of resident memory",
        ix.bytes() as f64 / rows,
        ix.rows.bytes() as f64 / rows,
        ix.fragments.bytes() as f64 / rows,
        ix.kept
            .values()
            .map(|k| k.payload.len() + 8 * k.fragment_frames.len())
            .sum::<usize>() as f64
            / rows,
        (after.saturating_sub(before) * 1024) as f64 / rows
    );
    let filter = gpcap::Filter::parse(&filter, cfg.program.as_deref()).expect("filter");
    let engine = timed("one engine pass (before)", || {
        let (tx, rx) = std::sync::mpsc::channel();
        gpcap::run::scans::scan(&path, cfg.clone(), filter.clone(), tx, Default::default());
        rx
    });
    let snap = app
        .index
        .snapshot(&cfg, &filter)
        .expect("the index can be scanned");
    for workers in [1, 2] {
        let rows = timed(&format!("the index on {workers} thread(s)"), || {
            let (tx, rx) = std::sync::mpsc::channel();
            gpcap::sinks::index::scan(
                snap.clone(),
                cfg.clone(),
                filter.clone(),
                workers,
                tx,
                Default::default(),
            );
            rx
        });
        assert_eq!(rows, engine, "{workers} thread(s) against the engine");
    }
}

/// Seconds of CPU the process has used (user and system).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<i64> = after.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (f.get(10).unwrap_or(&0) + f.get(11).unwrap_or(&0)) as f64 / 100.0
}

/// Runs a scan, prints its wall and CPU seconds, and returns the rows it selected.
fn timed(
    what: &str,
    run: impl FnOnce() -> std::sync::mpsc::Receiver<gpcap::sinks::select::ScanUpdate>,
) -> Vec<u32> {
    use gpcap::sinks::select::ScanUpdate;
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let rx = run();
    let mut rows = Vec::new();
    for u in rx {
        match u {
            ScanUpdate::Rows { rows: r, .. } => rows.extend(r),
            ScanUpdate::Done { error } => assert!(error.is_none(), "{what}: {error:?}"),
        }
    }
    println!(
        "field scan, {what}: {:.2} s wall, {:.2} s CPU, {} rows selected",
        wall.elapsed().as_secs_f64(),
        cpu_seconds() - cpu,
        rows.len()
    );
    rows
}
