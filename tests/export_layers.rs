//! `export` with keys and stacked definitions, on the netcode.io + reliable.io conformance
//! capture (tests/fixtures/netcode-reliable: the unmodified libraries, 3 clients, ~3% loss,
//! messages up to 8 KB fragmented inside the encryption): each inner layer's tables under
//! `layer=NAME/`, their rows against the libraries' truth and `analyze --json`'s
//! `layers[]`, the same on one core and several.
#![cfg(feature = "export")]

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use common::gpcap_run;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DIR: &str = "tests/fixtures/netcode-reliable";

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/truth_summary.json")).unwrap()).unwrap()
}

fn private_key() -> String {
    let text = std::fs::read_to_string(format!("{DIR}/truth_keys.jsonl")).unwrap();
    let meta: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    meta["private_key"].as_str().unwrap().to_string()
}

/// `command` on the fixture with netcode's definition, the key, `defs` inside it, and
/// `more` arguments.
fn args(command: &str, defs: &[&str], more: &[&str]) -> Vec<String> {
    let mut a = vec![command.to_string(), "-d".into(), "dissectors/netcode.kdl".into()];
    for d in defs {
        a.extend(["-d".to_string(), format!("dissectors/{d}")]);
    }
    a.extend(
        [
            &format!("{DIR}/capture.pcap"),
            "--protocol-id",
            "0x3141592653589793",
            "--key",
            &private_key(),
        ]
        .map(|s| s.to_string()),
    );
    a.extend(more.iter().map(|s| s.to_string()));
    a
}

const STACK: [&str; 2] = ["reliable.kdl", "yojimbo-messages.kdl"];

fn run(a: &[String]) -> (i32, String, String) {
    gpcap_run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>())
}

/// Exports the fixture with the whole stack into `out` on `threads` threads; the
/// summary line.
fn export(out: &Path, threads: &str) -> String {
    let _ = std::fs::remove_dir_all(out);
    let o = out.display().to_string();
    let (code, _, err) = run(&args("export", &STACK, &["-o", &o, "--threads", threads]));
    assert_eq!(code, 0, "{err}");
    err
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("gpcap-export-layers-{name}-{}", std::process::id()))
}

