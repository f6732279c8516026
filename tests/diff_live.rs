//! `gpcap diff` on a real link: a sender's namespace, a router's and a receiver's, the
//! router's link to the receiver impaired by `tc netem` (delay 20 ms ± 5 ms, loss 2%;
//! the jitter reorders datagrams sent 2.5 ms apart). `gpcap send` sends a session;
//! `gpcap live --write` captures it on the sender's link (A) and on the receiver's (B).
//! A capture on the impaired link's own sending end would see its traffic after netem
//! (packet taps see what leaves the queue), so A is one hop before it. The captures
//! share the host's clock (`--clock same`): diff's loss equals the difference of the two
//! captures' datagrams, its delay floor is within 1 ms of netem's lowest delay (15 ms)
//! and its median within 1 ms of 20 ms. Without netem in the kernel the impaired test
//! says it skipped; the same link unimpaired is diffed either way. Needs root (skipped,
//! and said, otherwise).
#![cfg(target_os = "linux")]

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> bool {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.ok().as_deref() != Some("0") {
        common::skipped(
            module_path!(),
            "diff over a real link needs root (network namespaces)",
        );
        return false;
    }
    true
}

fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .status()
        .is_ok_and(|s| s.success())
}

/// Three namespaces joined by two veth pairs (sender — router — receiver), removed
/// when dropped.
struct Link {
    ns: [String; 3],
    n: String,
}

impl Drop for Link {
    fn drop(&mut self) {
        for s in &self.ns {
            sh(&format!("ip netns del {s} 2>/dev/null; true"));
        }
    }
}

impl Link {
    /// The link, its router's far side impaired by `qdisc` (a `tc` qdisc, e.g. netem's);
    /// None (said why) when it cannot be made here.
    fn new(tag: &str, qdisc: Option<&str>) -> Option<Link> {
        let n = format!("{tag}{}", std::process::id() % 10000);
        let ns = [format!("gpS{n}"), format!("gpM{n}"), format!("gpR{n}")];
        let [s, m, r] = &ns;
        let link = Link {
            ns: ns.clone(),
            n: n.clone(),
        };
        let setup = format!(
            "ip netns add {s} && ip netns add {m} && ip netns add {r} && \
             ip link add vS{n} type veth peer name vMs{n} && ip link add vMr{n} type veth peer name vR{n} && \
             ip link set vS{n} netns {s} && ip link set vMs{n} netns {m} && \
             ip link set vMr{n} netns {m} && ip link set vR{n} netns {r} && \
             ip -n {s} addr add 10.97.1.1/24 dev vS{n} && ip -n {m} addr add 10.97.1.254/24 dev vMs{n} && \
             ip -n {m} addr add 10.97.2.254/24 dev vMr{n} && ip -n {r} addr add 10.97.2.2/24 dev vR{n} && \
             ip -n {s} link set vS{n} up && ip -n {m} link set vMs{n} up && \
             ip -n {m} link set vMr{n} up && ip -n {r} link set vR{n} up && \
             ip -n {s} route add default via 10.97.1.254 && ip -n {r} route add default via 10.97.2.254 && \
             ip netns exec {m} sysctl -q -w net.ipv4.ip_forward=1"
        );
        if !sh(&setup) {
            common::skipped(module_path!(), "cannot create network namespaces here");
            return None;
        }
        if let Some(q) = qdisc
            && !sh(&format!(
                "ip netns exec {m} tc qdisc add dev vMr{n} root {q} 2>/dev/null"
            ))
        {
            common::skipped(
                module_path!(),
                &format!("tc cannot add `{q}` here (a kernel without it, e.g. no CONFIG_NET_SCH_NETEM)"),
            );
            return None;
        }
        Some(link)
    }

    /// `gpcap live` on `iface` in namespace `ns`, writing `out`, until SIGINT.
    fn capture(&self, ns: &str, iface: &str, out: &Path) -> std::process::Child {
        Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                env!("CARGO_BIN_EXE_gpcap"),
                "live",
                iface,
                "--no-tui",
                "--json",
            ])
            .args([
                "--interval",
                "0.2",
                "--duration",
                "60",
                "--port",
                "40000",
                "--protocol-id",
                "0x55667788",
            ])
            .arg("--write")
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// Waits for a live capture's first report (it runs), then hands back its stdout lines.
fn running(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(30)).is_ok(),
        "live printed no report"
    );
    rx
}

