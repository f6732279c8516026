//! One spelling per state, the JSON's, everywhere a person meets it: `analyze`'s text and
//! JSON, `dissect`, the TUI and the display filter. A new user met one state four ways
//! (`crc_mismatch`, `CRC FAIL`, `crc fail`, `crc.fail`) and a packet given up at the end
//! as "never completed" in the TUI and "incomplete at end" in `analyze`.

mod common;
use common::gpcap_run;

/// The states a report names, as its JSON names them.
const STATES: &[&str] = &[
    "crc_ok",
    "crc_mismatch",
    "too_short",
    "ip_fragmented",
    "over_budget",
    "id_out_of_range",
    "count_out_of_range",
    "count_changed",
    "short_non_last",
    "evicted_incomplete",
    "evicted_for_memory",
    "incomplete_at_end",
];

/// Other spellings of those states that used to appear.
const OTHERS: &[&str] = &[
    "crc fail",
    "CRC FAIL",
    "crc mismatch",
    "crc ok",
    "too short",
    "ip-frag",
    "over budget",
    "id out of range",
    "count out of range",
    "evicted incomplete",
    "incomplete at end",
    "never completed",
];

#[test]
fn analyze_text_and_json_spell_states_alike() {
    for (capture, def) in [
        ("captures/vlan-corrupt.pcap", "dissectors/example-shooter.kdl"),
        ("captures/attacks.pcap", "dissectors/article.kdl"),
        ("captures/mtu-ignored.pcap", "dissectors/article.kdl"),
    ] {
        let (_, text, _) = gpcap_run(&["analyze", capture, "-d", def]);
        let (_, json, _) = gpcap_run(&["analyze", capture, "-d", def, "--json"]);
        for other in OTHERS {
            assert!(!text.contains(other), "{capture}: text says `{other}`");
        }
        assert!(!json.contains("\"crc_fail\""), "{capture}: JSON says crc_fail");
        for state in ["crc_ok", "crc_mismatch"] {
            assert!(text.contains(state), "{capture}: text lacks `{state}`");
            assert!(
                json.contains(&format!("\"{state}\"")),
                "{capture}: JSON lacks `{state}`"
            );
        }
        if text.contains("Fragment reassembly") {
            assert!(
                text.contains("incomplete_at_end"),
                "{capture}: text lacks incomplete_at_end"
            );
        }
    }
}

/// Every state a filter can select goes by its JSON name, and selects what analyze counts.
#[test]
fn filters_take_the_json_names() {
    let (_, json, _) = gpcap_run(&[
        "analyze",
        "captures/vlan-corrupt.pcap",
        "-d",
        "dissectors/example-shooter.kdl",
        "--json",
    ]);
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mismatches = r["validation"]["crc_mismatch"].as_u64().unwrap();
    let flows: u64 = r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["crc_mismatch"].as_u64().unwrap())
        .sum();
    assert_eq!(flows, mismatches);
    for word in [
        "crc_mismatch",
        "ip_fragmented",
        "over_budget",
        "too_short",
        "crc_ok",
    ] {
        let (code, _, err) = gpcap_run(&[
            "dissect",
            "captures/vlan-corrupt.pcap",
            "-d",
            "dissectors/example-shooter.kdl",
            "--brief",
            "--filter",
            word,
        ]);
        assert_eq!(code, 0, "{word}: {err}");
    }
    let (_, out, _) = gpcap_run(&[
        "dissect",
        "captures/vlan-corrupt.pcap",
        "-d",
        "dissectors/example-shooter.kdl",
        "--brief",
        "--filter",
        "crc_mismatch",
    ]);
    assert_eq!(out.lines().count() as u64, mismatches);
    assert!(out.lines().all(|l| l.contains(" crc_mismatch")), "{out}");
}

#[test]
fn the_state_list_is_what_json_names() {
    let (_, json, _) = gpcap_run(&[
        "analyze",
        "captures/attacks.pcap",
        "-d",
        "dissectors/article.kdl",
        "--json",
    ]);
    for state in STATES {
        assert!(json.contains(&format!("\"{state}\"")), "JSON lacks {state}");
    }
}
