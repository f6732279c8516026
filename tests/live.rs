//! Live capture (cargo feature `live`, run as root by .ci/run): a known session sent over
//! a real UDP socket on loopback is captured, analyzed, reassembled and dissected to
//! exactly what was sent; and on a veth pair with MTU 1280 between two network
//! namespaces, datagrams that leave IP-fragmented are reported as MTU violations with
//! their sizes. Skipped with a message when not root.
#![cfg(feature = "live")]

mod common;
use gpcap::analysis::Config;
use gpcap::decode::{Decoded, decode};
use gpcap::dissect::{self, Dissector};
use gpcap::engine::session::Session;
use gpcap::generate::packet::PacketWriter;
use gpcap::generate::rng::Rng;
use gpcap::live::{LiveCapture, LiveOptions};
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
        bpf: Some(format!("udp and dst port {port}")),
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
    let mut whole: Vec<(Vec<u8>, Vec<gpcap::generate::packet::Leaf>)> = Vec::new();
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
            "--filter",
            "udp and dst port 40125",
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
    let n = std::process::id() % 10000;
    let (a, b) = (format!("gpR{n}a"), format!("gpR{n}b"));
    let cleanup = format!("ip link del {a} 2>/dev/null; true");
    if !sh(&format!(
        "ip link add {a} type veth peer name {b} && ip link set {a} mtu 1000 up && \
         ip link set {b} mtu 1000 up"
    )) {
        sh(&cleanup);
        common::skipped(module_path!(), "cannot create a veth pair here");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
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
        .args(["-d", def, "--filter", "udp"])
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
        .args(["replay", capture, "-d", def, "--iface", &a, "--speed", "0"])
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
    let _ = std::fs::remove_dir_all(&dir);
    assert!(first.is_ok(), "live printed no report");
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let live: serde_json::Value = serde_json::from_str(&last).expect("live prints JSON");
    assert_eq!(live["live"]["captured"], sent["frames"], "{}", live["live"]);
    assert_eq!(sent["errors"].as_u64(), Some(0));
    // Everything but the clock: when the capture ran, and rates over its duration.
    let timeless = |mut r: serde_json::Value| {
        let o = r.as_object_mut().unwrap();
        o.remove("capture");
        o.remove("timeline");
        for f in o["flows"].as_array_mut().unwrap() {
            for k in ["bits_per_s", "duration_s", "first_ns", "last_ns", "packets_per_s"] {
                f.as_object_mut().unwrap().remove(k);
            }
        }
        r
    };
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
