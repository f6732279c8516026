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
