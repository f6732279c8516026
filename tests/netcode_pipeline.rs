//! Keyed runs give the serial report on many cores: sealed netcode.io packets opened by
//! the pipeline's workers (a key log's connections) or by its ordered stage (keys learnt
//! from requests, keys a request replaced, packets with no key) count as one core counts
//! them — decrypted, MAC failures, replays, no key, and every inner layer.

mod common;

use gpcap::Mode;
use gpcap::decrypt::keys::{Secrets, key_from_hex, parse_keylog};
use gpcap::layers::Stack;
use gpcap::resolve::{Choice, resolve};
use gpcap::validate::ProtocolId;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

const DEF: &str = "dissectors/netcode.kdl";

/// The analysis of `capture` in `mode`, as JSON.
fn report(capture: &str, choice: &Choice, mode: Mode) -> Value {
    let cfg = resolve(choice, |_| Ok(())).unwrap().cfg;
    let paths = [PathBuf::from(capture)];
    let r = gpcap::run::analyze(&paths, cfg, mode, &mut |_, _| {}).unwrap();
    serde_json::to_value(r).unwrap()
}

/// Serial = pipelined on 2 and 3 workers; the serial report.
fn same_in_every_mode(what: &str, capture: &str, choice: &Choice) -> Value {
    let serial = report(capture, choice, Mode::Serial);
    for workers in [2, 3] {
        let piped = report(capture, choice, Mode::Pipelined(workers));
        assert!(piped == serial, "{what}: {workers} workers differ from one core");
    }
    serial
}

fn choice(layers: &[&str], secrets: Secrets, protocol_id: Option<u64>) -> Choice {
    Choice {
        program: Some(gpcap::load_definition(DEF).unwrap()),
        protocol_id: protocol_id.map(ProtocolId::new64),
        stack: Some(Arc::new(Stack {
            secrets: Some(Arc::new(secrets)),
            show_keys: false,
            layers: layers
                .iter()
                .map(|d| gpcap::load_definition(d).unwrap())
                .collect(),
        })),
        ..Choice::default()
    }
}

/// A truth file's private key and `NETCODE` key log lines, one per client.
fn truth(path: &str) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let rows: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let key = rows
        .iter()
        .find_map(|r| r["private_key"].as_str())
        .unwrap()
        .to_string();
    let lines = rows
        .iter()
        .filter(|r| r["kind"] == "client")
        .map(|r| {
            let at = r["address"]
                .as_str()
                .map_or_else(|| format!("127.0.0.1:{}", r["port"]), str::to_string);
            format!(
                "NETCODE {at} {} {}",
                r["client_to_server_key"].as_str().unwrap(),
                r["server_to_client_key"].as_str().unwrap()
            )
        })
        .collect();
    (key, lines)
}

fn secrets(private_key: Option<&str>, log: &[String]) -> Secrets {
    let mut s = Secrets {
        private_key: private_key.map(|k| key_from_hex(k).unwrap()),
        ..Secrets::default()
    };
    parse_keylog(&log.join("\n"), &mut s).unwrap();
    s
}

/// A key log line with its client-to-server key replaced (a wrong key).
fn wrong(line: &str) -> String {
    let mut w: Vec<String> = line.split(' ').map(str::to_string).collect();
    w[2] = "ab".repeat(32);
    w.join(" ")
}

/// The key variants worth running: the private key, the key log, a key log that misses
/// a connection and has a wrong key for another (alone, and with the private key, which
/// replaces the wrong key when that client's request comes).
fn variants(key: &str, log: &[String]) -> Vec<(&'static str, Secrets)> {
    let mut partial = log.to_vec();
    partial.remove(0);
    partial[0] = wrong(&partial[0]);
    vec![
        ("private key", secrets(Some(key), &[])),
        ("key log", secrets(None, log)),
        ("partial key log", secrets(None, &partial)),
        ("private key and partial key log", secrets(Some(key), &partial)),
    ]
}

