//! Live capture on the default build (AF_PACKET and its kernel filter; run as root by
//! .ci/run): a known session sent over a real UDP socket on loopback is captured,
//! analyzed, reassembled and dissected to exactly what was sent; on a veth pair with MTU
//! 1280 between two network namespaces, datagrams that leave IP-fragmented cross the
//! kernel filter and are reported as MTU violations with their sizes; a router namespace
//! answers with ICMP too-big, which crosses it too; remote capture through a real sshd.
//! Tests that need root are skipped with a message when not root. Streams (`-`, FIFOs,
//! a stream that breaks off, malformed ones) need no root.
#![cfg(target_os = "linux")]

mod common;
use gpcap::analysis::Config;
use gpcap::decode::{Decoded, decode};
use gpcap::dissect::{self, Dissector};
use gpcap::generate::PacketWriter;
use gpcap::generate::Rng;
use gpcap::live::{LiveCapture, LiveOptions};
use gpcap::run::Session;
use gpcap::sinks::index::{Index, IndexSink, status};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn root() -> bool {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.ok().as_deref() != Some("0") {
        common::skipped(module_path!(), "live capture tests need root");
        return false;
    }
    true
}

fn definition() -> Arc<gpcap::dissect::Program> {
    Arc::new(dissect::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl")).unwrap())
}

#[test]
fn loopback_session_is_captured_exactly() {
    if !root() {
        return;
    }
    let port = 40123u16;
    let program = definition();
    let mut cap = LiveCapture::start(&LiveOptions {
        iface: "lo".into(),
        ports: vec![port],
        ..LiveOptions::default()
    })
    .expect("capture on lo");
    let cfg = Config {
        ports: vec![port],
        ..Config::from_program(program.clone())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let mut sink = IndexSink::new(tx);
    sink.keep_frames = true;
    let mut session = Session::new(cfg, cap.linktype, Some(sink), None).unwrap();

    // The known session: 200 packets, some fragmented, each remembered with its leaves.
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let sink = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let mut w = PacketWriter::new(&program);
    let mut rng = Rng::new(42);
    let fmt = program.params.format;
    let mut sent: Vec<Vec<u8>> = Vec::new();
    let mut whole: Vec<(Vec<u8>, Vec<gpcap::generate::Leaf>)> = Vec::new();
    let mut fragmented = 0u64;
    for seq in 0..200u64 {
        let ty = w.types()[rng.below(5) as usize];
        w.scale = if rng.chance(0.15) { 300 } else { 6 };
        let p = w.packet(&mut rng, ty, seq).unwrap();
        if p.len() > fmt.mtu_budget as usize {
            fragmented += 1;
            let chunks: Vec<Vec<u8>> = p.chunks(fmt.fragment_size as usize).map(<[u8]>::to_vec).collect();
            for (i, c) in chunks.iter().enumerate() {
                sent.push(
                    w.fragment(&mut rng, seq, i as u32, chunks.len() as u32, c)
                        .unwrap(),
                );
            }
        } else {
            whole.push((p.clone(), w.leaves.clone()));
            sent.push(p);
        }
    }
    for d in &sent {
        sock.send_to(d, ("127.0.0.1", port)).unwrap();
        std::thread::sleep(Duration::from_micros(300));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while session.frames() < sent.len() as u64 && Instant::now() < deadline {
        if let Some(c) = cap.next(Duration::from_millis(50)) {
            session.feed([(c.ts_ns, c.origlen, c.data.as_slice())]).unwrap();
        }
    }
    let stats = cap.stop();
    drop(sink);
    assert_eq!(stats.kernel_dropped + stats.queue_dropped, 0, "{stats:?}");
    let report = session.finish().unwrap();
    assert_eq!(report.flows.len(), 1);
    let f = &report.flows[0];
    assert_eq!(
        (f.datagrams, f.crc_ok, f.malformed),
        (sent.len() as u64, sent.len() as u64, 0)
    );
    assert_eq!((f.seq.received, f.seq.lost, f.seq.duplicates), (200, 0, 0));
    assert_eq!(report.reassembly.completed, fragmented);
    assert_eq!(report.reassembly.dissected_ok, fragmented);
    assert!(fragmented > 0);

    // What was captured is what was sent, and dissects to the values written.
    let mut ix = Index::new(Path::new("lo"));
    while let Ok(u) = rx.try_recv() {
        ix.apply(u);
    }
    let store = ix.store.as_ref().unwrap();
    let captured: Vec<Vec<u8>> = ix
        .rows
        .iter()
        .filter(|r| !r.has(status::REASSEMBLED))
        .filter_map(|r| match decode(r.linktype as i32, store.get(r.frame)?) {
            Decoded::Udp { payload, .. } => Some(payload.to_vec()),
            _ => None,
        })
        .collect();
    assert_eq!(captured, sent);
    let mut d = Dissector::new(program.clone());
    for (bytes, leaves) in &whole {
        let out = d.dissect(bytes);
        let got: Vec<(u64, u64, u64)> = out
            .fields
            .iter()
            .filter(|f| !f.is_group())
            .map(|f| (f.bit_offset, f.bit_len, f.raw))
            .collect();
        assert_eq!(&got, leaves);
    }
}

fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn veth_with_mtu_1280_reports_ip_fragmentation() {
    if !root() {
        return;
    }
    if !sh("command -v ip > /dev/null") {
        common::skipped(module_path!(), "iproute2 is not installed");
        return;
    }
    let (a, b) = (
        format!("gpA{}", std::process::id() % 10000),
        format!("gpB{}", std::process::id() % 10000),
    );
    let setup = format!(
        "ip netns add {a} && ip netns add {b} && ip link add vA{a} type veth peer name vB{b} && \
         ip link set vA{a} netns {a} && ip link set vB{b} netns {b} && \
         ip -n {a} addr add 10.99.0.1/24 dev vA{a} && ip -n {b} addr add 10.99.0.2/24 dev vB{b} && \
         ip -n {a} link set vA{a} mtu 1280 up && ip -n {b} link set vB{b} mtu 1280 up && \
         ip -n {a} link set lo up && ip -n {b} link set lo up"
    );
    let cleanup = format!("ip netns del {a} 2>/dev/null; ip netns del {b} 2>/dev/null; true");
    if !sh(&setup) {
        sh(&cleanup);
        common::skipped(module_path!(), "cannot create network namespaces here");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl");
    let live = Command::new("ip")
        .args([
            "netns",
            "exec",
            &b,
            bin,
            "live",
            &format!("vB{b}"),
            "--no-tui",
            "--json",
            "--duration",
            "4",
        ])
        .args([
            "--protocol-id",
            "0x55667788",
            "--port",
            "40000",
            "--link-mtu",
            "1280",
            "--interval",
            "100",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let send = Command::new("ip")
        .args([
            "netns",
            "exec",
            &a,
            bin,
            "send",
            "-d",
            def.to_str().unwrap(),
            "--to",
            "10.99.0.2:40000",
        ])
        .args([
            "--from",
            "10.99.0.1:50000",
            "--no-fragment",
            "--big",
            "0.5",
            "--packets",
            "30",
            "--rate",
            "50",
        ])
        .output()
        .unwrap();
    let out = live.wait_with_output().unwrap();
    sh(&cleanup);
    let sent: serde_json::Value = serde_json::from_slice(&send.stdout).expect("send prints JSON");
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .to_string();
    let r: serde_json::Value = serde_json::from_str(&last).expect("live prints JSON");
    let over: Vec<u64> = sent["over_budget"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let mut expected: Vec<u64> = over.iter().filter(|&&s| s + 28 > 1280).map(|s| s + 28).collect();
    expected.sort();
    assert!(
        !expected.is_empty(),
        "the sender sent nothing over the MTU: {sent}"
    );
    let m = &r["report"]["mtu"];
    let mut got: Vec<u64> = m["ip_fragmented_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["ip_len"].as_u64().unwrap())
        .collect();
    got.sort();
    assert_eq!(got, expected, "{m}");
    assert_eq!(m["ip_fragmented"].as_u64(), Some(expected.len() as u64));
    assert_eq!(m["over_link_mtu"].as_u64(), Some(expected.len() as u64));
    assert_eq!(r["report"]["validation"]["crc_ok"].as_u64(), Some(30));
}

/// Ctrl-C (SIGINT) ends `live --no-tui` with its final report, as `--duration` does:
/// the first signal only asks the capture to stop.
#[test]
fn sigint_ends_live_with_the_final_report() {
    if !root() {
        return;
    }
    let child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args([
            "live",
            "lo",
            "--no-tui",
            "--json",
            "--duration",
            "60",
            "--interval",
            "1000",
            "--protocol-id",
            "0x55667788",
            "--port",
            "40125",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gpcap live");
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    assert!(sh(&format!("kill -INT {}", child.id())));
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "still running after SIGINT"
    );
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a report line")).unwrap();
    assert!(last["live"]["captured"].is_u64(), "{last}");
}

/// A new user's trial of `live lo --no-tui` without `-d`: silent for seconds before the
/// first report, `captured 100` above `frames 112` in one report, and the last report
/// printed twice at the end. Now it says at once what it does, the first report comes a
/// second after the protocol is known, no report has more frames than captured, and no
/// periodic report comes once the capture is stopping (the final one only).
#[test]
fn live_no_tui_reports_early_consistently_and_ends_once() {
    if !root() {
        return;
    }
    let port = "40131";
    let child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args([
            "live",
            "lo",
            "--no-tui",
            "--json",
            "--duration",
            "7.5",
            "--interval",
            "2.5",
        ])
        .args(["--port", port])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gpcap live");
    std::thread::sleep(Duration::from_millis(300));
    let sent = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["send", "-d", "dissectors/article.kdl", "--to"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--packets", "600", "--rate", "100"])
        .output()
        .unwrap();
    assert!(sent.status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("gpcap: capturing on lo — the protocol is identified from the first 3 s"),
        "{stderr}"
    );
    let reports: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first = reports.first().expect("a report");
    // Identification takes up to 3 s, the first report a second more.
    assert!(
        first["elapsed_s"].as_f64().unwrap() < 4.8,
        "first report at {first}"
    );
    for r in &reports {
        let (captured, frames) = (
            r["live"]["captured"].as_u64(),
            r["report"]["capture"]["frames"].as_u64(),
        );
        assert!(captured >= frames, "captured {captured:?} < frames {frames:?}");
    }
    let finals = reports.iter().filter(|r| r["final"] == true).count();
    assert_eq!(finals, 1);
    assert_eq!(reports.last().unwrap()["final"], true);
    for r in &reports[..reports.len() - 1] {
        assert!(
            r["elapsed_s"].as_f64().unwrap() < 7.5,
            "a periodic report as the capture stopped: {}",
            r["elapsed_s"]
        );
    }
}

/// ENet datagrams that are slow to analyze: 56 one-byte fragments each, of 1 MiB
/// messages (a few hundred microseconds a datagram), with a valid CRC32.
fn slow_enet_datagram(first: u32) -> Vec<u8> {
    let mut body = Vec::new();
    for i in 0..56u32 {
        // A send-unreliable-fragment command (12) on channel 1: start sequence, data
        // length, fragment count and number, total length, offset, the byte.
        body.extend_from_slice(&[12, 1, 0, 1]);
        body.extend_from_slice(&(((first + i) & 0xffff) as u16).to_be_bytes());
        body.extend_from_slice(&1u16.to_be_bytes());
        for v in [1u32, 0, 1 << 20, 0] {
            body.extend_from_slice(&v.to_be_bytes());
        }
        body.push(b'Z');
    }
    let mut d = 0x0fffu16.to_be_bytes().to_vec();
    d.extend_from_slice(&[0; 4]);
    d.extend_from_slice(&body);
    let crc = crc32fast::hash(&d);
    d[2..6].copy_from_slice(&crc.to_be_bytes());
    d
}

/// The attacker's backlog: datagrams sent faster than the definition analyzes them
/// filled the queue, and `live --duration` then ran until the queue was drained (166 s
/// for 10), with two reports in all and Ctrl-C unheard. Now the run ends about on time,
/// the frames left in the queue counted as `not_analyzed`, and a periodic report came on
/// time while the analysis was behind; `--write` still has every frame captured.
#[test]
fn a_backlog_does_not_hold_duration_back() {
    if !root() {
        return;
    }
    let written = std::env::temp_dir().join(format!("gpcap-backlog-{}.pcapng", std::process::id()));
    let w = written.to_str().unwrap();
    let (took, reports) = live_behind(40137, &["--duration", "3", "--write", w], None);
    // The frames given up by the analysis are still in --write: every frame captured.
    let mut r = gpcap::capture::CaptureReader::open(&written).unwrap();
    let mut in_file = 0u64;
    while r.next_frame().unwrap().is_some() {
        in_file += 1;
    }
    let _ = std::fs::remove_file(&written);
    let last = reports.last().unwrap();
    assert_eq!(
        Some(in_file),
        last["live"]["captured"].as_u64(),
        "{}",
        last["live"]
    );
    // 3 s of capture, a second of grace for the queue, the report: well under 10 s
    // (without the fix the queue was drained to the end, tens of seconds).
    assert!(
        took < Duration::from_secs(10),
        "the run took {took:?} for --duration 3"
    );
    // A report a second while behind, not one when the backlog happened to clear.
    let periodic = reports.iter().filter(|r| r["final"] == false).count();
    assert!(periodic >= 2, "{periodic} periodic reports in {took:?}");
}

/// The same backlog stopped by Ctrl-C: heard at once, not once the queue is drained.
#[test]
fn a_backlog_does_not_hold_ctrl_c_back() {
    if !root() {
        return;
    }
    let (took, _) = live_behind(40139, &["--duration", "120"], Some(Duration::from_millis(2500)));
    assert!(
        took < Duration::from_secs(8),
        "the run took {took:?}, SIGINT at 2.5 s"
    );
}

/// `live --no-tui --json --interval 1` on loopback while 2 s of slow datagrams are sent
/// (SIGINT at `sigint` if given): how long it ran and its reports, the final one checked:
/// frames analyzed and not analyzed add up to those captured, and some were not.
fn live_behind(port: u16, stop: &[&str], sigint: Option<Duration>) -> (Duration, Vec<serde_json::Value>) {
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["live", "lo", "--no-tui", "--json", "--interval", "1"])
        .args(stop)
        .args(["-d", "dissectors/enet.kdl", "--port", &port.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gpcap live");
    std::thread::sleep(Duration::from_millis(500));
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let datagrams: Vec<Vec<u8>> = (0..64).map(|i| slow_enet_datagram(i * 56)).collect();
    let mut sent = 0u64;
    while started.elapsed() < Duration::from_millis(2000) {
        for d in &datagrams {
            if sock.send_to(d, ("127.0.0.1", port)).is_ok() {
                sent += 1;
            }
        }
    }
    if let Some(at) = sigint {
        std::thread::sleep(at.saturating_sub(started.elapsed()));
        assert!(sh(&format!("kill -INT {}", child.id())));
    }
    let (code, stdout, stderr) = wait_bounded(child, Duration::from_secs(60));
    let took = started.elapsed();
    assert_eq!(code, 0, "{stderr}");
    let reports: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let last = reports.last().expect("a final report");
    assert_eq!(last["final"], true, "{last}");
    let (captured, frames, left) = (
        last["live"]["captured"].as_u64().unwrap(),
        last["report"]["capture"]["frames"].as_u64().unwrap(),
        last["live"]["not_analyzed"].as_u64().unwrap(),
    );
    assert_eq!(captured, frames + left, "{}", last["live"]);
    // Only a backlog makes the test say anything: the analysis must have been behind.
    assert!(left > 0, "no backlog: {sent} sent, {}", last["live"]);
    (took, reports)
}

/// `replay --iface` on one end of a veth pair feeds `live` on the other the capture's own
/// datagrams, addresses and order: the live report equals `analyze`'s of the capture in
/// every number but the clock's — game fragments, IP fragments (both links at MTU 1000),
/// duplicates and corrupted datagrams included. (No loss: a capture that lost an IP
/// fragment holds a datagram replay cannot send, by design.)
#[test]
fn replay_on_a_veth_pair_gives_live_the_report_analyze_gives() {
    if !root() {
        return;
    }
    let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl");
    let def = def.to_str().unwrap();
    let (dir, capture) = common::gen_checked(
        "dissectors/article.kdl",
        "veth-replay",
        &[
            "--clients",
            "4",
            "--duration",
            "2",
            "--dup",
            "0.03",
            "--corrupt",
            "0.02",
            "--link-mtu",
            "1000",
            "--big",
            "0.3",
        ],
    );
    let capture = capture.as_str();
    let analyzed = common::gpcap_ok(&["analyze", "--json", "-d", def, capture]);
    let live = live_of_a_replay(capture, 1000, &["-d", def], &["-d", def]);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(live) = live else { return };
    // Everything but the clock: when the capture ran, and rates over its duration.
    let expected = timeless(serde_json::from_str(&analyzed).unwrap());
    let got = timeless(live["report"].clone());
    assert!(
        expected["mtu"]["ip_fragmented"].as_u64() > Some(0),
        "{}",
        expected["mtu"]
    );
    assert!(expected["reassembly"]["completed"].as_u64() > Some(0));
    assert!(expected["validation"]["crc_mismatch"].as_u64() > Some(0));
    let mut differences = Vec::new();
    json_differences("", &got, &expected, &mut differences);
    assert!(
        differences.is_empty(),
        "live ≠ analyze:\n{}",
        differences.join("\n")
    );
}

/// `gpcap replay CAPTURE --iface A` into one end of a veth pair (`mtu`) while `gpcap
/// live B --no-tui --json` captures on the other with `args` (a definition, keys): the
/// final line live printed, once it has every frame replay sent (replay reads the capture
/// with `replay_args`, as analyze would). `None` (said) when no veth pair can be made here.
fn live_of_a_replay(
    capture: &str,
    mtu: u32,
    args: &[&str],
    replay_args: &[&str],
) -> Option<serde_json::Value> {
    // Tests run on threads of one process: the pid alone gave two of them one pair, and
    // the first to finish deleted the other's interfaces.
    static PAIRS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = PAIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let n = std::process::id() % 10000;
    let (a, b) = (format!("gpR{n}x{k}a"), format!("gpR{n}x{k}b"));
    let cleanup = format!("ip link del {a} 2>/dev/null; true");
    if !sh(&format!(
        "ip link add {a} type veth peer name {b} && ip link set {a} mtu {mtu} up && \
         ip link set {b} mtu {mtu} up"
    )) {
        sh(&cleanup);
        common::skipped(module_path!(), "cannot create a veth pair here");
        return None;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    // Reports every 0.2 s: the first says the capture runs; the one that has every
    // frame sent says it is time to stop (SIGINT ends live with its final report).
    let mut live = Command::new(bin)
        .args([
            "live",
            &b,
            "--no-tui",
            "--json",
            "--duration",
            "60",
            "--interval",
            "0.2",
        ])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let stdout = live.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = lines.recv_timeout(Duration::from_secs(30));
    let replay = Command::new(bin)
        .args(["replay", capture, "--iface", &a, "--speed", "0"])
        .args(replay_args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap_or_default();
    let captured = |line: &str| {
        serde_json::from_str::<serde_json::Value>(line)
            .map_or(0, |v| v["live"]["captured"].as_u64().unwrap_or(0))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if Some(captured(&line)) >= sent["frames"].as_u64() {
            break;
        }
    }
    sh(&format!("kill -INT {}", live.id()));
    let last = lines.iter().last().unwrap_or_default();
    let _ = live.wait();
    sh(&cleanup);
    assert!(first.is_ok(), "live printed no report");
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let live: serde_json::Value = serde_json::from_str(&last).expect("live prints JSON");
    assert_eq!(live["final"], true);
    assert_eq!(live["live"]["captured"], sent["frames"], "{}", live["live"]);
    assert_eq!(sent["errors"].as_u64(), Some(0));
    Some(live)
}

/// The netcode.io + reliable.io conformance capture (tests/fixtures/netcode-reliable)
/// with its server's private key and the stack of three definitions, as `analyze` takes
/// them.
fn netcode_stack() -> Vec<String> {
    let dir = "tests/fixtures/netcode-reliable";
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(dir)
            .join("truth_keys.jsonl"),
    )
    .unwrap();
    let meta: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    [
        "-d",
        "dissectors/netcode.kdl",
        "-d",
        "dissectors/reliable.kdl",
        "-d",
        "dissectors/yojimbo-messages.kdl",
        "--protocol-id",
        "0x3141592653589793",
        "--key",
        meta["private_key"].as_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

const NETCODE_RELIABLE: &str = "tests/fixtures/netcode-reliable/capture.pcap";

/// `analyze --json` of the conformance capture with its keys and stack, and checks that
/// it decrypted and has its inner layers (so that an agreement below means something).
fn netcode_analyzed(stack: &[&str]) -> serde_json::Value {
    let mut a = vec!["analyze", "--json", NETCODE_RELIABLE];
    a.extend_from_slice(stack);
    let r: serde_json::Value = serde_json::from_str(&common::gpcap_ok(&a)).unwrap();
    assert_eq!(r["decryption"]["decrypted"], 3538 - 3);
    let names: Vec<&str> = (r["layers"].as_array().unwrap().iter())
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["reliable", "game"]);
    r
}

fn assert_same_report(live: &serde_json::Value, analyzed: serde_json::Value) {
    let mut differences = Vec::new();
    json_differences(
        "",
        &timeless(live["report"].clone()),
        &timeless(analyzed),
        &mut differences,
    );
    assert!(
        differences.is_empty(),
        "live ≠ analyze:\n{}",
        differences.join("\n")
    );
}

/// With keys and stacked definitions, `live` decrypts and reads the inner layers as
/// `analyze` does: the same `decryption` and `layers[]`, number for number (a stream:
/// no root needed).
#[test]
fn live_with_keys_reports_every_layer_as_analyze_does() {
    let stack = netcode_stack();
    let stack: Vec<&str> = stack.iter().map(|s| s.as_str()).collect();
    let expected = netcode_analyzed(&stack);
    let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(NETCODE_RELIABLE)).unwrap();
    let mut args = vec!["live", "-", "--no-tui", "--json"];
    args.extend_from_slice(&stack);
    let (code, out, err) = gpcap_stdin(&args, bytes.clone(), Duration::from_secs(120));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("ignored"), "{err}");
    let live = last_report(&out);
    assert_eq!(live["final"], true);
    assert_same_report(&live, expected);
    // The text report has the decryption table and each layer's report.
    let mut args = vec!["live", "-", "--no-tui"];
    args.extend_from_slice(&stack);
    let (code, out, err) = gpcap_stdin(&args, bytes, Duration::from_secs(120));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3535 sealed packets decrypted"), "{out}");
    assert!(out.contains("══ Layer reliable: inside netcode ══"), "{out}");
    assert!(out.contains("══ Layer game: inside reliable ══"), "{out}");
}

/// The same capture replayed into a veth pair (root): what `live` captured from the wire,
/// decrypted with the private key and read through the stack, is `analyze`'s report.
#[test]
fn replay_of_encrypted_traffic_gives_live_every_layer_analyze_gives() {
    if !root() {
        return;
    }
    let stack = netcode_stack();
    let stack: Vec<&str> = stack.iter().map(|s| s.as_str()).collect();
    let expected = netcode_analyzed(&stack);
    let outer = &stack[..2];
    let id = ["--protocol-id", "0x3141592653589793"];
    let replay_args = [outer, &id].concat();
    let Some(mut live) = live_of_a_replay(NETCODE_RELIABLE, 1500, &stack, &replay_args) else {
        return;
    };
    // Sent as fast as the socket takes them, the datagrams keep their order but not their
    // spacing: round-trip times and the seconds before loss bursts are the replay's clock.
    live["report"] = clockless(live["report"].take());
    assert_same_report(&live, clockless(expected));
}

/// A report without the figures timed on the clock between packets (round trips, the
/// second before each loss burst), at every depth.
fn clockless(mut v: serde_json::Value) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(o) => {
            for k in ["rtt_ms", "rtt_timeline", "bursts"] {
                o.remove(k);
            }
            for x in o.values_mut() {
                *x = clockless(x.take());
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                *x = clockless(x.take());
            }
        }
        _ => {}
    }
    v
}

/// Where two JSON values differ, one line a leaf: `path: live | analyze`.
fn json_differences(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (u, v) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                json_differences(&format!("{path}/{k}"), u, v, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                json_differences(&format!("{path}/{i}"), u, v, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} | {b}")),
        _ => {}
    }
}

/// Runs gpcap with `input` on its stdin; (exit code, stdout, stderr). Killed after
/// `limit`: a hang fails the test instead of holding it.
fn gpcap_stdin(args: &[&str], input: Vec<u8>, limit: Duration) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    wait_bounded(child, limit)
}

fn wait_bounded(mut child: std::process::Child, limit: Duration) -> (i32, String, String) {
    use std::io::Read;
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gpcap still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code().unwrap_or(-1), o.join().unwrap(), e.join().unwrap())
}

fn bundled(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("captures").join(name)).unwrap()
}

/// The last JSON line `live --json` printed.
fn last_report(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.lines().last().expect("a report line")).expect("live prints JSON")
}

/// `live -` reads a pcap stream to its end as live traffic: the final report is the one
/// `analyze` gives of the same capture, in every number but the clock's; `analyze -`
/// reads stdin once (the identification sample is not read again) and agrees with
/// `analyze FILE` but for the file's name.
#[test]
fn a_stream_on_stdin_is_analyzed_as_the_file_is() {
    let bytes = bundled("clean.pcap");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/clean.pcap");
    let def = "dissectors/article.kdl";
    let file = common::gpcap_ok(&["analyze", "--json", "-d", def, path.to_str().unwrap()]);
    let expected: serde_json::Value = serde_json::from_str(&file).unwrap();
    let (code, out, err) = gpcap_stdin(
        &["analyze", "--json", "-d", def, "-"],
        bytes.clone(),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    let mut piped: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(piped["capture"]["files"][0]["name"], "-");
    piped["capture"]["files"][0]["name"] = expected["capture"]["files"][0]["name"].clone();
    assert_eq!(piped, expected);

    let (code, out, err) = gpcap_stdin(
        &["live", "-", "--no-tui", "--json", "-d", def],
        bytes,
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    let live = last_report(&out);
    assert_eq!(live["final"], true);
    assert_eq!(
        live["live"]["captured"].as_u64(),
        expected["capture"]["frames"].as_u64()
    );
    let mut differences = Vec::new();
    json_differences(
        "",
        &timeless(live["report"].clone()),
        &timeless(expected),
        &mut differences,
    );
    assert!(
        differences.is_empty(),
        "live - ≠ analyze:\n{}",
        differences.join("\n")
    );
}

/// A FIFO is a capture name too, read once; `-` twice is refused (stdin is read once).
#[test]
fn a_fifo_is_read_once_and_stdin_only_once() {
    let dir = std::env::temp_dir().join(format!("gpcap-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("capture.fifo");
    assert!(sh(&format!("mkfifo {}", fifo.display())));
    let bytes = bundled("clean.pcap");
    let f = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(f, bytes));
    let child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["dissect", fifo.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, out, err) = wait_bounded(child, Duration::from_secs(60));
    writer.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().count() > 1000, "{}", out.lines().count());
    let (code, _, err) = gpcap_stdin(&["analyze", "-", "-"], Vec::new(), Duration::from_secs(20));
    assert_eq!(code, 2);
    assert!(err.contains("`-` (stdin) can be given once"), "{err}");
}

/// A stream that breaks off inside a record ends the capture with a located error; every
/// frame before the break is in the report (and in --write).
#[test]
fn a_stream_broken_mid_record_keeps_what_came_before() {
    let bytes = bundled("clean.pcap");
    let dir = std::env::temp_dir().join(format!("gpcap-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let written = dir.join("kept.pcapng");
    let (code, out, err) = gpcap_stdin(
        &[
            "live",
            "-",
            "--no-tui",
            "--json",
            "--write",
            written.to_str().unwrap(),
        ],
        bytes[..5000].to_vec(),
        Duration::from_secs(30),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "-: last record truncated (17 bytes of an incomplete record) at byte offset 4983 (after frame 54)"
        ),
        "{err}"
    );
    assert_eq!(last_report(&out)["live"]["captured"], 54);
    let again = common::gpcap_ok(&["analyze", "--json", written.to_str().unwrap()]);
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(again["capture"]["frames"], 54);
}

/// Streams that are not captures, or stop before their first frame, end with the
/// place and the reason, never a hang.
#[test]
fn malformed_streams_end_with_a_located_error() {
    let pcap = bundled("clean.pcap");
    // A pcapng section header, then a packet block naming an interface never described.
    let mut no_idb = Vec::new();
    no_idb.extend(0x0A0D0D0Au32.to_le_bytes());
    no_idb.extend(28u32.to_le_bytes());
    no_idb.extend(0x1A2B3C4Du32.to_le_bytes());
    no_idb.extend([1, 0, 0, 0]);
    no_idb.extend(u64::MAX.to_le_bytes());
    no_idb.extend(28u32.to_le_bytes());
    no_idb.extend(6u32.to_le_bytes());
    no_idb.extend(36u32.to_le_bytes());
    no_idb.extend([0; 16]);
    no_idb.extend(4u32.to_le_bytes());
    no_idb.extend([1, 2, 3, 4]);
    no_idb.extend(36u32.to_le_bytes());
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "garbage",
            b"this is not a capture at all, not even close".to_vec(),
            "-: not a pcap or pcapng file (unknown magic) at byte offset 0",
        ),
        (
            "header then truncation",
            pcap[..34].to_vec(),
            "-: last record truncated (10 bytes of an incomplete record) at byte offset 24 (after frame 0)",
        ),
        (
            "pcapng without an interface block",
            no_idb,
            "at byte offset 28 (after frame 0)",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("gpcap-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (what, bytes, expected) in cases {
        let (code, _, err) = gpcap_stdin(
            &["live", "-", "--no-tui", "--json"],
            bytes.clone(),
            Duration::from_secs(30),
        );
        assert!(err.contains(expected), "{what}, live: {err}");
        assert_eq!(code, 2, "{what}, live: {err}");
        // analyze says of the stream what it says of the same bytes in a file.
        let file = dir.join("capture");
        std::fs::write(&file, &bytes).unwrap();
        let (code, _, err) = gpcap_stdin(&["analyze", "-"], bytes.clone(), Duration::from_secs(30));
        let (file_code, _, file_err) = gpcap_stdin(
            &["analyze", file.to_str().unwrap()],
            Vec::new(),
            Duration::from_secs(30),
        );
        assert!(err.contains(expected), "{what}, analyze: {err}");
        assert_eq!(
            (code, err),
            (file_code, file_err.replace(file.to_str().unwrap(), "-")),
            "{what}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `live -` follows a stream that grows: reports come while it is still being written,
/// with what has arrived, and the end of the stream ends the capture.
#[test]
fn a_growing_stream_is_followed() {
    use std::io::{BufRead, Write};
    let bytes = bundled("clean.pcap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["live", "-", "--no-tui", "--json", "--interval", "0.2"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The header and the first 54 frames (4,983 bytes), then a pause.
    stdin.write_all(&bytes[..4983]).unwrap();
    stdin.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = 0;
    while seen < 54 && Instant::now() < deadline {
        if let Ok(l) = lines.recv_timeout(Duration::from_millis(500)) {
            seen = last_report(&l)["live"]["captured"].as_u64().unwrap_or(0);
        }
    }
    assert_eq!(
        seen, 54,
        "the frames written so far were not reported while the stream was open"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "live ended with the stream still open"
    );
    stdin.write_all(&bytes[4983..]).unwrap();
    drop(stdin);
    let mut last = String::new();
    while let Ok(l) = lines.recv_timeout(Duration::from_secs(20)) {
        last = l;
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    let r = last_report(&last);
    assert_eq!(
        (r["final"].as_bool(), r["live"]["captured"].as_u64()),
        (Some(true), Some(1558))
    );
}

/// Everything but the clock: when the capture ran, and rates over its duration.
/// A report without the clock: when the capture ran, and rates over its duration (an
/// inner layer's too).
fn timeless(mut r: serde_json::Value) -> serde_json::Value {
    let o = r.as_object_mut().unwrap();
    o.remove("capture");
    o.remove("timeline");
    for f in o["flows"].as_array_mut().unwrap() {
        for k in ["bits_per_s", "duration_s", "first_ns", "last_ns", "packets_per_s"] {
            f.as_object_mut().unwrap().remove(k);
        }
    }
    if let Some(layers) = o.get_mut("layers").and_then(|l| l.as_array_mut()) {
        for l in layers {
            *l = timeless(l.take());
        }
    }
    r
}

/// Through a router namespace whose far link has MTU 1280, don't-fragment datagrams too
/// big for it are answered with ICMP fragmentation-needed; the capture on the sender's
/// link (the kernel filter keeping the game's port) sees the answers and links them to
/// the game's flow. (python3 sends them: it can set don't-fragment.)
#[test]
fn icmp_too_big_from_a_router_crosses_the_kernel_filter() {
    if !root() {
        return;
    }
    let n = std::process::id() % 10000;
    let (a, r, b) = (format!("gpIa{n}"), format!("gpIr{n}"), format!("gpIb{n}"));
    let setup = format!(
        "ip netns add {a} && ip netns add {r} && ip netns add {b} && \
         ip link add vI{n}a type veth peer name vI{n}ra && ip link add vI{n}rb type veth peer name vI{n}b && \
         ip link set vI{n}a netns {a} && ip link set vI{n}ra netns {r} && \
         ip link set vI{n}rb netns {r} && ip link set vI{n}b netns {b} && \
         ip -n {a} addr add 10.98.1.1/24 dev vI{n}a && ip -n {r} addr add 10.98.1.254/24 dev vI{n}ra && \
         ip -n {r} addr add 10.98.2.254/24 dev vI{n}rb && ip -n {b} addr add 10.98.2.2/24 dev vI{n}b && \
         ip -n {a} link set vI{n}a up && ip -n {r} link set vI{n}ra up && \
         ip -n {r} link set vI{n}rb mtu 1280 up && ip -n {b} link set vI{n}b mtu 1280 up && \
         ip -n {a} route add default via 10.98.1.254 && ip -n {b} route add default via 10.98.2.254 && \
         ip netns exec {r} sysctl -q -w net.ipv4.ip_forward=1"
    );
    let cleanup = format!("for s in {a} {r} {b}; do ip netns del $s 2>/dev/null; done; true");
    if !sh(&setup) {
        sh(&cleanup);
        common::skipped(module_path!(), "cannot create network namespaces here");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let live = Command::new("ip")
        .args([
            "netns",
            "exec",
            &a,
            bin,
            "live",
            &format!("vI{n}a"),
            "--no-tui",
            "--json",
        ])
        .args(["--duration", "4", "--interval", "100", "--port", "40000"])
        .args(["--protocol-id", "0x55667788"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    // Datagrams of 1,400 bytes with don't-fragment set: the router cannot forward them.
    let script = [
        "import socket, time",
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
        "s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO",
        "s.bind(('10.98.1.1', 50000))",
        "for i in range(5):",
        "    try: s.sendto(bytes(1400), ('10.98.2.2', 40000))",
        "    except OSError: pass",
        "    time.sleep(0.1)",
    ]
    .join("\n");
    let send = Command::new("ip")
        .args(["netns", "exec", &a, "python3", "-c", &script])
        .output()
        .unwrap();
    let (code, out, err) = wait_bounded(live, Duration::from_secs(30));
    sh(&cleanup);
    assert_eq!(code, 0, "{err}");
    assert!(send.status.success(), "{}", String::from_utf8_lossy(&send.stderr));
    let r = last_report(&out);
    let m = &r["report"]["mtu"];
    let icmp = m["icmp"].as_array().expect("icmp list");
    assert!(m["icmp_total"].as_u64() >= Some(1), "{m}");
    for i in icmp {
        assert_eq!(
            (i["from"].as_str(), i["mtu"].as_u64()),
            (Some("10.98.1.254"), Some(1280)),
            "{i}"
        );
        assert_eq!(i["flow"]["dst"], "10.98.2.2:40000", "{i}");
        assert_eq!(i["quoted_ip_len"], 1428, "{i}");
    }
}

/// A throwaway sshd on 127.0.0.1 (its own host key, a user key for root, nothing else
/// of the system's configuration): stopped and removed when dropped.
struct Sshd {
    child: std::process::Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl Sshd {
    fn start() -> Option<Sshd> {
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).exists())?;
        let dir = std::env::temp_dir().join(format!("gpcap-sshd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok()?;
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
            l.local_addr().ok()?.port()
        };
        let d = dir.display();
        let keys = format!(
            "mkdir -p /run/sshd && ssh-keygen -q -N '' -t ed25519 -f {d}/host_key && \
             ssh-keygen -q -N '' -t ed25519 -f {d}/user_key && cp {d}/user_key.pub {d}/authorized_keys"
        );
        if !sh(&keys) {
            return None;
        }
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\nStrictModes no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nPidFile {d}/sshd.pid\n"
        );
        std::fs::write(dir.join("sshd_config"), config).ok()?;
        let child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stderr(std::fs::File::create(dir.join("sshd.log")).ok()?)
            .spawn()
            .ok()?;
        let s = Sshd { child, dir, port };
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(s)
    }

    fn ssh_command(&self) -> String {
        format!(
            "ssh -i {}/user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=10",
            self.dir.display()
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `live ssh://root@127.0.0.1:PORT/lo` against a real sshd: the remote tcpdump's
/// capture arrives as a stream and is analyzed as a local capture is; the remote drop
/// counters are read from tcpdump's stderr when the capture stops. A failing ssh (a
/// closed port, a remote interface that does not exist) ends at once with ssh's or
/// tcpdump's own message and status.
#[test]
fn remote_capture_over_a_real_ssh() {
    if !root() {
        return;
    }
    if !sh("command -v tcpdump > /dev/null && command -v ssh > /dev/null") {
        common::skipped(module_path!(), "tcpdump or ssh is not installed");
        return;
    }
    let Some(sshd) = Sshd::start() else {
        common::skipped(module_path!(), "cannot start a test sshd (openssh-server)");
        return;
    };
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl");
    let def = def.to_str().unwrap();
    let port = 40127;
    let url = format!("ssh://root@127.0.0.1:{}/lo", sshd.port);
    let live = Command::new(bin)
        .args([
            "live",
            &url,
            "--ssh-command",
            &sshd.ssh_command(),
            "--no-tui",
            "--json",
        ])
        .args([
            "--duration",
            "5",
            "--interval",
            "100",
            "-d",
            def,
            "--port",
            &port.to_string(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let send = Command::new(bin)
        .args([
            "send",
            "-d",
            def,
            "--to",
            &format!("127.0.0.1:{port}"),
            "--packets",
            "40",
            "--rate",
            "100",
        ])
        .output()
        .unwrap();
    let (code, out, err) = wait_bounded(live, Duration::from_secs(40));
    assert_eq!(code, 0, "{err}");
    let sent: serde_json::Value = serde_json::from_slice(&send.stdout).unwrap();
    let r = last_report(&out);
    assert_eq!(
        r["report"]["validation"]["crc_ok"], sent["datagrams"],
        "{}",
        r["live"]
    );
    assert_eq!(r["live"]["captured"], sent["datagrams"]);
    assert!(
        r["live"]["remote_received"].as_u64() >= sent["datagrams"].as_u64(),
        "{}",
        r["live"]
    );
    assert_eq!(r["live"]["remote_dropped"], 0);

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let failing = [
        (
            format!("ssh://root@127.0.0.1:{closed_port}/lo"),
            "Connection refused",
            "status 255",
        ),
        (
            format!("ssh://root@127.0.0.1:{}/nope0", sshd.port),
            "nope0",
            "status 1",
        ),
    ];
    for (url, message, status) in failing {
        let child = Command::new(bin)
            .args([
                "live",
                &url,
                "--ssh-command",
                &sshd.ssh_command(),
                "--no-tui",
                "--duration",
                "60",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (code, _, err) = wait_bounded(child, Duration::from_secs(30));
        assert_eq!(code, 2, "{url}: {err}");
        assert!(err.contains(message) && err.contains(status), "{url}: {err}");
    }
}

/// An ssh connection lost mid-capture (here a stand-in for ssh that sends part of a
/// capture, cut inside a record, and exits as ssh does when the link drops): the frames
/// before are kept (report and --write), and ssh's message and status are shown.
#[test]
fn a_lost_ssh_connection_keeps_what_was_captured() {
    let dir = std::env::temp_dir().join(format!("gpcap-lost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/clean.pcap");
    let fake = dir.join("ssh");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nhead -c 5000 {}\necho 'client_loop: send disconnect: Broken pipe' >&2\nexit 255\n",
            capture.display()
        ),
    )
    .unwrap();
    assert!(sh(&format!("chmod +x {}", fake.display())));
    let written = dir.join("kept.pcapng");
    let child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args([
            "live",
            "ssh://game@server/eth0",
            "--ssh-command",
            fake.to_str().unwrap(),
        ])
        .args(["--no-tui", "--json", "--write", written.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, out, err) = wait_bounded(child, Duration::from_secs(30));
    let kept = common::gpcap_ok(&["analyze", "--json", written.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("exited with status 255: client_loop: send disconnect: Broken pipe"),
        "{err}"
    );
    assert!(err.contains("last record truncated"), "{err}");
    assert_eq!(last_report(&out)["live"]["captured"], 54);
    let kept: serde_json::Value = serde_json::from_str(&kept).unwrap();
    assert_eq!(kept["capture"]["frames"], 54);
}

/// Without root or the capabilities, live says the two ways to get them, exit 2.
#[test]
fn no_permission_says_root_or_setcap() {
    if !root() {
        return;
    }
    if !sh("command -v setpriv > /dev/null") {
        common::skipped(module_path!(), "setpriv (util-linux) is not installed");
        return;
    }
    let child = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_gpcap"),
        ])
        .args(["live", "lo", "--no-tui", "--duration", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, _, err) = wait_bounded(child, Duration::from_secs(20));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no permission to capture on lo"), "{err}");
    assert!(
        err.contains("run as root") && err.contains("setcap cap_net_raw,cap_net_admin=eip"),
        "{err}"
    );
}

/// The libpcap build: `--filter EXPR` is a libpcap expression, compiled and attached by
/// libpcap, and the capture is analyzed as the default one is.
#[cfg(feature = "libpcap")]
#[test]
fn libpcap_filter_expression_captures_the_session() {
    if !root() {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let def = Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl");
    let def = def.to_str().unwrap();
    let live = Command::new(bin)
        .args([
            "live",
            "lo",
            "--no-tui",
            "--json",
            "--duration",
            "3",
            "--interval",
            "100",
        ])
        .args(["-d", def, "--port", "40129", "--filter", "udp and dst port 40129"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let send = Command::new(bin)
        .args([
            "send",
            "-d",
            def,
            "--to",
            "127.0.0.1:40129",
            "--packets",
            "30",
            "--rate",
            "100",
        ])
        .output()
        .unwrap();
    let (code, out, err) = wait_bounded(live, Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("needs the libpcap build"), "{err}");
    let sent: serde_json::Value = serde_json::from_slice(&send.stdout).unwrap();
    let r = last_report(&out);
    assert_eq!(
        r["report"]["validation"]["crc_ok"], sent["datagrams"],
        "{}",
        r["live"]
    );
}

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The screen once it shows `text` (or after 20 s, to fail with what it shows).
fn screen_with(session: &str, text: &str) -> String {
    let start = Instant::now();
    loop {
        let screen = tmux(&["capture-pane", "-p", "-t", session]);
        if screen.contains(text) || start.elapsed() > Duration::from_secs(20) {
            return screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `tcpdump -U -w - | gpcap tui -`: the real binary in tmux reading a stream from stdin
/// shows the packets written so far while the stream is open, more as it grows, and
/// says when it ended.
#[test]
fn tui_follows_a_stream_on_stdin() {
    if Command::new("tmux").arg("-V").output().is_err() {
        common::skipped(module_path!(), "tmux is not installed");
        return;
    }
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("gpcap-tui-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("stream");
    assert!(sh(&format!("mkfifo {}", fifo.display())));
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let root = env!("CARGO_MANIFEST_DIR");
    let session = format!("gpcap-stream-{}", std::process::id());
    let cmd = format!(
        "cd {root} && cat {} | {bin} tui - -d dissectors/article.kdl",
        fifo.display()
    );
    tmux(&["new-session", "-d", "-s", &session, "-x", "140", "-y", "40", &cmd]);
    let bytes = bundled("clean.pcap");
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    w.write_all(&bytes[..4983]).unwrap();
    w.flush().unwrap();
    let first = screen_with(&session, "Packets (54");
    w.write_all(&bytes[4983..]).unwrap();
    drop(w);
    // The frame count on the tab line, without the gauge: the capture is over.
    let last = screen_with(&session, "live - · 1558 frames");
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(first.contains("Packets (54"), "while open:\n{first}");
    assert!(last.contains("live - · 1558 frames"), "at the end:\n{last}");
    assert!(last.contains("Packets (1589)"), "at the end:\n{last}");

    // A stream that breaks off mid-record: what came before stays, and the screen says
    // where it broke.
    let cut = dir.join("cut.pcap");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&cut, &bytes[..5000]).unwrap();
    let session = format!("gpcap-cut-{}", std::process::id());
    let cmd = format!(
        "cd {root} && cat {} | {bin} tui - -d dissectors/article.kdl",
        cut.display()
    );
    tmux(&["new-session", "-d", "-s", &session, "-x", "200", "-y", "40", &cmd]);
    let broken = screen_with(&session, "last record truncated");
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-session", "-t", &session]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        broken.contains("capture from - stopped: -: last record truncated (17 bytes of an incomplete record) at byte offset 4983"),
        "{broken}"
    );
    assert!(broken.contains("live - · 54 frames"), "{broken}");
}
