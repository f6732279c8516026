//! Figures a new user found contradicting each other, each now explained in the report
//! itself (or the claim corrected): exact values on the bundled captures.

mod common;
use common::gpcap_run;

fn analyze(capture: &str, def: &str) -> (String, serde_json::Value) {
    let (code, text, err) = gpcap_run(&["analyze", capture, "-d", def]);
    assert_eq!(code, 0, "{err}");
    let (_, json, _) = gpcap_run(&["analyze", capture, "-d", def, "--json"]);
    (text, serde_json::from_str(&json).unwrap())
}

/// "ip-fragmented game datagrams 45" beside "over link MTU 44": one datagram of 1435
/// bytes was fragmented at the path's 1400, under the assumed link MTU of 1500.
#[test]
fn mtu_ignored_says_why_more_were_fragmented_than_over_the_link_mtu() {
    let (text, r) = analyze("captures/mtu-ignored.pcap", "dissectors/article.kdl");
    let m = &r["mtu"];
    assert_eq!(
        (m["ip_fragmented"].as_u64(), m["over_link_mtu"].as_u64()),
        (Some(45), Some(44))
    );
    assert_eq!(m["ip_fragmented_within_link_mtu"], 1);
    assert_eq!(m["fragment_mtu"], 1396);
    assert!(
        text.contains("link MTU 1500; the IP fragments show 1396"),
        "{text}"
    );
    assert!(
        text.contains("45 (1 of them within the link MTU of 1500: fragmented at 1396 bytes"),
        "{text}"
    );
}

/// "24 of the 24 gaps" beside 25 sequences lost: a gap is a run, one of them of two.
#[test]
fn mtu_df_says_gaps_are_runs_of_lost_sequences() {
    let (text, r) = analyze("captures/mtu-df.pcap", "dissectors/article.kdl");
    let lost: u64 = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["seq"]["lost"].as_u64().unwrap())
        .sum();
    assert_eq!((lost, r["mtu"]["gaps"].as_u64()), (25, Some(24)));
    assert!(
        text.contains("24 of the 24 gaps follow a datagram over the path MTU (a gap is a run of lost sequences: 25 sequences lost in all)"),
        "{text}"
    );
}

/// "100.0% … 50.0×" from one packet of nine fragments: no ratio from fewer packets
/// than a finding needs.
#[test]
fn no_amplification_from_a_handful_of_packets() {
    let (text, r) = analyze("captures/ipv6-sll2.pcapng", "dissectors/example-shooter.kdl");
    for row in r["reassembly"]["rows"].as_array().unwrap() {
        if row["seen"].as_u64().unwrap() < 20 {
            assert!(row["amplification"].is_null(), "{row}");
        }
    }
    assert!(!text.contains("50.0×"), "{text}");
    assert!(
        text.contains("(amplification `-`: fewer than 20 packets"),
        "{text}"
    );
    // Rows with enough packets keep their ratio.
    let (_, r) = analyze("captures/lossy-bursts.pcap", "dissectors/article.kdl");
    assert!(
        r["reassembly"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["amplification"].is_f64())
    );
}

/// VLAN 42 was nowhere in vlan-corrupt's summary, and its 12 CRC failures of another
/// protocol id (0x0BADF00D, which `identify` finds) were not told from corruption.
#[test]
fn vlan_and_another_protocol_id_are_said() {
    let (text, r) = analyze("captures/vlan-corrupt.pcap", "dissectors/example-shooter.kdl");
    assert_eq!(r["capture"]["vlans"], serde_json::json!({"42": 1183}));
    assert!(
        text.contains("│ 802.1Q VLANs         ┆ 42 (1183 frames)"),
        "{text}"
    );
    let flows = r["flows"].as_array().unwrap();
    let other: Vec<&serde_json::Value> = flows.iter().filter(|f| !f["crc_other_id"].is_null()).collect();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["src"], "10.0.9.9:50009");
    assert_eq!(
        other[0]["crc_other_id"],
        serde_json::json!({"id": "0x0BADF00D", "sampled": 12, "matching": 12})
    );
    assert!(
        text.contains("37 (12 on 1 flow whose mismatches validate with protocol id 0x0BADF00D"),
        "{text}"
    );
    // The corrupted datagrams of the game's own flows solve to a different id each.
    let (_, r) = analyze("captures/lossy-bursts.pcap", "dissectors/article.kdl");
    assert!(
        r["flows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["crc_other_id"].is_null())
    );
}

/// captures/README.md said attacks.pcap breaks each rule three times; stale is once and a
/// count out of range cannot be written in the article's count field: it says so now, as
/// the truth and analyze count.
#[test]
fn the_attacks_capture_is_described_as_it_is() {
    let (_, r) = analyze("captures/attacks.pcap", "dissectors/article.kdl");
    let a = &r["reassembly"]["attacks"];
    for (k, n) in [
        ("id_out_of_range", 3),
        ("count_changed", 3),
        ("oversize", 3),
        ("short_non_last", 3),
        ("duplicate", 3),
        ("stale", 1),
        ("count_out_of_range", 0),
    ] {
        assert_eq!(a[k], n, "{k}");
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/captures/README.md")).unwrap();
    let row = readme
        .lines()
        .find(|l| l.starts_with("| `attacks.pcap`"))
        .unwrap();
    assert!(
        !row.contains("each fragment rule of SPEC §1 three times"),
        "{row}"
    );
    assert!(
        row.contains("`stale` 1") && row.contains("`count_out_of_range` 0"),
        "{row}"
    );
}
