//! `stream_messages`: every message of a sequenced stream with the verdicts
//! `dissect --jsonl` gives it in `streams[]` — on real KCP traffic (its ack analysis
//! run first, as `dissect` does), on one core and three: the same rows, and per flow
//! the retransmitted and spurious copies `analyze` counts (52 and 12, KCP's truth).
#![cfg(feature = "export")]

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};
use std::path::Path;

const CAPTURE: &str = "tests/fixtures/kcp/capture.pcap";
const DEF: &str = "dissectors/kcp.kdl";

/// The table's rows in file order, each as `dissect --json` spells a message's verdict
/// (absent keys for what is null or false there), with its frame and addresses.
fn rows(dataset: &Path) -> Vec<Value> {
    let dir = dataset.join("capture=capture.pcap/stream_messages");
    let mut parts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    parts.sort_by_key(|p| {
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        n.trim_start_matches("part-")
            .trim_end_matches(".parquet")
            .parse::<u32>()
            .unwrap()
    });
    let mut out = Vec::new();
    for p in parts {
        let file = std::fs::File::open(&p).unwrap();
        for b in ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
        {
            let b = b.unwrap();
            for i in 0..b.num_rows() {
                out.push(row(&b, i));
            }
        }
    }
    out
}

fn row(b: &RecordBatch, i: usize) -> Value {
    let col = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("column {n}"));
    let u64_of = |n: &str| (!col(n).is_null(i)).then(|| col(n).as_primitive::<UInt64Type>().value(i));
    let u16_of = |n: &str| col(n).as_primitive::<UInt16Type>().value(i);
    let str_of = |n: &str| col(n).as_string::<i32>().value(i).to_string();
    let flag = |n: &str| !col(n).is_null(i) && col(n).as_boolean().value(i);
    let mut v = json!({
        "frame": u64_of("frame").unwrap(),
        "src": format!("{}:{}", str_of("src_ip"), u16_of("src_port")),
        "dst": format!("{}:{}", str_of("dst_ip"), u16_of("dst_port")),
        "message": u16_of("message"),
        "stream": str_of("stream"),
        "key": str_of("key"),
        "sequence": u64_of("sequence").unwrap(),
        "verdict": str_of("verdict"),
    });
    assert!(!col("reassembled").as_boolean().value(i));
    let m = v.as_object_mut().unwrap();
    if let Some(g) = u64_of("gap").filter(|&g| g > 0) {
        m.insert("gap".into(), g.into());
    }
    if !col("acked").is_null(i) {
        m.insert("acked".into(), col("acked").as_boolean().value(i).into());
    }
    if !col("rtt_ms").is_null(i) {
        let ms = col("rtt_ms").as_primitive::<Float64Type>().value(i);
        m.insert("rtt_ms".into(), format!("{ms:.3}").into());
    }
    for n in ["naked", "retransmission", "spurious"] {
        if flag(n) {
            m.insert(n.into(), true.into());
        }
    }
    v
}

/// What `dissect --jsonl` says, in the same shape.
fn dissected() -> Vec<Value> {
    let mut out = Vec::new();
    for l in common::gpcap_ok(&["dissect", "-d", DEF, CAPTURE, "--jsonl"]).lines() {
        let d: Value = serde_json::from_str(l).unwrap();
        for s in d.get("streams").and_then(Value::as_array).into_iter().flatten() {
            let mut m = s.as_object().unwrap().clone();
            m.insert("frame".into(), d["frame"].clone());
            m.insert("src".into(), d["src"].clone());
            m.insert("dst".into(), d["dst"].clone());
            if let Some(ms) = m.get("rtt_ms").and_then(Value::as_f64) {
                m.insert("rtt_ms".into(), format!("{ms:.3}").into());
            }
            out.push(Value::Object(m));
        }
    }
    out
}

#[test]
fn stream_messages_say_what_dissect_says_on_any_core_count() {
    let want = dissected();
    assert!(want.len() > 4000, "{} messages in streams", want.len());
    let report: Value =
        serde_json::from_str(&common::gpcap_ok(&["analyze", "-d", DEF, CAPTURE, "--json"])).unwrap();
    for threads in ["1", "3"] {
        let out = std::env::temp_dir().join(format!("gpcap-export-streams-{threads}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let o = out.display().to_string();
        common::gpcap_ok(&["export", "-d", DEF, CAPTURE, "-o", &o, "--threads", threads]);
        let got = rows(&out);
        assert_eq!(got.len(), want.len(), "--threads {threads}");
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "--threads {threads}, row {k}");
        }
        // Per flow, the retransmitted and spurious copies analyze's acks table counts.
        let mut all = [0u64; 2];
        for f in report["flows"].as_array().unwrap() {
            let Some(a) = f["stream_acks"].get(0).map(|s| &s["acks"]) else {
                continue;
            };
            let mine = got
                .iter()
                .filter(|r| r["src"] == f["src"] && r["dst"] == f["dst"]);
            let (re, sp) = mine.fold((0, 0), |(re, sp), r| {
                (
                    re + u64::from(r.get("retransmission").is_some()),
                    sp + u64::from(r.get("spurious").is_some()),
                )
            });
            assert_eq!(re, a["retransmissions"].as_u64().unwrap(), "{}", f["src"]);
            assert_eq!(
                sp,
                a["spurious_retransmissions"].as_u64().unwrap(),
                "{}",
                f["src"]
            );
            all[0] += re;
            all[1] += sp;
        }
        assert_eq!(all, [52, 12]);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// A protocol without message streams writes no `stream_messages` table.
#[test]
fn no_streams_no_table() {
    let out = std::env::temp_dir().join(format!("gpcap-export-nostreams-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = out.display().to_string();
    common::gpcap_ok(&[
        "export",
        "-d",
        "dissectors/article.kdl",
        "captures/clean.pcap",
        "-o",
        &o,
    ]);
    assert!(out.join("capture=clean.pcap/packets").exists());
    assert!(!out.join("capture=clean.pcap/stream_messages").exists());
    let _ = std::fs::remove_dir_all(&out);
}
