//! `gpcap live SOURCE`: capture, analyze and show live traffic — from an interface, a
//! growing pcap/pcapng stream (`-`, a FIFO), or a remote tcpdump over ssh.

use super::Result;
use super::args::LiveArgs;
use crate::cli::Error;
use crate::{out, outln};
use gpcap::analysis::Report;
use gpcap::live::bpf::Selection;
use gpcap::live::ssh::Remote;
use gpcap::live::{LiveCapture, LiveOptions, LiveStats, interfaces};
use gpcap::present;
use gpcap::resolve::Choice;
use gpcap::run::Session;
use gpcap::sinks::index::IndexSink;
use gpcap_tui::{App, Index};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub fn run(a: &LiveArgs) -> Result<ExitCode> {
    super::set_wide(a.wide);
    let Some(source) = a.iface.clone().filter(|_| !a.list) else {
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
    };
    // Keys and stacked definitions as analyze takes them: the same engine decrypts and
    // reads the inner layers, and the report has the same `decryption` and `layers`.
    let mut choice = a.protocol.choice()?;
    choice.link_mtu = Some(a.link_mtu);
    choice.mtu_budget = a.mtu;
    let Some(cap) = open(a, &source, &choice)? else {
        return Ok(ExitCode::SUCCESS);
    };
    drive(a, &source, cap, choice)
}

/// What the kernel filter (or the remote tcpdump) keeps: the protocol's ports, else all UDP.
fn selection(choice: &Choice) -> Selection {
    let ports = if choice.any_port {
        Vec::new()
    } else if !choice.ports.is_empty() {
        choice.ports.clone()
    } else {
        choice
            .program
            .as_ref()
            .map(|p| p.params.ports.clone())
            .unwrap_or_default()
    };
    Selection {
        ports,
        skip_outgoing: false,
    }
}

/// A growing capture stream rather than an interface: `-`, a path, a FIFO.
pub fn is_stream(source: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    source == "-" || source.contains('/') || std::fs::metadata(source).is_ok_and(|m| m.file_type().is_fifo())
}

/// The capture; none when the user quit before a stream's header came.
fn open(a: &LiveArgs, source: &str, choice: &Choice) -> Result<Option<LiveCapture>> {
    let sel = selection(choice);
    let usage = |e: gpcap::live::LiveError| Error::Usage(e.to_string());
    if let Some(remote) = Remote::parse(source) {
        let remote = remote.map_err(Error::Usage)?;
        let filter = a
            .filter
            .clone()
            .unwrap_or_else(|| gpcap::live::bpf::expression(&sel));
        return gpcap::live::ssh::start(&remote, &a.ssh_command, &a.remote_tcpdump, a.snaplen, &filter)
            .map(Some)
            .map_err(usage);
    }
    if is_stream(source) {
        if a.filter.is_some() {
            eprintln!("gpcap: --filter does not apply to a stream: every frame in it is read");
        }
        let name = source.to_string();
        let input: Box<dyn std::io::Read + Send> = if source == "-" {
            Box::new(std::io::stdin())
        } else {
            Box::new(std::fs::File::open(source).map_err(|e| Error::io(source, e))?)
        };
        let opening = move || LiveCapture::from_stream(&name, input, None, None).map_err(usage);
        return super::live_wait::until_header(a.no_tui, source, opening);
    }
    let mut bpf = a.filter.clone();
    if bpf.is_some() && !cfg!(feature = "libpcap") {
        eprintln!(
            "gpcap: --filter needs the libpcap build (cargo install --path . --features libpcap); capturing instead what gpcap analyzes: {}",
            sel.describe()
        );
        bpf = None;
    }
    let opts = LiveOptions {
        iface: source.to_string(),
        bpf,
        ports: sel.ports,
        snaplen: a.snaplen,
        ..LiveOptions::default()
    };
    LiveCapture::start(&opts).map(Some).map_err(usage)
}

