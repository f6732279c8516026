//! netcode.io 1.02's replay protection: a packet that opens under its key but repeats a
//! sequence its direction of the connection received already, or is 256 or more older
//! than the newest, is a replay (netcode.c drops it). Captures are built here from the
//! netcode.io + reliable.io conformance capture (tests/fixtures/netcode-reliable) and from
//! `gen --encrypt` output, with sealed datagrams sent again later.

mod common;

use common::gpcap_ok;
use serde_json::Value;

const DIR: &str = "tests/fixtures/netcode-reliable";
const DEF: &str = "dissectors/netcode.kdl";

fn private_key() -> String {
    let text = std::fs::read_to_string(format!("{DIR}/truth_keys.jsonl")).unwrap();
    let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    meta["private_key"].as_str().unwrap().to_string()
}

/// A classic pcap's records (each with its 16-byte header) after its 24-byte header.
fn records(pcap: &[u8]) -> (&[u8], Vec<&[u8]>) {
    let magic = u32::from_le_bytes(pcap[..4].try_into().unwrap());
    assert!(
        magic == 0xa1b2_c3d4 || magic == 0xa1b2_3c4d,
        "a little-endian pcap"
    );
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(&pcap[at..at + 16 + len]);
        at += 16 + len;
    }
    (&pcap[..24], out)
}

/// One datagram of `dissect --jsonl`: frame, flow, type, sequence.
struct Datagram {
    frame: usize,
    flow: String,
    ptype: u64,
    sequence: u64,
}

fn datagrams(capture: &str, extra: &[&str]) -> Vec<Datagram> {
    let mut args = vec!["dissect", "-d", DEF, capture, "--jsonl"];
    args.extend_from_slice(extra);
    gpcap_ok(&args)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["sequence"].is_u64())
        .map(|v| Datagram {
            frame: v["frame"].as_u64().unwrap() as usize,
            flow: format!("{}->{}", v["src"].as_str().unwrap(), v["dst"].as_str().unwrap()),
            ptype: v["packet_type"].as_u64().unwrap(),
            sequence: v["sequence"].as_u64().unwrap(),
        })
        .collect()
}

