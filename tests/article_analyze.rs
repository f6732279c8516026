//! `analyze` on captures/article.pcap agrees with the independent implementation's
//! frames.jsonl and truth.jsonl (copied into tests/fixtures), and its tables and JSON are
//! kept as golden snapshots.

use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::CaptureReader;
use gpcap::dissect;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn analyze(cfg: Config, capture: &str) -> Report {
    let mut a = Analyzer::new(cfg);
    let path = root().join(capture);
    let mut r = CaptureReader::open(&path).unwrap();
    a.begin_file(capture);
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    a.end_file(None, r.truncated_tail.clone());
    a.finish()
}

fn article_config() -> Config {
    let p = dissect::load(&root().join("dissectors/article.kdl")).unwrap();
    Config::from_program(Arc::new(p))
}

fn jsonl(name: &str) -> Vec<Value> {
    std::fs::read_to_string(root().join("tests/fixtures").join(name))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn agrees_with_truth() {
    let r = analyze(article_config(), "captures/article.pcap");
    let truth = jsonl("truth.jsonl");
    let frames = jsonl("frames.jsonl");

    // Game datagrams per flow (truth names flows "ip:port>port").
    let mut per_flow: BTreeMap<(u16, u16), u64> = BTreeMap::new();
    for t in truth.iter().filter(|t| t["event"] == "send") {
        let flow = t["flow"].as_str().unwrap();
        let (left, dport) = flow.split_once('>').unwrap();
        let sport = left.rsplit(':').next().unwrap();
        *per_flow
            .entry((sport.parse().unwrap(), dport.parse().unwrap()))
            .or_default() += 1;
    }
    for ((sport, dport), n) in &per_flow {
        let f = r
            .flows
            .iter()
            .find(|f| f.src.port() == *sport && f.dst.port() == *dport)
            .unwrap_or_else(|| panic!("flow {sport}>{dport}"));
        assert_eq!(f.crc_ok, *n, "flow {sport}>{dport}");
        assert_eq!(f.datagrams, *n, "flow {sport}>{dport}");
        // No loss in this capture: no false gaps, also across the wrap.
        assert_eq!(
            (f.seq.lost, f.seq.duplicates, f.seq.late),
            (0, 0, 0),
            "flow {sport}>{dport}"
        );
    }
    let summary = truth.iter().find(|t| t["event"] == "summary").unwrap();
    assert_eq!(r.validation.crc_ok, summary["datagrams_sent"].as_u64().unwrap());
    assert_eq!(r.capture.frames, summary["frames"].as_u64().unwrap());

    // The server flow wraps its sequence past 65535.
    let server = r
        .flows
        .iter()
        .find(|f| f.src.port() == 40000 && f.dst.port() == 50000)
        .unwrap();
    assert_eq!(server.seq.wraps, 1);

    // IP fragmentation, ICMP, foreign traffic.
    let ip_frag_frames = frames.iter().filter(|f| f["ip_fragmented"] == true).count() as u64;
    assert_eq!(r.capture.ip_fragments, ip_frag_frames);
    let ip_frag_datagrams: std::collections::BTreeSet<u64> = frames
        .iter()
        .filter(|f| f["ip_fragmented"] == true)
        .map(|f| f["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(r.mtu.ip_fragmented, ip_frag_datagrams.len() as u64);
    let icmp: Vec<&Value> = frames.iter().filter(|f| f.get("icmp").is_some()).collect();
    assert_eq!(r.mtu.icmp_total, icmp.len() as u64);
    for (finding, f) in r.mtu.icmp.iter().zip(icmp) {
        assert_eq!(finding.frame, f["frame"].as_u64().unwrap());
        assert_eq!(finding.mtu as u64, f["mtu"].as_u64().unwrap());
        let flow = finding.flow.unwrap();
        assert_eq!((flow.src.port(), flow.dst.port()), (40001, 50002));
    }
    let df: Vec<&Value> = frames.iter().filter(|f| f["df"] == true).collect();
    assert_eq!(r.mtu.df_over_path_mtu, df.len() as u64);
    let other_id = frames
        .iter()
        .filter(|f| f["foreign"] == "other_protocol_id")
        .count() as u64;
    let dns = frames.iter().filter(|f| f["foreign"] == "dns").count() as u64;
    assert_eq!(r.validation.crc_mismatch, other_id);
    assert_eq!(r.capture.other_udp, dns);

    // Every game fragment reassembles and dissects; nothing malformed.
    let frags = frames.iter().filter(|f| f.get("fragment").is_some()).count() as u64;
    assert_eq!(r.validation.fragments, frags);
    let packets: std::collections::BTreeSet<u64> = frames
        .iter()
        .filter(|f| f.get("fragment").is_some())
        .map(|f| f["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(r.reassembly.completed, packets.len() as u64);
    assert_eq!(r.reassembly.dissected_ok, packets.len() as u64);
    assert_eq!(r.reassembly.fragment_loss, 0.0);
    assert_eq!(r.malformed.total, 0);
    assert_eq!(r.reassembly.attacks.refused(), 0);
}

#[test]
fn golden_tables() {
    let r = analyze(article_config(), "captures/article.pcap");
    insta::assert_snapshot!("article_tables", gpcap::present::tables::render(&r));
}

#[test]
fn golden_json() {
    let r = analyze(article_config(), "captures/article.pcap");
    let mut v = serde_json::to_value(&r).unwrap();
    // The flow list is long; the snapshot keeps the totals and the first flow.
    if let Some(flows) = v["flows"].as_array_mut() {
        flows.truncate(2);
    }
    insta::assert_json_snapshot!("article_json", v);
}
