//! netcode.io decryption against the library's own truth (tests/fixtures/netcode: the
//! unmodified netcode.c, one server, five clients, the server's private key and every
//! connection's keys recorded): every packet opens with the private key, with a key log,
//! and none with a wrong key.

mod common;

use common::{gpcap_ok, gpcap_run};
use serde_json::Value;
use std::collections::HashMap;

const CAPTURE: &str = "tests/fixtures/netcode/capture.pcap";
const TRUTH: &str = "tests/fixtures/netcode/truth.jsonl";
const DEF: &str = "dissectors/netcode.kdl";

fn truth() -> Vec<Value> {
    std::fs::read_to_string(TRUTH)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn private_key(t: &[Value]) -> String {
    t.iter().find(|r| r["kind"] == "meta").unwrap()["private_key"]
        .as_str()
        .unwrap()
        .to_string()
}

fn analyze(extra: &[&str]) -> Value {
    let mut args = vec!["analyze", "-d", DEF, CAPTURE, "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&gpcap_ok(&args)).unwrap()
}

/// The frames of `dissect --jsonl` by number.
fn dissect(extra: &[&str]) -> HashMap<u64, Value> {
    let mut args = vec!["dissect", "-d", DEF, CAPTURE, "--jsonl"];
    args.extend_from_slice(extra);
    gpcap_ok(&args)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["frame"].as_u64().unwrap(), v)
        })
        .collect()
}

fn field<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    v["fields"].as_array().unwrap().iter().find(|f| f["path"] == path)
}

/// Bytes of body a decrypted tree covers: its last field's end less the header.
fn plaintext_len(v: &Value) -> u64 {
    let end = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["bit_offset"].as_u64().unwrap() + f["bit_len"].as_u64().unwrap())
        .max()
        .unwrap();
    let header = 1 + field(v, "sequence_bytes").unwrap()["value"].as_u64().unwrap();
    end / 8 - header
}