/// Game datagrams `analyze` counts in a capture.
fn datagrams(path: &Path) -> u64 {
    let out = common::gpcap_ok(&[
        "analyze",
        "--json",
        "--protocol-id",
        "0x55667788",
        "--port",
        "40000",
        path.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["validation"]["examined"].as_u64().unwrap()
}

/// A session sent over the link and captured at both ends: the two captures, the
/// datagrams `analyze` counts in each, and `diff --clock same --json` of them.
fn session(link: &Link, dir: &Path) -> (u64, u64, Value) {
    let [s, _, r] = &link.ns;
    let n = &link.n;
    let (a, b) = (dir.join("a.pcapng"), dir.join("b.pcapng"));
    let mut ca = link.capture(s, &format!("vS{n}"), &a);
    let mut cb = link.capture(r, &format!("vR{n}"), &b);
    let (la, lb) = (running(&mut ca), running(&mut cb));
    let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl");
    // 1,200 packets 2.5 ms apart, a tenth large enough to fragment: 3 s.
    let sent = Command::new("ip")
        .args([
            "netns",
            "exec",
            s,
            env!("CARGO_BIN_EXE_gpcap"),
            "send",
            "-d",
            def.to_str().unwrap(),
        ])
        .args([
            "--to",
            "10.97.2.2:40000",
            "--from",
            "10.97.1.1:50000",
            "--packets",
            "1200",
            "--rate",
            "400",
        ])
        .args(["--big", "0.1"])
        .output()
        .unwrap();
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    // Whatever netem still holds arrives well within half a second.
    std::thread::sleep(Duration::from_millis(500));
    for (child, lines) in [(&mut ca, la), (&mut cb, lb)] {
        sh(&format!("kill -INT {}", child.id()));
        let deadline = Instant::now() + Duration::from_secs(20);
        while lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
        {}
        let _ = child.wait();
    }
    let (code, out, err) = common::gpcap_run(&[
        "diff",
        "--json",
        "--clock",
        "same",
        "-d",
        "dissectors/article.kdl",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    (datagrams(&a), datagrams(&b), serde_json::from_str(&out).unwrap())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-diff-live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The one direction diff found, and its loss against the captures' difference.
fn direction(a: u64, b: u64, r: &Value) -> Value {
    let d = r["directions"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{r}");
    let d = d[0].clone();
    assert_eq!(d["upstream"], "A", "{}", d["upstream_by"]);
    assert_eq!(d["sent"].as_u64(), Some(a), "{d}");
    assert_eq!(d["arrived"].as_u64(), Some(b), "{d}");
    assert_eq!(d["lost"].as_u64(), Some(a - b), "{d}");
    assert_eq!(d["duplicated"].as_u64(), Some(0));
    assert_eq!(d["not_compared"].as_u64(), Some(0));
    d
}

#[test]
fn diff_over_a_link_impaired_by_netem() {
    if !root() {
        return;
    }
    let Some(link) = Link::new("n", Some("netem delay 20ms 5ms loss 2%")) else {
        return;
    };
    let dir = scratch("netem");
    let (a, b, r) = session(&link, &dir);
    drop(link);
    let d = direction(a, b, &r);
    assert!(a > b, "netem lost nothing of {a}");
    // 2% of the datagrams, within the 95% interval.
    let (lo, hi) = (d["loss_low"].as_f64().unwrap(), d["loss_high"].as_f64().unwrap());
    assert!(lo <= 0.02 && 0.02 <= hi, "{d}");
    assert!(d["reordered"].as_u64() > Some(0), "{d}");
    let delay = &d["delay"];
    let (floor, p50) = (
        delay["floor_ms"].as_f64().unwrap(),
        delay["p50_ms"].as_f64().unwrap(),
    );
    assert!((floor - 15.0).abs() < 1.0, "floor {floor} ms: {delay}");
    assert!((p50 - 20.0).abs() < 1.0, "median {p50} ms: {delay}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same link unimpaired: nothing lost, nothing reordered, a floor under a
/// millisecond.
#[test]
fn diff_over_an_unimpaired_link() {
    if !root() {
        return;
    }
    let Some(link) = Link::new("p", None) else { return };
    let dir = scratch("plain");
    let (a, b, r) = session(&link, &dir);
    drop(link);
    let d = direction(a, b, &r);
    assert!(a >= 1200, "{a}");
    assert_eq!(d["reordered"].as_u64(), Some(0));
    assert!(d["delay"]["floor_ms"].as_f64().unwrap() < 1.0, "{}", d["delay"]);
    let _ = std::fs::remove_dir_all(&dir);
}