/// A keyed run of a large capture is pipelined (it was serial: the run refused any
/// stack): the choice reads the inputs' size and the definition, not the bytes.
#[test]
fn a_large_keyed_capture_runs_pipelined() {
    let dir = std::env::temp_dir().join(format!("gpcap-keyed-choice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("large.pcap");
    std::fs::File::create(&path).unwrap().set_len(9 << 20).unwrap();
    let (_, log) = truth("tests/fixtures/netcode/truth.jsonl");
    let c = choice(&["dissectors/reliable.kdl"], secrets(None, &log), None);
    let cfg = resolve(&c, |_| Ok(())).unwrap().cfg;
    assert_eq!(Mode::choose(&[path], &cfg, Some(2)), Mode::Pipelined(2));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_conformance_capture_decrypts_alike_on_many_cores() {
    let (key, log) = truth("tests/fixtures/netcode/truth.jsonl");
    for (what, s) in variants(&key, &log) {
        let r = same_in_every_mode(what, "tests/fixtures/netcode/capture.pcap", &choice(&[], s, None));
        assert!(r["decryption"]["decrypted"].as_u64().unwrap() > 1000, "{what}");
    }
}

#[test]
fn the_stacked_conformance_capture_reads_alike_on_many_cores() {
    let (key, log) = truth("tests/fixtures/netcode-reliable/truth_keys.jsonl");
    let layers = ["dissectors/reliable.kdl", "dissectors/yojimbo-messages.kdl"];
    for (what, s) in variants(&key, &log) {
        let c = choice(&layers, s, Some(0x3141_5926_5358_9793));
        let r = same_in_every_mode(what, "tests/fixtures/netcode-reliable/capture.pcap", &c);
        assert!(r["decryption"]["decrypted"].as_u64().unwrap() > 1000, "{what}");
        assert_eq!(r["layers"].as_array().unwrap().len(), 2, "{what}");
    }
}

/// Generated sealed traffic with loss and with duplicates (replays), under a key log that
/// misses some connections and is wrong for one (MAC failures).
#[test]
fn generated_sealed_traffic_decrypts_alike_on_many_cores() {
    let (dir, path) = common::gen_checked(
        DEF,
        "sealed-pipeline",
        &[
            "--encrypt",
            "--clients",
            "6",
            "--duration",
            "8",
            "--loss",
            "0.02",
            "--seed",
            "5",
        ],
    );
    let copy = format!("{path}.faulty.pcap");
    common::gpcap_ok(&[
        "gen",
        "-d",
        DEF,
        "-o",
        &copy,
        "--encrypt",
        "--clients",
        "6",
        "--duration",
        "8",
        "--seed",
        "5",
        "--dup",
        "0.02",
    ]);
    let log: Vec<String> = std::fs::read_to_string(format!("{path}.keylog"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("NETCODE"))
        .map(str::to_string)
        .collect();
    assert_eq!(log.len(), 6);
    let mut partial: Vec<String> = log.iter().step_by(2).cloned().collect();
    partial[1] = wrong(&partial[1]);
    for capture in [&path, &copy] {
        for (what, s) in [
            ("key log", secrets(None, &log)),
            ("partial key log", secrets(None, &partial)),
        ] {
            let r = same_in_every_mode(what, capture, &choice(&[], s, None));
            let d = &r["decryption"];
            assert!(d["decrypted"].as_u64().unwrap() > 1000, "{what}: {d}");
            if capture == &copy {
                assert!(d["replayed"].as_u64().unwrap() > 10, "{what}: {d}");
            }
            if what == "partial key log" {
                assert!(d["no_key"].as_u64().unwrap() > 1000, "{what}: {d}");
                assert!(d["mac_failures"].as_u64().unwrap() > 100, "{what}: {d}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `capture` with sealed packets tampered with: one record in 5 has its MAC's last byte
/// flipped, one in 7 a byte of its ciphertext (packets of 100 bytes or more: the
/// sealed ones; the link, IP and UDP headers are left alone).
fn tampered(capture: &str, out: &str) {
    let mut pcap = std::fs::read(capture).unwrap();
    let (mut at, mut n) = (24, 0usize);
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let data = at + 16..at + 16 + len;
        if len >= 100 && n % 5 == 0 {
            pcap[data.end - 1] ^= 0x01;
        } else if len >= 100 && n % 7 == 0 {
            pcap[data.start + 60] ^= 0x80;
        }
        (at, n) = (data.end, n + 1);
    }
    std::fs::write(out, pcap).unwrap();
}

/// MAC failures by tampering count alike on one core and many, whether or not anything
/// reads the plaintext (an inner layer does; `analyze` of netcode alone only checks
/// MACs), and so does the plaintext `dissect` shows.
#[test]
fn tampered_sealed_traffic_fails_alike_on_many_cores() {
    let (dir, path) = common::gen_checked(
        DEF,
        "sealed-tampered",
        &[
            "--encrypt",
            "--clients",
            "4",
            "--duration",
            "6",
            "--loss",
            "0.02",
            "--seed",
            "9",
        ],
    );
    let bad = format!("{path}.tampered.pcap");
    tampered(&path, &bad);
    let keylog = format!("{path}.keylog");
    let log: Vec<String> = std::fs::read_to_string(&keylog)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("NETCODE"))
        .map(str::to_string)
        .collect();
    let mut partial = log.clone();
    partial.remove(0);
    for layers in [&[][..], &["dissectors/reliable.kdl"][..]] {
        for (what, s) in [
            ("key log", secrets(None, &log)),
            ("partial key log", secrets(None, &partial)),
        ] {
            let r = same_in_every_mode(what, &bad, &choice(layers, s, None));
            let d = &r["decryption"];
            assert!(d["mac_failures"].as_u64().unwrap() > 100, "{what}: {d}");
            assert!(d["decrypted"].as_u64().unwrap() > 1000, "{what}: {d}");
        }
    }
    let dissect = |threads: &str| {
        common::gpcap_ok(&[
            "dissect",
            "-d",
            DEF,
            "--keylog",
            &keylog,
            &bad,
            "--jsonl",
            "--threads",
            threads,
        ])
    };
    let one = dissect("1");
    assert!(one.contains("\"mac\""), "a MAC failure shows in the trees");
    assert!(one == dissect("3"), "dissect --jsonl differs on 3 threads");
    std::fs::remove_dir_all(dir).unwrap();
}