/// The capture's counters beside the report: the frames captured but not in it are
/// said (still queued, or given up at the end), so that `captured` and the report's
/// `frames` agree.
fn stats_line(s: &LiveStats, last: bool) -> String {
    let queued = match s.not_analyzed {
        0 => String::new(),
        n if last => format!(" ({n} not analyzed: the run stopped while the analysis was behind)"),
        n => format!(" ({n} not analyzed yet)"),
    };
    let mut line = format!(
        "captured {}{queued} · kernel drops {} · interface drops {} · queue drops {}",
        s.captured, s.kernel_dropped, s.if_dropped, s.queue_dropped
    );
    if let Some(d) = s.remote_dropped {
        line += &format!(" · remote kernel drops {d}");
    }
    line
}

/// A batch taken from the queue and how many of its frames were analyzed: the rest is
/// analyzed after a report that fell due, or given up when the run stops.
type Held = Option<(gpcap::live::FrameBatch, usize)>;

/// How long the frames queued when the run is stopped (`--duration`, Ctrl-C) are still
/// analyzed: all of them when the analysis keeps up; the rest are counted as not analyzed.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The analysis loop's step: the held batch, then up to 16 from the queue (the first
/// waited for at most `wait`), analyzed while `go_on` holds (asked every few frames, so
/// that a slow definition holds neither a report nor a stop back). False when no frame
/// was waiting.
fn pump(
    session: &mut Session,
    cap: &LiveCapture,
    held: &mut Held,
    wait: Duration,
    go_on: &dyn Fn() -> bool,
) -> Result<bool> {
    let mut wait = wait;
    let mut any = false;
    for _ in 0..16 {
        if !go_on() {
            break;
        }
        let Some((batch, done)) = held.take().or_else(|| cap.next_batch(wait).map(|b| (b, 0))) else {
            break;
        };
        any = true;
        wait = Duration::ZERO;
        let fed = session.feed_frames_while(batch.frames_from(done), go_on);
        match fed {
            Ok(n) if done + n < batch.len() => {
                *held = Some((batch, done + n));
                break;
            }
            _ => cap.recycle(batch),
        }
        fed.map_err(|e| Error::io("--write", e))?;
    }
    Ok(any)
}

/// The capture's counters with the frames captured but not (yet) analyzed.
fn counted(cap: &LiveCapture, session: &Session) -> LiveStats {
    let s = cap.stats();
    LiveStats {
        captured: s.captured.max(session.frames()),
        not_analyzed: s.captured.saturating_sub(session.frames()),
        ..s
    }
}

/// Stops the capture and gives up the frames the analysis has not reached: counted as
/// not analyzed, and still written to `--write` (a write error is said when the session
/// finishes).
fn give_up(session: &mut Session, cap: &mut LiveCapture, held: &mut Held) {
    if let Some((batch, done)) = held.take() {
        session.write_unanalyzed(batch.frames_from(done));
        cap.recycle(batch);
    }
    cap.abandon(|b| session.write_unanalyzed(b.frames()));
}

/// The capture has ended or been stopped: what is queued is analyzed (all of it when
/// the capture ended on its own, for [`STOP_GRACE`] at most when it was stopped), the
/// rest given up; the counters after.
fn wind_down(session: &mut Session, cap: &mut LiveCapture, held: &mut Held, stopped: bool) -> LiveStats {
    if stopped {
        cap.halt();
        let until = Instant::now() + STOP_GRACE;
        let go_on = || Instant::now() < until;
        while go_on() && matches!(pump(session, cap, held, Duration::ZERO, &go_on), Ok(true)) {}
        give_up(session, cap, held);
    } else {
        cap.stop();
        while matches!(pump(session, cap, held, Duration::ZERO, &|| true), Ok(true)) {}
    }
    counted(cap, session)
}

