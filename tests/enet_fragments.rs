//! ENet's fragmented messages (tests/fixtures/enet): SEND_FRAGMENT and
//! SEND_UNRELIABLE_FRAGMENT commands grouped by channel, reliability and start sequence,
//! placed at their byte offset, and each complete message's bytes checked against the
//! payload the sender handed ENet (the truth's FNV-1a hashes, `fragmented_sends.tsv`).

mod common;

use common::gpcap_ok as gpcap;
use gpcap::SinkError;
use gpcap::dissect::{self, Dissector, Program};
use gpcap::{Config, Engine, Flow, Kind, PacketEvent, Sink};
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

const CAPTURE: &str = "tests/fixtures/enet/capture.pcap";
const DEF: &str = "dissectors/enet.kdl";

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string("tests/fixtures/enet/truth_summary.json").unwrap()).unwrap()
}

fn report(capture: &str) -> Value {
    serde_json::from_str(&gpcap(&["analyze", "-d", DEF, capture, "--json"])).unwrap()
}

fn program() -> Arc<Program> {
    Arc::new(
        dissect::load(std::path::Path::new(DEF)).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    )
}

#[test]
fn fragmented_messages_by_count_are_the_truths() {
    let (t, r) = (truth(), report(CAPTURE));
    let tf = &t["fragmented_messages"];
    let ra = &r["reassembly"];
    assert_eq!(ra["completed"], tf["complete"]);
    assert_eq!(ra["packets_seen"], tf["total"]);
    assert_eq!(ra["attacks"]["incomplete_at_end"], tf["incomplete"]);
    assert_eq!(ra["fragments_expected"], tf["fragments_expected"]);
    assert_eq!(ra["fragments_received"], tf["fragments_distinct_seen"]);
    // Resent reliable fragments are copies of fragments already held.
    let by_command = tf["by_command"].as_object().unwrap();
    let copies: u64 = by_command
        .values()
        .map(|c| c["fragment_copies"].as_u64().unwrap() - c["fragments_seen"].as_u64().unwrap())
        .sum();
    assert_eq!(ra["attacks"]["duplicate"], copies);
    let rows = ra["rows"].as_array().unwrap();
    let want = tf["by_fragment_count"].as_object().unwrap();
    assert_eq!(rows.len(), want.len());
    for row in rows {
        let w = &want[&row["fragments"].to_string()];
        assert_eq!(
            (&row["seen"], &row["completed"]),
            (&w["messages"], &w["complete"]),
            "{row}"
        );
    }
}

/// FNV-1a 64, as the truth hashes payloads.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every reassembled message's bytes and fragment frames.
#[derive(Default)]
struct Messages(Vec<(Vec<u8>, usize)>);

impl Sink for Messages {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.kind == Kind::Reassembled {
            self.0.push((e.payload.to_vec(), e.fragment_frames.len()));
        }
        Ok(Flow::Continue)
    }
}

#[test]
fn every_complete_message_is_the_payload_sent() {
    let sends: HashMap<u32, (String, usize, usize, u64)> =
        std::fs::read_to_string("tests/fixtures/enet/fragmented_sends.tsv")
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (
                    f[0].parse().unwrap(),
                    (
                        f[1].to_string(),
                        f[2].parse().unwrap(),
                        f[3].parse().unwrap(),
                        u64::from_str_radix(f[4], 16).unwrap(),
                    ),
                )
            })
            .collect();
    let mut engine = Engine::new(Config::from_program(program()), false);
    let mut sink = Messages::default();
    let mut r = gpcap::capture::CaptureReader::open(std::path::Path::new(CAPTURE)).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        engine.frame(&f, &mut sink).unwrap();
    }
    engine.finish(&mut sink);
    let mut kinds: HashMap<String, u64> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for (bytes, fragments) in &sink.0 {
        // A payload starts with its id, big-endian.
        let id = u32::from_be_bytes(bytes[..4].try_into().unwrap());
        let (kind, len, frags, hash) = sends
            .get(&id)
            .unwrap_or_else(|| panic!("message {id} was never sent"));
        assert_eq!(
            (bytes.len(), *fragments, fnv1a64(bytes)),
            (*len, *frags, *hash),
            "message {id}"
        );
        assert!(seen.insert(id), "message {id} reassembled twice");
        *kinds.entry(kind.clone()).or_default() += 1;
    }
    let app = &truth()["application"]["by_kind"];
    for kind in ["large_reliable", "large_unreliable"] {
        assert_eq!(
            kinds[kind],
            app[kind]["complete_on_wire"].as_u64().unwrap(),
            "{kind}"
        );
    }
}

