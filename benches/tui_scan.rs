//! The TUI's index and field-filter scan on a capture: bytes of index per packet and the
//! scan's seconds. `GPCAP_TUI_SCAN=FILE cargo bench --bench tui_scan` (a bundled capture
//! without it; `gpcap gen -d dissectors/article.kdl -o F --clients 128 --duration 850`
//! writes the 10M-frame capture of the targets). `GPCAP_TUI_FILTER` changes the filter.

use gpcap::analysis::Config;
use gpcap::tui::{App, Index, load};
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
    let mut app = App::new(Index::new(&path), rx, cfg);
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
    println!(
        "index: {:.1} bytes/row held by the rows, {:.1} bytes/row of resident memory",
        app.index.rows_bytes() as f64 / rows,
        (after.saturating_sub(before) * 1024) as f64 / rows
    );
    let started = Instant::now();
    app.apply_filter(&filter);
    while !app.scan_finished() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        app.tick();
    }
    println!(
        "field scan `{filter}`: {:.2} s, {} rows selected{}",
        started.elapsed().as_secs_f64(),
        app.view.len(),
        app.scan_status().map(|s| format!(" ({s})")).unwrap_or_default()
    );
}