fn drive(a: &LiveArgs, name: &str, cap: LiveCapture, choice: Choice) -> Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    if a.no_tui {
        // The first signal stops the capture and prints the report; a second one exits.
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone());
            let _ = signal_hook::flag::register(sig, stop.clone());
        }
    }
    let start = Instant::now();
    let over =
        || stop.load(Ordering::Relaxed) || a.duration.is_some_and(|d| start.elapsed().as_secs_f64() >= d);
    if a.no_tui {
        say_what_comes(a, name, &choice);
    }

    // The protocol: from the definition or flags, else identified from the first traffic.
    let mut early: Vec<gpcap::live::Captured> = Vec::new();
    let cfg = super::resolve(&choice, |ident| {
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until && early.len() < 2000 && !over() {
            if let Some(c) = cap.next(Duration::from_millis(50)) {
                ident.frame(c.linktype, &c.data);
                early.push(c);
            } else if !cap.is_running() {
                break;
            }
        }
        Ok(())
    })?
    .cfg;
    // A display filter that does not parse is refused, as dissect and `tui FILE` do.
    if let Some(f) = &a.display_filter {
        super::display_filter(f, &cfg)?;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    // Reports alone need no per-packet rows: a long --no-tui run keeps bounded memory.
    let index = (!a.no_tui).then(|| {
        let mut ix = IndexSink::new(tx);
        ix.keep_frames = true;
        ix
    });
    let session = open_session(a, &cfg, &cap, index, &early)?;
    if a.no_tui {
        return report_until_stopped(a, name, cap, session, &over, start);
    }
    show_until_quit(a, name, cap, session, rx, cfg, start)
}

/// The session the capture is fed to (writing `--write` as it goes), with the frames
/// read while the protocol was being identified.
fn open_session(
    a: &LiveArgs,
    cfg: &gpcap::Config,
    cap: &LiveCapture,
    index: Option<IndexSink>,
    early: &[gpcap::live::Captured],
) -> Result<Session> {
    let mut session = Session::new(cfg.clone(), cap.linktype, index, a.write.as_deref())
        .map_err(|e| Error::io(a.write.as_deref().unwrap_or(Path::new("--write")).display(), e))?;
    session
        .feed_frames(early.iter().map(|c| gpcap::capture::Frame {
            number: 0,
            ts_ns: c.ts_ns,
            linktype: c.linktype,
            interface: 0,
            origlen: c.origlen,
            offset: 0,
            data: &c.data,
        }))
        .map_err(|e| Error::io("--write", e))?;
    Ok(session)
}

/// `--no-tui` says at once what it does and when the first report comes, instead of
/// seconds of silence while it identifies the protocol and waits for the interval.
fn say_what_comes(a: &LiveArgs, name: &str, choice: &Choice) {
    let (identify, after) = if choice.program.is_none() && choice.protocol_id.is_none() {
        (
            " — the protocol is identified from the first 3 s of traffic",
            " after that",
        )
    } else {
        ("", "")
    };
    let end = match a.duration {
        Some(d) => format!("after {d} s (or Ctrl-C)"),
        None => "at Ctrl-C".to_string(),
    };
    eprintln!(
        "gpcap: capturing on {name}{identify}; a first report {} s{after}, then one every {} s, and the final one {end}",
        first_report(a).as_secs_f64(),
        a.interval.max(0.1)
    );
}

/// When the first report comes: after a second of analysis (or the interval, if shorter).
fn first_report(a: &LiveArgs) -> Duration {
    Duration::from_secs_f64(a.interval.clamp(0.1, 1.0))
}