/// An ENet datagram from a peer not yet known (id 0xfff: zeros stand in the checksum)
/// carrying one SEND_UNRELIABLE_FRAGMENT.
fn fragment_datagram(start: u16, number: u32, count: u32, total: u32, offset: u32, data: &[u8]) -> Vec<u8> {
    let mut d = vec![0x0f, 0xff, 0, 0, 0, 0, 0x0c, 1, 0, 1];
    d.extend(start.to_be_bytes());
    d.extend((data.len() as u16).to_be_bytes());
    for v in [count, number, total, offset] {
        d.extend(v.to_be_bytes());
    }
    d.extend(data);
    let c = crc32fast::hash(&d);
    d[2..6].copy_from_slice(&c.to_be_bytes());
    d
}

#[test]
fn a_fragment_past_its_total_or_over_the_maximum_is_a_located_counted_fault() {
    let mut d = Dissector::new(program());
    let x = d.dissect(&fragment_datagram(7, 1, 2, 10, 8, b"abcd"));
    let f = x.fault.expect("a fault");
    assert_eq!(
        (f.kind.code(), f.field.as_str(), f.bit),
        ("out_of_range", "messages[0].data", 30 * 8)
    );
    assert!(
        f.reason.contains("runs past the message's total length 10"),
        "{}",
        f.reason
    );
    let x = d.dissect(&fragment_datagram(7, 0, 2, 2_000_000, 0, b"abcd"));
    let f = x.fault.expect("a fault");
    assert!(f.reason.contains("over max-message-size 1048576"), "{}", f.reason);

    let (client, server): (SocketAddr, SocketAddr) =
        ("10.0.0.2:5000".parse().unwrap(), "10.0.0.1:7777".parse().unwrap());
    let dir = std::env::temp_dir().join(format!("gpcap-enet-frag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("frags.pcap");
    common::udp_capture(
        &path,
        [
            fragment_datagram(7, 1, 2, 10, 8, b"abcd"),
            fragment_datagram(8, 0, 2, 2_000_000, 0, b"abcd"),
            // A good message, its second half first.
            fragment_datagram(9, 1, 2, 7, 4, b"efg"),
            fragment_datagram(9, 0, 2, 7, 0, b"abcd"),
        ]
        .map(|d| (client, server, d)),
    );
    let r = report(path.to_str().unwrap());
    let frames = gpcap(&["dissect", "-d", DEF, path.to_str().unwrap(), "--brief"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let a = &r["reassembly"]["attacks"];
    assert_eq!((&a["offset_past_total"], &a["oversize"]), (&1.into(), &1.into()));
    assert_eq!(r["reassembly"]["completed"], 1);
    assert_eq!(r["malformed"]["total"], 2);
    // Its fragments by number: the frame of fragment 0 first.
    assert!(frames.contains("reassembled from frames 4,3"), "{frames}");
}

fn refusal(text: &str) -> String {
    match dissect::compile("bad.kdl", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => dissect::render(&e, false),
    }
}

#[test]
fn check_refuses_message_fragments_that_cannot_work() {
    let base = "protocol \"p\" { checksum \"none\"; bit-order \"msb\"; }\nheader { bits h 8; }\nmessages { bits kind 8 role=type; bits channel 8; }\n";
    let e = refusal(&format!(
        "{base}message 1 \"f\" {{ bits n 32 role=fragment-id key=\"chanel\"; bits c 32 role=fragment-count; bits len 16; bytes data \"len\" role=fragment-data; }}"
    ));
    assert!(
        e.contains("the key field `chanel`") && e.contains("did you mean `channel`?"),
        "{e}"
    );
    let e = refusal(&format!(
        "{base}message 1 \"f\" {{ bits n 32 role=fragment-id; bits c 32 role=fragment-count; bits o 32 role=fragment-offset; bits len 16; bytes data \"len\" role=fragment-data; }}"
    ));
    assert!(
        e.contains("needs both role=fragment-offset and role=fragment-total"),
        "{e}"
    );
    let e = refusal(&format!(
        "{base}message 1 \"f\" {{ bits n 32 role=fragment-id; bits len 16; bytes data \"len\" role=fragment-data; }}"
    ));
    assert!(e.contains("no field with role=fragment-count"), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits sequence 16 role=sequence; bits o 16 role=fragment-offset; }",
    );
    assert!(
        e.contains("role=fragment-offset is for fragments inside messages"),
        "{e}"
    );
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; max-message-size 0; }\nheader { bits sequence 16 role=sequence; }",
    );
    assert!(e.contains("max-message-size must be"), "{e}");
}

/// `dissect` shows a reassembled message as its bytes, after the frame that completed it.
#[test]
fn dissect_shows_a_reassembled_message_as_bytes() {
    let text = gpcap(&["dissect", "-d", DEF, CAPTURE, "--frame", "20"]);
    assert!(text.contains("[fragments in frames 19, 20]"), "{text}");
    assert!(text.contains("enet message (bytes)"), "{text}");
    assert!(text.contains("(2431 bytes)"), "{text}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the fragment fields say, nothing panics, memory stays within the budget
    /// and one message, and a message put back is no longer than its declared total.
    #[test]
    fn hostile_fragments_are_bounded(
        frags in proptest::collection::vec(
            (proptest::bool::ANY, 0u8..3, 0u16..4, 0u32..6, 0u32..8, 0u32..5000, 0u32..5000, 0u16..1500),
            1..120,
        )
    ) {
        let mut cfg = Config::from_program(program());
        cfg.reassembly_budget = 16 << 10;
        let mut engine = Engine::new(cfg, false);
        let mut sink = Messages::default();
        let (client, server): (SocketAddr, SocketAddr) =
            ("10.0.0.2:5000".parse().unwrap(), "10.0.0.1:7777".parse().unwrap());
        let datagrams: Vec<_> = frags
            .iter()
            .map(|&(reliable, channel, start, count, number, total, offset, len)| {
                let mut d = fragment_datagram(start, number, count, total, offset, &vec![0xab; len as usize]);
                d[6] = if reliable { 0x88 } else { 0x0c };
                d[7] = channel;
                let c = crc32fast::hash(&{
                    let mut z = d.clone();
                    z[2..6].fill(0);
                    z
                });
                d[2..6].copy_from_slice(&c.to_be_bytes());
                (client, server, d)
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("gpcap-enet-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("h.pcap");
        common::udp_capture(&path, datagrams);
        let mut r = gpcap::capture::CaptureReader::open(&path).unwrap();
        while let Some(f) = r.next_frame().unwrap() {
            engine.frame(&f, &mut sink).unwrap();
        }
        proptest::prop_assert!(engine.reassembly_peak() <= (16 << 10) + 5000 + 4096);
        engine.finish(&mut sink);
        std::fs::remove_dir_all(&dir).unwrap();
        for (bytes, _) in &sink.0 {
            proptest::prop_assert!(bytes.len() < 5000);
        }
    }
}