/// Every batch of a table's partition of the fixture.
fn read(out: &Path, table: &str) -> Vec<RecordBatch> {
    let path = out
        .join("capture=capture.pcap")
        .join(table)
        .join("part-0.parquet");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn rows(out: &Path, table: &str) -> u64 {
    read(out, table).iter().map(|b| b.num_rows() as u64).sum()
}

/// Rows of `packets` of `layer` by the value of a uint32 column (non-null only).
fn by_u32(out: &Path, table: &str, column: &str) -> BTreeMap<u32, u64> {
    let mut n = BTreeMap::new();
    for b in read(out, table) {
        let c = b
            .column_by_name(column)
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        for i in (0..c.len()).filter(|&i| c.is_valid(i)) {
            *n.entry(c.value(i)).or_default() += 1;
        }
    }
    n
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is not a count"))
}

/// The figures of the libraries' truth, and analyze's `layers[]`, are the rows of each
/// layer's tables: every reliable.io datagram in the capture and every packet it
/// reassembled (seen and completed per fragment count), every game datagram, and one
/// row per game message by type. Before, `export` read datagrams as captured and wrote
/// netcode's encrypted payloads only.
#[test]
fn each_layer_s_tables_hold_the_libraries_figures() {
    let out = temp("truth");
    let err = export(&out, "1");
    let truth = truth();
    let reliable_truth = &truth["reliable"];
    // reliable.io: whole and fragment datagrams in the capture, per direction.
    let dirs = ["c2s", "s2c"];
    let per_dir = |k: &str| -> u64 {
        dirs.iter()
            .map(|d| n(&reliable_truth["per_direction"][d][k]))
            .sum()
    };
    let whole = per_dir("regular_datagrams_in_capture");
    let fragments = per_dir("fragment_datagrams_in_capture");
    let (mut seen, mut completed) = (BTreeMap::new(), BTreeMap::new());
    for (count, v) in reliable_truth["fragments_by_count"].as_object().unwrap() {
        let count: u32 = count.parse().unwrap();
        seen.insert(count, n(&v["packets_seen"]));
        completed.insert(count, n(&v["packets_completed"]));
    }
    let reassembled: u64 = completed.values().sum();
    assert_eq!((whole, fragments, reassembled), (2195, 1288, 249));
    let packets = "layer=reliable/packets";
    assert_eq!(rows(&out, packets), whole + fragments + reassembled);
    let mut kinds = BTreeMap::new();
    for b in read(&out, packets) {
        let row = b.column_by_name("row").unwrap().as_string::<i32>().clone();
        let fc = b
            .column_by_name("fragment_count")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        for i in 0..b.num_rows() {
            let kind = match (row.value(i), fc.is_valid(i)) {
                ("reassembled", _) => "reassembled",
                (_, true) => "fragment",
                _ => "whole",
            };
            *kinds.entry(kind).or_insert(0u64) += 1;
        }
    }
    assert_eq!(
        kinds,
        BTreeMap::from([
            ("fragment", fragments),
            ("reassembled", reassembled),
            ("whole", whole)
        ])
    );
    // Fragmented packets seen (a fragment that opens one) and completed, per count.
    let opened: BTreeMap<u32, u64> = {
        let mut o = BTreeMap::new();
        for b in read(&out, packets) {
            let opens = b.column_by_name("opens").unwrap().as_boolean().clone();
            let fc = b
                .column_by_name("fragment_count")
                .unwrap()
                .as_primitive::<UInt32Type>()
                .clone();
            for i in (0..b.num_rows()).filter(|&i| opens.value(i)) {
                *o.entry(fc.value(i)).or_default() += 1;
            }
        }
        o
    };
    assert_eq!(opened, seen);
    assert_eq!(by_u32(&out, packets, "completes"), completed);
    // The layer's own reassembly table, as its engine ended it.
    let mut table = BTreeMap::new();
    for b in read(&out, "layer=reliable/reassembly") {
        let col = |c: &str| b.column_by_name(c).unwrap().as_primitive::<UInt64Type>().clone();
        let f = b
            .column_by_name("fragments")
            .unwrap()
            .as_primitive::<UInt32Type>()
            .clone();
        let (s, c) = (col("seen"), col("completed"));
        for i in 0..b.num_rows() {
            table.insert(f.value(i), (s.value(i), c.value(i)));
        }
    }
    let want: BTreeMap<u32, (u64, u64)> = seen.iter().map(|(k, s)| (*k, (*s, completed[k]))).collect();
    assert_eq!(table, want);
    // Every whole reliable.io packet and every reassembled one carries a game datagram.
    assert_eq!(rows(&out, "layer=reliable/type_message"), whole + reassembled);
    assert_eq!(rows(&out, "layer=game/packets"), whole + reassembled);
    // A row per game message, by type: what reliable.io delivered, and the one input
    // message of the packet complete in the capture it did not deliver.
    let mut delivered: BTreeMap<String, u64> = BTreeMap::new();
    for d in dirs {
        for (name, m) in truth["messages"]["per_direction"][d]["per_type"]
            .as_object()
            .unwrap()
        {
            *delivered.entry(name.clone()).or_default() += n(&m["delivered"]);
        }
    }
    *delivered.get_mut("input").unwrap() += 1;
    for (name, count) in &delivered {
        assert_eq!(rows(&out, &format!("layer=game/type_{name}")), *count, "{name}");
    }
    assert_eq!(delivered["blob"], 179);
    // The summary line names the layers' tables; keys are no longer ignored.
    assert!(err.contains("layer=game/type_blob 179"), "{err}");
    assert!(err.contains("layer=reliable/packets 3732"), "{err}");
    assert!(!err.contains("reads datagrams as captured"), "{err}");
    // The same figures as analyze's layers[], and each layer's flows as its engine's.
    let a = run(&args("analyze", &STACK, &["--json"]));
    let r: Value = serde_json::from_str(&a.1).unwrap();
    let (rl, game) = (&r["layers"][0], &r["layers"][1]);
    assert_eq!(
        rows(&out, packets),
        n(&rl["fit"]["datagrams"]) + n(&rl["reassembly"]["completed"])
    );
    assert_eq!(rows(&out, "layer=game/packets"), n(&game["fit"]["datagrams"]));
    for (name, count) in game["messages"]["by_type"].as_object().unwrap() {
        assert_eq!(rows(&out, &format!("layer=game/type_{name}")), n(count), "{name}");
    }
    for (layer, report) in [("reliable", rl), ("game", game)] {
        let flows = report["flows"].as_array().unwrap().len() as u64;
        assert_eq!(rows(&out, &format!("layer={layer}/flows")), flows, "{layer}");
    }
    // The outer datagrams, each decrypted: a keep-alive's plaintext fields are columns.
    assert_eq!(rows(&out, "packets"), 3538);
    let keep_alive = read(&out, "type_keep_alive");
    assert!(keep_alive[0].column_by_name("client_index").is_some());
    assert!(keep_alive[0].column_by_name("max_clients").is_some());
    assert_eq!(rows(&out, "type_keep_alive"), 18);
    // The token's keys are not shown unless asked.
    let request = read(&out, "type_request");
    let key = request[0].column_by_name("client_to_server_key").unwrap();
    assert_eq!(key.null_count(), key.len());
    std::fs::remove_dir_all(&out).unwrap();
}

/// Exported again without the game's layer, its tables lose this capture; without keys
/// nothing inside can be read and no layer's tables are written (netcode.kdl brings
/// reliable.kdl by `dissect-as`, which wrote empty `layer=reliable` tables).
#[test]
fn a_layer_not_exported_again_and_no_keys_leave_no_layer_tables() {
    let out = temp("again");
    export(&out, "1");
    let part = |table: &str| {
        out.join("capture=capture.pcap")
            .join(table)
            .join("part-0.parquet")
    };
    assert!(part("layer=game/type_blob").exists());
    let o = out.display().to_string();
    let (code, _, err) = run(&args("export", &["reliable.kdl"], &["-o", &o]));
    assert_eq!(code, 0, "{err}");
    assert!(!part("layer=game/packets").exists());
    assert!(!part("layer=game/type_blob").exists());
    assert!(part("layer=reliable/packets").exists());
    assert!(part("packets").exists());
    let bare = out.join("bare");
    let (code, _, err) = gpcap_run(&[
        "export",
        "-d",
        "dissectors/netcode.kdl",
        &format!("{DIR}/capture.pcap"),
        "-o",
        &bare.display().to_string(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(bare.join("capture=capture.pcap/packets").exists());
    assert!(
        !bare.join("capture=capture.pcap/layer=reliable").exists(),
        "{err}"
    );
    // `layer` names the layers' directories: not a partition key of a layered export.
    let (code, _, err) = run(&args("export", &STACK, &["-o", &o, "--partition", "layer=x"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`layer` names the inner layers' directories"),
        "{err}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

/// Every table of a dataset, rows in order (row groups may fall elsewhere).
fn tables(dir: &Path) -> BTreeMap<String, Vec<RecordBatch>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                let file = std::fs::File::open(&path).unwrap();
                let b = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
                let all = b.metadata().file_metadata().num_rows().max(1) as usize;
                let batches = b.with_batch_size(all).build().unwrap().map(|b| b.unwrap());
                out.insert(name, batches.collect());
            }
        }
    }
    out
}

/// A layered export depends on the conversation (decryption, each layer's engine), so
/// it runs on one core whatever `--threads` says: the same rows in every table.
#[test]
fn a_layered_export_writes_the_same_rows_on_one_core_and_three() {
    let (one, three) = (temp("one"), temp("three"));
    let a = export(&one, "1");
    let b = export(&three, "3");
    assert_eq!(
        a.replace(&one.display().to_string(), ""),
        b.replace(&three.display().to_string(), "")
    );
    let (a, b) = (tables(&one), tables(&three));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    assert!(a.keys().filter(|k| k.contains("/layer=")).count() >= 14);
    for (name, rows) in &a {
        assert!(rows == &b[name], "table {name} differs");
    }
    std::fs::remove_dir_all(&one).unwrap();
    std::fs::remove_dir_all(&three).unwrap();
}