/// `--no-tui`: a report every `--interval` seconds (the first after a second) until the
/// capture stops (a signal, `--duration`, the stream's end), then the final one with
/// every frame captured — once: no periodic report when the capture is stopping.
fn report_until_stopped(
    a: &LiveArgs,
    name: &str,
    mut cap: LiveCapture,
    mut session: Session,
    over: &dyn Fn() -> bool,
    start: Instant,
) -> Result<ExitCode> {
    let mut next_report = Instant::now() + first_report(a);
    let print = |r: &Report, s: &LiveStats, last: bool| {
        if a.json {
            let v = serde_json::json!({"live": s, "final": last, "elapsed_s": start.elapsed().as_secs_f64(), "report": r});
            outln!("{v}");
        } else {
            outln!(
                "Live capture on {name}: {:.1} s, {}{}",
                start.elapsed().as_secs_f64(),
                stats_line(s, last),
                if last { " (final)" } else { "" }
            );
            out!(
                "{}",
                present::tables::fitted(super::table_width(), || present::tables::render(r))
            );
        }
    };
    let mut held: Held = None;
    while !over() && cap.is_running() {
        let due = next_report;
        pump(&mut session, &cap, &mut held, Duration::from_millis(50), &|| {
            !over() && Instant::now() < due
        })?;
        // On time while the analysis is behind; a capture stopping now gets its final
        // report only.
        if Instant::now() >= next_report && !over() && cap.is_running() {
            next_report = Instant::now() + Duration::from_secs_f64(a.interval.max(0.1));
            print(&session.report(), &counted(&cap, &session), false);
        }
    }
    // Stopped (rather than a stream that ended): what the analysis has not reached is
    // given up and counted, not analyzed for as long as it takes.
    let stopped = over();
    let stats = wind_down(&mut session, &mut cap, &mut held, stopped);
    let failure = cap.failure.lock().ok().and_then(|f| f.clone());
    let report = session.finish().map_err(|e| Error::io("--write", e))?;
    print(&report, &stats, true);
    if let Some(f) = failure {
        return Err(Error::Usage(format!(
            "capture from {name} stopped: {f} (the {} frames captured before are in the report{})",
            stats.captured,
            if a.write.is_some() { " and in --write" } else { "" }
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// The terminal UI: analysis on its own thread, the screen on this one, until the user
/// quits (or `--duration` ends); a capture that broke off is an error after.
fn show_until_quit(
    a: &LiveArgs,
    name: &str,
    cap: LiveCapture,
    session: Session,
    rx: std::sync::mpsc::Receiver<gpcap::sinks::index::Update>,
    cfg: gpcap::Config,
    start: Instant,
) -> Result<ExitCode> {
    let analysis_stop = Arc::new(AtomicBool::new(false));
    let astop = analysis_stop.clone();
    let failure = cap.failure.clone();
    let source = name.to_string();
    let analysis = std::thread::spawn(move || analyze_live(session, cap, &astop, &source));
    let mut index = Index::new(Path::new(name));
    index.name = format!("live {name}");
    let mut app = App::new(index, rx, cfg);
    // Read again on `r`: only a file can be (a pipe or FIFO was read once).
    app.definition = a.protocol.dissector.first().filter(|p| p.is_file()).cloned();
    app.live = true;
    app.quit_at = a.duration.map(|d| start + Duration::from_secs_f64(d));
    if let Some(f) = &a.display_filter {
        app.apply_filter(f);
    }
    let result = super::tui::event_loop(&mut app);
    analysis_stop.store(true, Ordering::Relaxed);
    let _ = analysis.join();
    result?;
    match failure.lock().ok().and_then(|f| f.clone()) {
        Some(f) => Err(Error::Usage(format!("capture from {name} stopped: {f}"))),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The TUI's analysis thread: feeds the session until told to stop, sends the index a
/// report each second, and finishes it when the stream ends.
fn analyze_live(mut session: Session, mut cap: LiveCapture, stop: &AtomicBool, source: &str) {
    let mut last = Instant::now();
    let mut held: Held = None;
    while !stop.load(Ordering::Relaxed) {
        let running = cap.is_running();
        let go_on = || !stop.load(Ordering::Relaxed) && last.elapsed() <= Duration::from_secs(1);
        if pump(&mut session, &cap, &mut held, Duration::from_millis(50), &go_on).is_err() {
            break;
        }
        // A stream that ended: everything it held is analyzed, the report is final.
        if !running {
            let stats = wind_down(&mut session, &mut cap, &mut held, false);
            let why = cap.failure.lock().ok().and_then(|f| f.clone());
            let line = format!("{} · the stream ended", stats_line(&stats, true));
            if let Some(ix) = session.index.as_mut() {
                ix.live_status(line);
            }
            let _ = session.finish_with(why.map(|w| format!("capture from {source} stopped: {w}")));
            return;
        }
        if last.elapsed() > Duration::from_secs(1) {
            last = Instant::now();
            let line = stats_line(&counted(&cap, &session), false);
            let report = session.report();
            if let Some(ix) = session.index.as_mut() {
                ix.live_status(line);
                ix.report(report);
            }
        }
    }
    // Quit: the queue is given up at once (the user is waiting for the screen to close).
    give_up(&mut session, &mut cap, &mut held);
    let _ = session.finish();
}
