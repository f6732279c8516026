//! `gpcap replay CAPTURE... --to HOST:PORT [--speed X]`: the capture's game datagrams
//! through the engine into a UDP socket; what was sent as JSON on stdout.

use super::Result;
use super::args::ReplayArgs;
use super::resolve;
use crate::cli::Error;
use crate::outln;
use gpcap::run::{run_files, sample_files};
use gpcap::sinks::replay::Replay;
use std::process::ExitCode;

pub fn run(a: &ReplayArgs) -> Result<ExitCode> {
    let resolved = resolve(&a.protocol.choice()?, |i| sample_files(&a.captures, i))?;
    if let (Some(from), Some(to)) = (a.from, a.to)
        && from.is_ipv4() != to.is_ipv4()
    {
        return Err(Error::Usage(format!(
            "--from {from} and --to {to} are not both IPv4 or both IPv6"
        )));
    }
    let mut replay = match (&a.iface, a.to) {
        (Some(iface), to) => on_link(iface, a.from, to, a.speed)?,
        (None, Some(to)) => {
            let from = a.from.unwrap_or_else(|| {
                let any = if to.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" };
                any.parse().unwrap_or(to)
            });
            Replay::new(from, to, a.speed).map_err(|e| Error::io(format!("UDP socket {from} → {to}"), e))?
        }
        (None, None) => return Err(Error::Usage("replay needs --to or --iface".into())),
    };
    replay.until = a
        .duration
        .map(|d| std::time::Instant::now() + std::time::Duration::from_secs_f64(d));
    for _ in 0..a.repeat {
        if replay.is_done() {
            break;
        }
        let outcomes = run_files(&a.captures, resolved.cfg.clone(), &mut replay, &mut |_, _| {})?;
        for o in &outcomes {
            if let Some(e) = &o.end.error {
                eprintln!("gpcap: {e}");
            }
        }
    }
    let sent = replay.finish();
    outln!(
        "{}",
        serde_json::to_string(&sent).map_err(|e| Error::io("stdout", std::io::Error::other(e)))?
    );
    say_what_was_not_sent(a, &sent);
    // A replay that lost datagrams on the way out did not do what was asked.
    Ok(if sent.errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Datagrams refused and directions merged, said on stderr: the JSON on stdout counts
/// them, but a person (or `live` on the other end) must not take a partial replay for a
/// whole one.
fn say_what_was_not_sent(a: &ReplayArgs, sent: &gpcap::sinks::replay::Replayed) {
    let to = a.to.map(|t| t.to_string());
    let dest = to.as_deref().or(a.iface.as_deref()).unwrap_or("?");
    if sent.errors > 0 {
        let unit = if a.iface.is_some() { "frames" } else { "datagrams" };
        let total = if a.iface.is_some() {
            sent.frames
        } else {
            sent.datagrams
        } + sent.errors;
        let why = sent.first_error.as_deref().unwrap_or("refused");
        let hint = if why.contains("refused") && a.iface.is_none() {
            " — nothing listens there: the host answered with ICMP port unreachable"
        } else {
            ""
        };
        eprintln!(
            "gpcap: replay: {} of {total} {unit} not sent to {dest} (first: {why}){hint}",
            sent.errors
        );
    }
    if sent.shared_directions > 0 {
        let why = if a.from.is_some_and(|f| f.port() != 0) {
            "--from names one port".to_string()
        } else {
            format!("at most {} sockets are opened", gpcap::sinks::replay::MAX_SOCKETS)
        };
        let n = sent.shared_directions;
        let (these, share) = if n == 1 {
            ("direction", "shares")
        } else {
            ("directions", "share")
        };
        eprintln!(
            "gpcap: replay: {n} captured {these} {share} another's socket ({why}): a receiver sees them merged into one flow"
        );
    }
}

#[cfg(target_os = "linux")]
fn on_link(
    iface: &str,
    from: Option<std::net::SocketAddr>,
    to: Option<std::net::SocketAddr>,
    speed: f64,
) -> Result<Replay> {
    Replay::on_link(iface, from, to, speed).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            " (needs root or CAP_NET_RAW)"
        } else {
            ""
        };
        Error::io(format!("packet socket on {iface}{hint}"), e)
    })
}

#[cfg(not(target_os = "linux"))]
fn on_link(
    _: &str,
    _: Option<std::net::SocketAddr>,
    _: Option<std::net::SocketAddr>,
    _: f64,
) -> Result<Replay> {
    Err(Error::Usage(
        "--iface sends through a Linux packet socket; use --to here".into(),
    ))
}
