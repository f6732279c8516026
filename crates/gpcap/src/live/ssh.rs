//! Remote capture: `ssh://[user@]host[:port]/iface` runs `tcpdump -U -w -` on the host
//! through the system's ssh (the user's keys, agent and config) and follows its output
//! as a stream. The remote tcpdump's counters come from its stderr when it ends; a
//! failing ssh ends the capture with ssh's own message and status, a lost connection
//! with what was captured kept.

use super::{LiveCapture, LiveError, LiveStats};
use std::io::BufRead;
use std::process::{Command, Stdio};

/// Where to capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// `user@host` or `host`, as ssh takes it.
    pub destination: String,
    pub port: Option<u16>,
    pub iface: String,
}

impl Remote {
    /// `ssh://[user@]host[:port]/iface`; None when `s` is not an ssh address, an error
    /// when it is one without an interface or with a bad port.
    pub fn parse(s: &str) -> Option<Result<Remote, String>> {
        let rest = s.strip_prefix("ssh://")?;
        let Some((authority, iface)) = rest.split_once('/') else {
            return Some(Err(format!(
                "`{s}`: the remote interface is missing (ssh://user@host/eth0)"
            )));
        };
        if iface.is_empty() || authority.is_empty() {
            return Some(Err(format!("`{s}`: expected ssh://[user@]host[:port]/interface")));
        }
        // `host`, `host:port`, `[v6]` or `[v6]:port` (ssh takes a bare IPv6 address).
        let (user, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (format!("{u}@"), h),
            None => (String::new(), authority),
        };
        let (host, port) = match host.strip_prefix('[').and_then(|h| h.split_once(']')) {
            Some((h, rest)) => (h, rest.strip_prefix(':')),
            None if host.matches(':').count() == 1 => {
                host.split_once(':').map_or((host, None), |(h, p)| (h, Some(p)))
            }
            None => (host, None),
        };
        let port = match port.map(str::parse::<u16>) {
            None => None,
            Some(Ok(p)) => Some(p),
            Some(Err(_)) => return Some(Err(format!("`{s}`: bad port `{}`", port.unwrap_or_default()))),
        };
        let destination = format!("{user}{host}");
        Some(Ok(Remote {
            destination,
            port,
            iface: iface.to_string(),
        }))
    }
}

/// `s` quoted for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The remote shell's command: tcpdump in the background writing the capture to
/// stdout; when ssh's input closes (the local capture stops), tcpdump gets SIGINT, prints
/// its counters and exits; when tcpdump ends on its own, so does the session.
pub fn remote_command(tcpdump: &str, iface: &str, snaplen: i32, filter: &str) -> String {
    format!(
        "exec 3<&0; {tcpdump} -U -w - -s {snaplen} -i {} {} 3<&- & p=$!; \
         (read x <&3; kill -INT $p) > /dev/null 2>&1 & r=$!; \
         wait $p; c=$?; kill $r 2> /dev/null; exit $c",
        quote(iface),
        quote(filter)
    )
}

/// What tcpdump's stderr said: its counters, and the rest (for a failure's message).
#[derive(Debug, Default)]
struct Said {
    received: Option<u64>,
    dropped: Option<u64>,
    lines: Vec<String>,
}

/// Lines of ssh's and tcpdump's stderr kept for a message (the last ones).
const KEPT_LINES: usize = 12;

fn listen(stderr: impl std::io::Read) -> Said {
    let mut said = Said::default();
    for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
        let count = |suffix: &str| {
            line.strip_suffix(suffix)
                .and_then(|n| n.trim().parse::<u64>().ok())
        };
        if let Some(n) = count("packets received by filter") {
            said.received = Some(n);
        } else if let Some(n) = count("packets dropped by kernel") {
            said.dropped = Some(n);
        } else if count("packets captured").is_none() && !line.contains("listening on ") {
            if said.lines.len() == KEPT_LINES {
                said.lines.remove(0);
            }
            said.lines.push(line);
        }
    }
    said
}