#[test]
fn with_the_private_key_every_packet_opens_and_reads_as_the_library_wrote_it() {
    let t = truth();
    let key = private_key(&t);
    let r = analyze(&["--key", &key]);
    let d = &r["decryption"];
    // 3136 datagrams: 5 connection requests (one a client, not sealed: their tokens
    // are counted apart) and 3131 sealed packets.
    assert_eq!(d["decrypted"], 3136 - 5);
    assert_eq!(d["mac_failures"], 0);
    assert_eq!(d["no_key"], 0);
    assert_eq!(d["tokens_opened"], 5);
    assert_eq!(d["tokens_unread"], 0);
    assert_eq!(r["malformed"]["total"], 0);
    // Per flow: every datagram of the flow but a client's request (a client whose
    // request is all it sent has no sealed packet, and no row).
    let flows: HashMap<(String, String), u64> = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                (f["src"].to_string(), f["dst"].to_string()),
                f["datagrams"].as_u64().unwrap(),
            )
        })
        .collect();
    let rows = d["flows"].as_array().unwrap();
    assert_eq!(rows.len(), flows.len() - 1);
    for f in rows {
        let request = u64::from(!f["src"].as_str().unwrap().ends_with(":40000"));
        assert_eq!(
            f["decrypted"].as_u64(),
            Some(flows[&(f["src"].to_string(), f["dst"].to_string())] - request)
        );
    }
    let frames = dissect(&["--key", &key, "--show-keys"]);
    let meta = t.iter().find(|r| r["kind"] == "meta").unwrap();
    let clients: HashMap<u64, &Value> = t
        .iter()
        .filter(|r| r["kind"] == "client")
        .map(|c| (c["port"].as_u64().unwrap(), c))
        .collect();
    let mut checked = [0u32; 7];
    for rec in t
        .iter()
        .filter(|r| r["kind"] == "datagram" && r["dropped"] == false)
    {
        let v = &frames[&rec["frame"].as_u64().unwrap()];
        let ty = rec["type"].as_u64().unwrap() as usize;
        assert_eq!(v["status"], "ok", "frame {}", rec["frame"]);
        assert!(
            field(v, "mac").is_none() && field(v, "encrypted").is_none(),
            "frame {} not decrypted",
            rec["frame"]
        );
        if ty == 0 {
            // The token's client id and packet keys, as the library generated them.
            let c = clients[&rec["src_port"].as_u64().unwrap()];
            assert_eq!(field(v, "client_id").unwrap()["value"], c["client_id"]);
            assert_eq!(
                field(v, "timeout_seconds").unwrap()["value"],
                c["timeout_seconds"]
            );
            assert_eq!(
                field(v, "client_to_server_key").unwrap()["value"],
                c["client_to_server_key"]
            );
            assert_eq!(
                field(v, "server_to_client_key").unwrap()["value"],
                c["server_to_client_key"]
            );
            let addresses = field(v, "server_addresses").unwrap().to_string();
            assert!(
                addresses.contains(r#""path":"server_addresses[0].server.port""#),
                "{addresses}"
            );
            assert!(addresses.contains(r#""value":40000"#), "{addresses}");
        } else {
            assert_eq!(
                Some(plaintext_len(v)),
                rec["plaintext_bytes"].as_u64(),
                "frame {}",
                rec["frame"]
            );
        }
        if ty == 4 {
            // The client sends 0, 0; the server its slot and max clients.
            let (index, max) = match rec["dir"].as_str() {
                Some("c2s") => (0, 0),
                _ => (
                    rec["slot"].as_u64().unwrap(),
                    meta["max_clients"].as_u64().unwrap(),
                ),
            };
            assert_eq!(
                field(v, "client_index").unwrap()["value"],
                index,
                "frame {}",
                rec["frame"]
            );
            assert_eq!(
                field(v, "max_clients").unwrap()["value"],
                max,
                "frame {}",
                rec["frame"]
            );
        }
        checked[ty] += 1;
    }
    assert_eq!(checked, [5, 1, 4, 4, 111, 2972, 39]);
}

#[test]
fn keys_are_hidden_unless_asked() {
    let key = private_key(&truth());
    let frames = dissect(&["--key", &key, "--frame", "1"]);
    let v = &frames[&1];
    assert_eq!(field(v, "client_to_server_key").unwrap()["value"], Value::Null);
    let text = gpcap_ok(&["dissect", "-d", DEF, CAPTURE, "--key", &key, "--frame", "1"]);
    let c2s = truth().into_iter().find(|r| r["kind"] == "client").unwrap()["client_to_server_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!text.contains(&c2s) && !text.contains(&key));
}

#[test]
fn a_key_log_opens_every_packet_but_the_requests() {
    let t = truth();
    let dir = std::env::temp_dir().join(format!("gpcap-keylog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("keys.log");
    let mut text = String::from("# netcode connections of tests/fixtures/netcode\n");
    for c in t.iter().filter(|r| r["kind"] == "client") {
        text.push_str(&format!(
            "NETCODE 127.0.0.1:{} {} {}\n",
            c["port"],
            c["client_to_server_key"].as_str().unwrap(),
            c["server_to_client_key"].as_str().unwrap()
        ));
    }
    std::fs::write(&log, text).unwrap();
    let r = analyze(&["--keylog", log.to_str().unwrap()]);
    let d = &r["decryption"];
    assert_eq!(d["keys"], "key log");
    // Requests carry the token, which only the private key opens: not read, and not
    // sealed packets without a key.
    assert_eq!(d["decrypted"], 3136 - 5);
    assert_eq!(d["no_key"], 0);
    assert_eq!(d["tokens_unread"], 5);
    assert_eq!(d["mac_failures"], 0);
    // The same through the environment, as SSLKEYLOGFILE.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["analyze", "-d", DEF, CAPTURE, "--json"])
        .env("GPCAP_KEYLOG", &log)
        .output()
        .unwrap();
    let r2: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r2["decryption"], r["decryption"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_wrong_key_opens_nothing_and_says_so() {
    let wrong = "11".repeat(32);
    let r = analyze(&["--key", &wrong]);
    let d = &r["decryption"];
    assert_eq!(d["decrypted"], 0);
    assert_eq!(d["tokens_opened"], 0);
    assert_eq!(d["token_failures"], 5);
    // No request opened, so no connection has keys: the rest have none.
    assert_eq!(d["no_key"], 3136 - 5);
    let text = gpcap_ok(&["analyze", "-d", DEF, CAPTURE, "--key", &wrong]);
    assert!(
        text.contains("nothing decrypted: the key is not this capture's"),
        "{text}"
    );
}

#[test]
fn a_mac_failure_is_a_fault_of_its_own() {
    // A key log with the right address and the wrong keys: every packet fails its MAC.
    let dir = std::env::temp_dir().join(format!("gpcap-badlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("keys.log");
    std::fs::write(
        &log,
        format!(
            "NETCODE 127.0.0.1:41000 {} {}\n",
            "22".repeat(32),
            "33".repeat(32)
        ),
    )
    .unwrap();
    let r = analyze(&["--keylog", log.to_str().unwrap()]);
    let n = r["decryption"]["mac_failures"].as_u64().unwrap();
    assert_eq!(
        n,
        379 + 380 - 1,
        "every packet of client 0's connection but its request"
    );
    assert_eq!(r["malformed"]["by_cause"]["mac_failure"].as_u64(), Some(n));
    let out = gpcap_ok(&[
        "dissect",
        "-d",
        DEF,
        CAPTURE,
        "--keylog",
        log.to_str().unwrap(),
        "--filter",
        "malformed",
        "--frame",
        "2",
    ]);
    assert!(out.contains("MAC does not match"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_keys_are_refused_with_their_place() {
    let dir = std::env::temp_dir().join(format!("gpcap-badkeys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let short = "ab".repeat(31);
    let (code, _, err) = gpcap_run(&["analyze", "-d", DEF, CAPTURE, "--key", &short]);
    assert_eq!(code, 2);
    assert!(err.contains("--key") && err.contains("31 bytes"), "{err}");
    assert!(!err.contains(&short), "the key is never printed: {err}");
    let file = dir.join("server.key");
    std::fs::write(&file, format!("# the key\n{}zz\n", "ab".repeat(31))).unwrap();
    let arg = format!("@{}", file.display());
    let (code, _, err) = gpcap_run(&["analyze", "-d", DEF, CAPTURE, "--key", &arg]);
    assert_eq!(code, 2);
    assert!(
        err.contains("server.key:2") && err.contains("character 63"),
        "{err}"
    );
    let log = dir.join("keys.log");
    std::fs::write(&log, "NETCODE 127.0.0.1:41000\n").unwrap();
    let (code, _, err) = gpcap_run(&["analyze", "-d", DEF, CAPTURE, "--keylog", log.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("keys.log:1:24") && err.contains("missing"), "{err}");
    // A definition without encryption has no use for a key.
    let (code, _, err) = gpcap_run(&[
        "analyze",
        "-d",
        "dissectors/reliable.kdl",
        CAPTURE,
        "--key",
        &"00".repeat(32),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("declares no encryption"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_a_key_nothing_changes() {
    let r = analyze(&[]);
    assert!(r.get("decryption").is_none() && r.get("layers").is_none());
    let v = &dissect(&["--frame", "6"])[&6];
    assert!(field(v, "encrypted").is_some());
}

#[test]
fn gen_seals_netcode_traffic_that_opens_with_its_key_log() {
    let (dir, path) = common::gen_checked(
        DEF,
        "sealed",
        &[
            "--encrypt",
            "--clients",
            "3",
            "--duration",
            "3",
            "--loss",
            "0.03",
            "--seed",
            "7",
        ],
    );
    let log = format!("{path}.keylog");
    let r: Value = serde_json::from_str(&gpcap_ok(&[
        "analyze", "-d", DEF, &path, "--keylog", &log, "--json",
    ]))
    .unwrap();
    let examined = r["validation"]["examined"].as_u64().unwrap();
    assert!(examined > 500);
    assert_eq!(r["decryption"]["decrypted"].as_u64(), Some(examined));
    assert_eq!(r["decryption"]["mac_failures"], 0);
    // Other keys open nothing.
    let text = std::fs::read_to_string(&log).unwrap();
    let zero = "00".repeat(32);
    let wrong: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("NETCODE "))
        .map(|l| format!("NETCODE {} {zero} {zero}\n", l.split(' ').next().unwrap()))
        .collect();
    std::fs::write(&log, wrong).unwrap();
    let r: Value = serde_json::from_str(&gpcap_ok(&[
        "analyze", "-d", DEF, &path, "--keylog", &log, "--json",
    ]))
    .unwrap();
    assert!(r["decryption"]["mac_failures"].as_u64() > Some(100));
    std::fs::remove_dir_all(dir).unwrap();
}
