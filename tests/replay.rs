//! `gpcap replay`: every game datagram `analyze` counts arrives at the receiver, byte for
//! byte and in capture order.

mod common;
use common::gpcap_ok;
use gpcap::capture::CaptureReader;
use gpcap::decode::{Decoded, decode};
use std::net::UdpSocket;
use std::time::Duration;

/// The UDP payloads of a capture, in order (every frame of lossy-bursts is a game
/// datagram sent whole).
fn payloads(capture: &str) -> Vec<Vec<u8>> {
    let mut r = CaptureReader::open(std::path::Path::new(capture)).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        if let Decoded::Udp { payload, .. } = decode(f.linktype, f.data) {
            out.push(payload.to_vec());
        }
    }
    out
}

#[test]
fn replay_sends_every_game_datagram_in_order() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let to = rx.local_addr().unwrap().to_string();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = rx.recv(&mut buf) {
            got.push(buf[..n].to_vec());
        }
        got
    });
    // Ten times as fast as captured (2 s): as fast as the socket takes them would overrun
    // the receiver's buffer, which is not what is tested here.
    let out = gpcap_ok(&[
        "replay",
        "captures/lossy-bursts.pcap",
        "-d",
        "dissectors/article.kdl",
        "--to",
        &to,
        "--speed",
        "10",
    ]);
    let sent: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let got = reader.join().unwrap();
    let want = payloads("captures/lossy-bursts.pcap");
    assert_eq!(want.len(), 2185);
    assert_eq!(sent["datagrams"].as_u64(), Some(2185));
    assert_eq!(sent["errors"].as_u64(), Some(0));
    assert_eq!(
        sent["bytes"].as_u64(),
        Some(want.iter().map(|p| p.len() as u64).sum::<u64>())
    );
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "the datagrams received are not the capture's, in order"
    );
}

#[test]
fn replay_refuses_speeds_out_of_range() {
    for bad in ["-1", "1001", "NaN", "fast"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
            .args(["replay", "captures/clean.pcap", "--to", "127.0.0.1:9"])
            .arg(format!("--speed={bad}"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--speed {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--speed"), "--speed {bad}: {err}");
    }
}

/// An IPv4 source and an IPv6 destination (or the reverse) make no datagram: refused up
/// front, before anything is sent, instead of counting every datagram as an error.
#[test]
fn replay_refuses_mixed_address_families() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args([
            "replay",
            "captures/clean.pcap",
            "--to",
            "127.0.0.1:9",
            "--from",
            "[::1]:5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not both IPv4 or both IPv6"), "{err}");
}

/// The UDP payloads of a capture by direction (source, destination), each in order.
fn payloads_by_direction(
    capture: &str,
) -> std::collections::BTreeMap<(std::net::SocketAddr, std::net::SocketAddr), Vec<Vec<u8>>> {
    let mut r = CaptureReader::open(std::path::Path::new(capture)).unwrap();
    let mut out = std::collections::BTreeMap::new();
    while let Some(f) = r.next_frame().unwrap() {
        if let Decoded::Udp {
            ip,
            src_port,
            dst_port,
            payload,
            ..
        } = decode(f.linktype, f.data)
        {
            let src = std::net::SocketAddr::new(ip.src, src_port);
            let dst = std::net::SocketAddr::new(ip.dst, dst_port);
            out.entry((src, dst))
                .or_insert_with(Vec::new)
                .push(payload.to_vec());
        }
    }
    out
}

/// Each captured direction leaves from a socket (a source port) of its own, so a receiver
/// — `gpcap live` above all — sees the capture's flows apart, each with its own sequence
/// counter, instead of both directions merged into one flow that looks late and lossy.
#[test]
fn each_direction_is_sent_from_a_socket_of_its_own() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let to = rx.local_addr().unwrap().to_string();
    let reader = std::thread::spawn(move || {
        let mut got: std::collections::BTreeMap<std::net::SocketAddr, Vec<Vec<u8>>> = Default::default();
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = rx.recv_from(&mut buf) {
            got.entry(from).or_default().push(buf[..n].to_vec());
        }
        got
    });
    let out = gpcap_ok(&[
        "replay",
        "captures/lossy-bursts.pcap",
        "-d",
        "dissectors/article.kdl",
        "--to",
        &to,
        "--speed",
        "10",
    ]);
    let sent: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(sent["sockets"].as_u64(), Some(2), "{out}");
    let got = reader.join().unwrap();
    let want = payloads_by_direction("captures/lossy-bursts.pcap");
    assert_eq!(want.len(), 2);
    assert_eq!(
        got.len(),
        2,
        "datagrams came from {:?}",
        got.keys().collect::<Vec<_>>()
    );
    // Each source port carries exactly one captured direction, in its order.
    let mut got: Vec<_> = got.into_values().collect();
    let mut want: Vec<_> = want.into_values().collect();
    got.sort();
    want.sort();
    assert!(
        got == want,
        "a source port carries other datagrams than one direction's"
    );
}

/// Loopback answers a datagram to a closed port with ICMP port unreachable, and the
/// connected socket refuses the next send (ECONNREFUSED). Those datagrams never left:
/// replay counts them, says so on stderr and exits 1, instead of reporting success.
#[test]
fn datagrams_refused_on_loopback_are_counted_said_and_fail_the_run() {
    // A port nothing listens on: bound, then closed.
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let to = format!("127.0.0.1:{port}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args([
            "replay",
            "captures/lossy-bursts.pcap",
            "-d",
            "dissectors/article.kdl",
        ])
        .args(["--to", &to, "--speed", "0"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let sent: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let (ok, errors) = (
        sent["datagrams"].as_u64().unwrap(),
        sent["errors"].as_u64().unwrap(),
    );
    assert!(errors > 0, "{stdout}");
    // Every datagram is either sent or counted as not sent.
    assert_eq!(ok + errors, 2185, "{stdout}");
    assert!(
        sent["first_error"].as_str().unwrap().contains("refused"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("{errors} of 2185 datagrams not sent"))
            && stderr.contains("refused")
            && stderr.contains(&to),
        "{stderr}"
    );
}