/// Writes `capture` again with two sealed packets of one client's flow sent twice: a
/// payload right after it came (the same sequence again), and an early payload once the
/// flow is more than 300 sequences past it (older than the window). Returns the path and
/// the frames (1-based, in the new capture) of the two copies.
fn with_replays(capture: &str, extra: &[&str], name: &str) -> (std::path::PathBuf, [u64; 2]) {
    let d = datagrams(capture, extra);
    let payload = |x: &&Datagram| x.ptype == 5;
    let first = d.iter().filter(payload).nth(5).unwrap();
    let flow = first.flow.clone();
    let late = d
        .iter()
        .find(|x| x.flow == flow && x.sequence >= first.sequence + 300)
        .expect("the flow runs 300 sequences past its sixth payload");
    let again = d
        .iter()
        .filter(payload)
        .find(|x| x.flow == flow && x.frame > first.frame + 20)
        .unwrap();
    // The copy of `again` goes right after the next datagram of its flow.
    let after_again = d
        .iter()
        .find(|x| x.flow == flow && x.frame > again.frame)
        .unwrap();
    assert!(after_again.frame < late.frame, "the two copies in this order");
    let bytes = std::fs::read(capture).unwrap();
    let (header, recs) = records(&bytes);
    let mut out = header.to_vec();
    let mut copies = Vec::new();
    let mut n = 0u64;
    for (i, r) in recs.iter().enumerate() {
        out.extend_from_slice(r);
        n += 1;
        for (at, copy) in [(after_again.frame, again.frame), (late.frame, first.frame)] {
            if i + 1 == at {
                // The copy as captured, with the timestamp of the frame it follows.
                let mut c = recs[copy - 1].to_vec();
                c[..8].copy_from_slice(&r[..8]);
                out.extend_from_slice(&c);
                n += 1;
                copies.push(n);
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("gpcap-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("replayed.pcap");
    std::fs::write(&path, out).unwrap();
    (path, [copies[0], copies[1]])
}

fn stack(command: &str, capture: &str, key: &str, more: &[&str]) -> String {
    let mut a = vec![
        command,
        "-d",
        DEF,
        "-d",
        "dissectors/reliable.kdl",
        "-d",
        "dissectors/yojimbo-messages.kdl",
        capture,
        "--protocol-id",
        "0x3141592653589793",
        "--key",
        key,
    ];
    a.extend_from_slice(more);
    gpcap_ok(&a)
}

fn analyze(capture: &str, key: &str) -> Value {
    serde_json::from_str(&stack("analyze", capture, key, &["--json"])).unwrap()
}

#[test]
fn the_conformance_capture_has_no_replay() {
    let r = analyze(&format!("{DIR}/capture.pcap"), &private_key());
    assert_eq!(r["decryption"]["replayed"], 0);
    // The 3 connection requests are not sealed packets.
    assert_eq!(r["decryption"]["decrypted"], 3538 - 3);
    for f in r["decryption"]["flows"].as_array().unwrap() {
        assert_eq!(f["replayed"], 0);
    }
    assert!(r["malformed"]["by_cause"].get("replayed").is_none());
}

#[test]
fn replays_are_counted_once_and_not_read_again_inside() {
    let key = private_key();
    let original = format!("{DIR}/capture.pcap");
    let id = ["--protocol-id", "0x3141592653589793"];
    let (path, copies) = with_replays(&original, &id, "replays");
    let capture = path.to_str().unwrap();
    let before = analyze(&original, &key);
    let after = analyze(capture, &key);
    let d = &after["decryption"];
    assert_eq!(d["replayed"], 2);
    assert_eq!(d["decrypted"], 3535 + 2, "a replay opens under its key");
    assert_eq!(d["mac_failures"], 0);
    let replayed: u64 = (d["flows"].as_array().unwrap().iter())
        .map(|f| f["replayed"].as_u64().unwrap())
        .sum();
    assert_eq!(replayed, 2);
    assert_eq!(after["malformed"]["by_cause"]["replayed"], 2);
    // Not the description's fault: the fit and the flows' malformed counts are unchanged.
    assert_eq!(after["fit"]["verdict"], before["fit"]["verdict"]);
    for f in after["flows"].as_array().unwrap() {
        assert_eq!(f["malformed"], 0);
    }
    // The inner layers never had them: reliable.io's and the game's reports are the
    // unmodified capture's, number for number (sequences, acks, fragments, messages).
    assert_eq!(after["layers"], before["layers"]);

    // dissect marks the two copies, at the sequence, and they carry nothing inside.
    let frames: Vec<u64> = stack("dissect", capture, &key, &["--filter", "replayed", "--jsonl"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["status"], "malformed");
            assert_eq!(v["fault"]["kind"], "replayed");
            assert_eq!(v["fault"]["field"], "sequence");
            assert!(
                !l.contains("\"carried\""),
                "a replay is not read again inside: {l}"
            );
            v["frame"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(frames, copies);
    let text = stack("dissect", capture, &key, &["--frame", &copies[0].to_string()]);
    assert!(
        text.contains("replayed") && !text.contains("reliable type"),
        "{text}"
    );
    // The same filter through the display filter's other words.
    let n = stack(
        "dissect",
        capture,
        &key,
        &["--filter", "malformed && !mac_failure", "--brief"],
    );
    assert_eq!(n.lines().count(), 2, "{n}");
    // The text report's decryption table says it.
    let text = stack("analyze", capture, &key, &[]);
    assert!(
        text.contains("3537 sealed packets decrypted (2 replayed)"),
        "{text}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn gen_traffic_sent_again_is_replayed_under_its_key_log() {
    let (dir, path) = common::gen_checked(
        DEF,
        "replayed-gen",
        &["--encrypt", "--clients", "2", "--duration", "12", "--seed", "11"],
    );
    let log = format!("{path}.keylog");
    let (copy, frames) = with_replays(&path, &[], "replays-gen");
    let capture = copy.to_str().unwrap();
    let run = |c: &str| -> Value {
        serde_json::from_str(&gpcap_ok(&["analyze", "-d", DEF, c, "--keylog", &log, "--json"])).unwrap()
    };
    assert_eq!(run(&path)["decryption"]["replayed"], 0);
    let r = run(capture);
    assert_eq!(r["decryption"]["replayed"], 2);
    assert_eq!(r["decryption"]["mac_failures"], 0);
    let out = gpcap_ok(&[
        "dissect", "-d", DEF, capture, "--keylog", &log, "--filter", "replayed", "--jsonl",
    ]);
    let got: Vec<u64> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["frame"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(got, frames);
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(copy.parent().unwrap()).unwrap();
}