/// Starts the remote capture: `ssh_command` (split at spaces, e.g. `ssh -p 2222 -i key`)
/// with the destination and [`remote_command`].
pub fn start(
    remote: &Remote,
    ssh_command: &str,
    tcpdump: &str,
    snaplen: i32,
    filter: &str,
) -> Result<LiveCapture, LiveError> {
    let name = match remote.port {
        Some(p) => format!("ssh://{}:{p}/{}", remote.destination, remote.iface),
        None => format!("ssh://{}/{}", remote.destination, remote.iface),
    };
    let mut words = ssh_command.split_whitespace();
    let program = words.next().unwrap_or("ssh").to_string();
    let mut cmd = Command::new(&program);
    cmd.args(words);
    if let Some(p) = remote.port {
        cmd.arg("-p").arg(p.to_string());
    }
    cmd.arg(&remote.destination)
        .arg(remote_command(tcpdump, &remote.iface, snaplen, filter))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| LiveError::Other {
        iface: name.clone(),
        message: format!("cannot run `{program}`: {e}"),
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(LiveError::Other {
            iface: name,
            message: "ssh's pipes were not set up".into(),
        });
    };
    let listener = std::thread::spawn(move || listen(stderr));
    let shown = ssh_command.to_string();
    let ended: super::Ended = Box::new(move |stats: &mut LiveStats| {
        let status = child.wait();
        let said = listener.join().unwrap_or_default();
        stats.remote_received = said.received;
        stats.remote_dropped = said.dropped;
        match status {
            Ok(s) if s.success() => None,
            Ok(s) => Some(format!(
                "`{shown}` exited with {}: {}",
                s.code().map_or("a signal".to_string(), |c| format!("status {c}")),
                if said.lines.is_empty() {
                    "(nothing on its stderr)".to_string()
                } else {
                    said.lines.join(" / ")
                }
            )),
            Err(e) => Some(format!("cannot wait for `{shown}`: {e}")),
        }
    });
    // Closing ssh's input asks the remote tcpdump to stop (see `remote_command`).
    let stop: Box<dyn FnOnce() + Send> = Box::new(move || drop(stdin));
    LiveCapture::from_stream(&name, stdout, Some(ended), Some(stop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let r = |s: &str| Remote::parse(s);
        assert_eq!(r("eth0"), None);
        assert_eq!(
            r("ssh://game@10.0.0.5/eth0"),
            Some(Ok(Remote {
                destination: "game@10.0.0.5".into(),
                port: None,
                iface: "eth0".into()
            }))
        );
        assert_eq!(
            r("ssh://host:2222/ens3"),
            Some(Ok(Remote {
                destination: "host".into(),
                port: Some(2222),
                iface: "ens3".into()
            }))
        );
        assert_eq!(r("ssh://[::1]/lo").unwrap().unwrap().destination, "::1");
        assert_eq!(r("ssh://[::1]:22/lo").unwrap().unwrap().port, Some(22));
        assert!(r("ssh://host").unwrap().is_err());
        assert!(r("ssh://host:x/eth0").unwrap().is_err());
    }

    #[test]
    fn tcpdump_counters_are_read_from_its_stderr() {
        let text = "tcpdump: listening on eth0, link-type EN10MB (Ethernet), snapshot length 65535 bytes\n\
                    120 packets captured\n130 packets received by filter\n7 packets dropped by kernel\n";
        let s = listen(text.as_bytes());
        assert_eq!((s.received, s.dropped), (Some(130), Some(7)));
        assert!(s.lines.is_empty(), "{:?}", s.lines);
        let s = listen("tcpdump: eth9: No such device exists\n".as_bytes());
        assert_eq!(s.lines, ["tcpdump: eth9: No such device exists"]);
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(quote("a'b"), r"'a'\''b'");
    }
}
