//! `gpcap live IFACE`: capture, analyze and show live traffic (the `live` feature).

use super::Result;
use super::args::LiveArgs;
#[cfg(feature = "live")]
use crate::outln;
use std::process::ExitCode;

#[cfg(not(feature = "live"))]
pub fn run(_: &LiveArgs) -> Result<ExitCode> {
    Err(gpcap::Error::Usage(
        "live capture is not compiled in; build it with `cargo install --path . --features live` (needs libpcap: apt-get install libpcap-dev)".into(),
    ))
}

#[cfg(feature = "live")]
pub fn run(a: &LiveArgs) -> Result<ExitCode> {
    use crate::out;
    use gpcap::Error;
    use gpcap::analysis::Report;
    use gpcap::engine::resolve::resolve;
    use gpcap::engine::session::Session;
    use gpcap::live::{LiveCapture, LiveOptions, interfaces};
    use gpcap::present;
    use gpcap::sinks::index::IndexSink;
    use gpcap::tui::{App, Index};
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    if a.list || a.iface.is_none() {
        let list = interfaces().map_err(Error::Usage)?;
        for i in list {
            outln!(
                "{:<16} {}{}",
                i.name,
                i.addresses.join(" "),
                i.description.map(|d| format!("  ({d})")).unwrap_or_default()
            );
        }
        return Ok(if a.list {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let iface = a.iface.clone().unwrap_or_default();
    let opts = LiveOptions {
        iface: iface.clone(),
        bpf: a.filter.clone(),
        snaplen: a.snaplen,
        ..LiveOptions::default()
    };
    let mut cap = LiveCapture::start(&opts).map_err(|e| Error::Usage(e.to_string()))?;
    let stop = Arc::new(AtomicBool::new(false));
    if a.no_tui {
        // The first signal stops the capture and prints the report; a second one exits.
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone());
            let _ = signal_hook::flag::register(sig, stop.clone());
        }
    }
    let start = Instant::now();
    let over = |stop: &AtomicBool| {
        stop.load(Ordering::Relaxed) || a.duration.is_some_and(|d| start.elapsed().as_secs_f64() >= d)
    };

    // The protocol: from the definition or flags, else identified from the first traffic.
    let mut choice = a.protocol.choice()?;
    choice.link_mtu = Some(a.link_mtu);
    choice.mtu_budget = a.mtu;
    let mut early: Vec<gpcap::live::Captured> = Vec::new();
    let cfg = resolve(&choice, |ident| {
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until && early.len() < 2000 && !over(&stop) {
            if let Some(c) = cap.next(Duration::from_millis(50)) {
                ident.frame(cap.linktype, &c.data);
                early.push(c);
            }
        }
        Ok(())
    })?
    .cfg;
    let (tx, rx) = std::sync::mpsc::channel();
    // Reports alone need no per-packet rows: a long --no-tui run keeps bounded memory.
    let index = (!a.no_tui).then(|| {
        let mut ix = IndexSink::new(tx);
        ix.keep_frames = true;
        ix
    });
    let mut session = Session::new(cfg.clone(), cap.linktype, index, a.write.as_deref())
        .map_err(|e| Error::io(a.write.as_deref().unwrap_or(Path::new("--write")).display(), e))?;
    session
        .feed(early.iter().map(|c| (c.ts_ns, c.origlen, c.data.as_slice())))
        .map_err(|e| Error::io("--write", e))?;

    let stats_line = |s: &gpcap::live::LiveStats| {
        format!(
            "captured {} · kernel drops {} · interface drops {} · queue drops {}",
            s.captured, s.kernel_dropped, s.if_dropped, s.queue_dropped
        )
    };
    // The analysis loop: drain the queue in batches, publish a report now and then.
    let pump = |session: &mut Session, cap: &LiveCapture, wait: Duration| -> Result<()> {
        // Up to 16 batches (4,096 frames) between two looks at the clock.
        let mut wait = wait;
        for _ in 0..16 {
            let Some(batch) = cap.next_batch(wait) else {
                break;
            };
            wait = Duration::ZERO;
            let fed = session.feed(batch.frames().map(|f| (f.ts_ns, f.origlen, f.data)));
            cap.recycle(batch);
            fed.map_err(|e| Error::io("--write", e))?;
        }
        Ok(())
    };

    if a.no_tui {
        let mut next_report = Instant::now() + Duration::from_secs_f64(a.interval.max(0.1));
        let print = |r: &Report, s: &gpcap::live::LiveStats, last: bool| {
            if a.json {
                let v = serde_json::json!({"live": s, "final": last, "elapsed_s": start.elapsed().as_secs_f64(), "report": r});
                outln!("{v}");
            } else {
                outln!(
                    "Live capture on {iface}: {:.1} s, {}{}",
                    start.elapsed().as_secs_f64(),
                    stats_line(s),
                    if last { " (final)" } else { "" }
                );
                out!("{}", present::tables::render(r));
            }
        };
        while !over(&stop) && cap.is_running() {
            pump(&mut session, &cap, Duration::from_millis(50))?;
            if Instant::now() >= next_report {
                next_report += Duration::from_secs_f64(a.interval.max(0.1));
                print(&session.report(), &cap.stats(), false);
            }
        }
        let stats = cap.stop();
        while let Some(batch) = cap.next_batch(Duration::ZERO) {
            if session
                .feed(batch.frames().map(|f| (f.ts_ns, f.origlen, f.data)))
                .is_err()
            {
                break;
            }
        }
        let failure = cap.failure.lock().ok().and_then(|f| f.clone());
        let report = session.finish().map_err(|e| Error::io("--write", e))?;
        print(&report, &stats, true);
        if let Some(f) = failure {
            return Err(Error::Usage(format!("capture on {iface} stopped: {f}")));
        }
        return Ok(ExitCode::SUCCESS);
    }

    // The terminal UI: analysis on its own thread, the screen on this one.
    let analysis_stop = Arc::new(AtomicBool::new(false));
    let astop = analysis_stop.clone();
    let analysis = std::thread::spawn(move || {
        let mut last = Instant::now();
        while !astop.load(Ordering::Relaxed) {
            if pump(&mut session, &cap, Duration::from_millis(50)).is_err() {
                break;
            }
            if last.elapsed() > Duration::from_secs(1) {
                last = Instant::now();
                let report = session.report();
                let line = stats_line(&cap.stats());
                if let Some(ix) = session.index.as_mut() {
                    ix.live_status(line);
                    ix.report(report);
                }
            }
        }
        cap.stop();
    });
    let mut index = Index::new(Path::new(&iface));
    index.name = format!("live {iface}");
    let mut app = App::new(index, rx, cfg);
    app.definition = a.protocol.dissector.clone();
    app.live = true;
    app.quit_at = a.duration.map(|d| start + Duration::from_secs_f64(d));
    let result = super::tui::event_loop(&mut app);
    analysis_stop.store(true, Ordering::Relaxed);
    let _ = analysis.join();
    result
}
