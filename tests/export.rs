//! `gpcap export` read back with the parquet crate: row counts and typed values equal
//! what `analyze --json` and `dissect --jsonl` say, on every bundled capture.
#![cfg(feature = "export")]

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use common::{BUNDLED, gpcap_ok};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

fn read(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// A scalar cell as JSON (integers, floats, booleans, strings; null).
fn cell(a: &ArrayRef, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    macro_rules! int {
        ($t:ty) => {
            Value::from(a.as_primitive::<$t>().value(i) as i64)
        };
    }
    match a.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => Value::from(a.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => Value::from(a.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => Value::from(a.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => Value::from(a.as_boolean().value(i)),
        DataType::Utf8 => Value::from(a.as_string::<i32>().value(i)),
        DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, _) => {
            Value::from(a.as_primitive::<TimestampMicrosecondType>().value(i))
        }
        other => Value::String(format!("<{other}>")),
    }
}

/// A dissect object's fields by path.
type Fields<'a> = HashMap<&'a str, &'a Value>;

/// Every field of a dissect object by path, nested ones included.
fn by_path(d: &Value) -> Fields<'_> {
    fn walk<'a>(fields: &'a Value, out: &mut HashMap<&'a str, &'a Value>) {
        for f in fields.as_array().into_iter().flatten() {
            out.insert(f["path"].as_str().unwrap(), &f["value"]);
            walk(&f["fields"], out);
        }
    }
    let mut out = HashMap::new();
    walk(&d["fields"], &mut out);
    out
}

fn column<'a>(b: &'a RecordBatch, name: &str) -> &'a ArrayRef {
    b.column_by_name(name).unwrap_or_else(|| panic!("column {name}"))
}

/// Values agree: exactly, or floats within the coarsest resolution dissect prints.
fn same(export: &Value, dissect: &Value) -> bool {
    match (export.as_f64(), dissect.as_f64()) {
        (Some(a), Some(b)) if export.is_f64() || dissect.is_f64() => (a - b).abs() <= 0.051,
        _ => export == dissect,
    }
}

#[test]
fn export_reads_back_as_analyze_and_dissect_say() {
    let out = std::env::temp_dir().join(format!("gpcap-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    let mut checked_values = 0u64;
    for (capture, def) in BUNDLED {
        let path = format!("{root}/captures/{capture}");
        let def = format!("{root}/dissectors/{def}");
        let dir = out.join(def.rsplit('/').next().unwrap());
        gpcap_ok(&["export", "-d", &def, &path, "-o", dir.to_str().unwrap()]);
        let part = |table: &str| {
            dir.join(format!("capture={capture}"))
                .join(table)
                .join("part-0.parquet")
        };

        // packets: one row per dissect object, in order, with its frame, status,
        // sequence and type.
        let dissect: Vec<Value> = gpcap_ok(&["dissect", "-d", &def, &path, "--jsonl"])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let packets = read(&part("packets"));
        let rows: usize = packets.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, dissect.len(), "{capture}: packets rows");
        let mut k = 0;
        for b in &packets {
            for i in 0..b.num_rows() {
                let d = &dissect[k];
                k += 1;
                assert_eq!(cell(column(b, "frame"), i), d["frame"], "{capture} row {k}");
                assert_eq!(cell(column(b, "status"), i), d["status"], "{capture} row {k}");
                // A datagram that failed its checksum was not validated: dissect still
                // shows what its bytes would say, the export (as analyze) has no values.
                let validated = d["crc_ok"] != false;
                let seen = |v: &Value| if validated { v.clone() } else { Value::Null };
                assert_eq!(
                    cell(column(b, "sequence"), i),
                    seen(&d["sequence"]),
                    "{capture} row {k}"
                );
                assert_eq!(
                    cell(column(b, "type_id"), i),
                    seen(&d["packet_type"]),
                    "{capture} row {k}"
                );
                assert_eq!(
                    cell(column(b, "type_name"), i),
                    seen(&d["type_name"]),
                    "{capture} row {k}"
                );
                assert_eq!(cell(column(b, "size"), i), d["size"], "{capture} row {k}");
                assert_eq!(cell(column(b, "ts_ns"), i), d["ts_ns"], "{capture} row {k}");
                let ns = d["ts_ns"].as_i64().unwrap();
                assert_eq!(
                    cell(column(b, "ts"), i),
                    ns.div_euclid(1000),
                    "{capture} row {k}: ts in µs"
                );
                let reassembled = d.get("fragment_frames").is_some();
                assert_eq!(
                    cell(column(b, "row"), i),
                    if reassembled { "reassembled" } else { "datagram" }
                );
                let frag = &d["fragment"];
                assert_eq!(
                    cell(column(b, "fragment_count"), i),
                    seen(&frag["count"]),
                    "{capture} row {k}"
                );
            }
        }

        // Against the report: datagrams per flow and reassembled packets.
        let report: Value =
            serde_json::from_str(&gpcap_ok(&["analyze", "--json", "-d", &def, &path])).unwrap();
        let datagrams: u64 = report["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["datagrams"].as_u64().unwrap())
            .sum();
        let reassembled = dissect
            .iter()
            .filter(|d| d.get("fragment_frames").is_some())
            .count() as u64;
        assert_eq!(rows as u64, datagrams + reassembled, "{capture}");
        assert_eq!(
            reassembled,
            report["reassembly"]["completed"].as_u64().unwrap(),
            "{capture}"
        );
        let flows: usize = read(&part("flows")).iter().map(|b| b.num_rows()).sum();
        assert_eq!(
            flows,
            report["flows"].as_array().unwrap().len(),
            "{capture}: flows rows"
        );

        // Each type's table: one row per dissected packet of that type, and every
        // top-level scalar field as dissect shows it.
        let mut by_key: HashMap<(u64, bool), &Value> = HashMap::new();
        for d in &dissect {
            if d["fragment"].is_null() && !d["packet_type"].is_null() && d["crc_ok"] != false {
                by_key.insert(
                    (d["frame"].as_u64().unwrap(), d.get("fragment_frames").is_some()),
                    d,
                );
            }
        }
        let mut type_rows = 0;
        let tables: Vec<String> = std::fs::read_dir(dir.join(format!("capture={capture}")))
            .unwrap()
            .map(|t| t.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        // (frame, reassembled) of each row of a type table with a list, for its child.
        let mut at_row: HashMap<(String, u64, u32), bool> = HashMap::new();
        let mut elements = 0u64;
        for t in &tables {
            let Some(type_name) = t.strip_prefix("type_").filter(|t| !t.contains("__")) else {
                continue;
            };
            for b in read(&part(t)) {
                for i in 0..b.num_rows() {
                    type_rows += 1;
                    let frame = cell(column(&b, "frame"), i).as_u64().unwrap();
                    let row = cell(column(&b, "row"), i).as_u64().unwrap() as u32;
                    assert_eq!(row, 0, "{capture} {t} frame {frame}: a packet's own row");
                    let re = cell(column(&b, "reassembled"), i).as_bool().unwrap();
                    at_row.insert((t.clone(), frame, row), re);
                    let d = by_key
                        .get(&(frame, re))
                        .unwrap_or_else(|| panic!("{capture} {t} frame {frame}"));
                    assert_eq!(d["type_name"], type_name, "{capture} frame {frame}");
                    let fields = by_path(d);
                    for (c, field) in b.schema().fields().iter().enumerate().skip(3) {
                        let got = cell(b.column(c), i);
                        if got.as_str().is_some_and(|s| s.starts_with('<')) {
                            continue; // a group: its parts are checked by their own paths below
                        }
                        let name = field.name().as_str();
                        if tables.contains(&format!("{t}__{name}")) {
                            // A list: its length, the elements dissect shows.
                            let n = (0..)
                                .take_while(|k| fields.contains_key(format!("{name}[{k}]").as_str()))
                                .count();
                            let want = if fields.contains_key(name) {
                                Value::from(n)
                            } else {
                                Value::Null
                            };
                            assert_eq!(got, want, "{capture} frame {frame} {name}: elements");
                            elements += n as u64;
                            checked_values += 1;
                            continue;
                        }
                        let want = fields.get(name).copied().unwrap_or(&Value::Null);
                        assert!(
                            same(&got, want),
                            "{capture} frame {frame} {}: export {got} dissect {want}",
                            field.name()
                        );
                        checked_values += 1;
                    }
                }
            }
        }
        assert_eq!(type_rows, by_key.len(), "{capture}: rows of the type tables");
        // Each list's child table: one row per element dissect shows, keyed by its parent
        // row and place, every scalar field as dissect shows it at `LIST[index].FIELD`.
        let mut child_rows = 0u64;
        for t in tables
            .iter()
            .filter(|t| t.starts_with("type_") && t.matches("__").count() == 1)
        {
            let (parent, list) = t.split_once("__").unwrap();
            let mut last: Option<((u64, bool), Fields)> = None;
            for b in read(&part(t)) {
                for i in 0..b.num_rows() {
                    child_rows += 1;
                    let frame = cell(column(&b, "frame"), i).as_u64().unwrap();
                    let row = cell(column(&b, "row"), i).as_u64().unwrap() as u32;
                    let index = cell(column(&b, "index"), i).as_u64().unwrap();
                    let re = at_row[&(parent.to_string(), frame, row)];
                    // Rows of one parent are together: its fields found once for them.
                    if last.as_ref().is_none_or(|l| l.0 != (frame, re)) {
                        last = Some(((frame, re), by_path(by_key[&(frame, re)])));
                    }
                    let fields = &last.as_ref().unwrap().1;
                    for (c, field) in b.schema().fields().iter().enumerate().skip(3) {
                        let got = cell(b.column(c), i);
                        if got.as_str().is_some_and(|s| s.starts_with('<')) {
                            continue;
                        }
                        let name = field.name().as_str().replace("list_index", "index");
                        let want = fields
                            .get(format!("{list}[{index}].{name}").as_str())
                            .copied()
                            .unwrap_or(&Value::Null);
                        assert!(
                            same(&got, want),
                            "{capture} {t} frame {frame} [{index}] {name}: export {got} dissect {want}"
                        );
                        checked_values += 1;
                    }
                }
            }
        }
        assert_eq!(child_rows, elements, "{capture}: rows of the child tables");
    }
    assert!(checked_values > 10_000, "{checked_values} values compared");
    let _ = std::fs::remove_dir_all(&out);
}

/// Child tables: a scene's objects, one row per object keyed by the scene's (frame,
/// row) and the object's place, joined back to the scene: as many as dissect shows, each
/// object's index, position and velocities as dissect shows them.
#[test]
fn export_lists_are_child_tables_that_join_back() {
    let out = std::env::temp_dir().join(format!("gpcap-export-nested-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/captures/clean.pcap");
    let def = format!("{root}/dissectors/article.kdl");
    gpcap_ok(&["export", "-d", &def, &path, "-o", out.to_str().unwrap()]);
    let dissect: HashMap<u64, Value> = gpcap_ok(&["dissect", "-d", &def, &path, "--jsonl"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["type_name"] == "scene" && d.get("fragment_frames").is_none())
        .map(|d| (d["frame"].as_u64().unwrap(), d))
        .collect();
    let mut lengths = HashMap::new();
    for b in read(&out.join("capture=clean.pcap/type_scene/part-0.parquet")) {
        for i in 0..b.num_rows() {
            if cell(column(&b, "reassembled"), i) == true {
                continue;
            }
            let frame = cell(column(&b, "frame"), i).as_u64().unwrap();
            assert_eq!(cell(column(&b, "row"), i), 0);
            lengths.insert(frame, cell(column(&b, "objects"), i).as_u64().unwrap());
        }
    }
    let mut objects: HashMap<u64, u64> = HashMap::new();
    for b in read(&out.join("capture=clean.pcap/type_scene__objects/part-0.parquet")) {
        let names: Vec<_> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names[..4], ["frame", "row", "index", "list_index"]);
        for i in 0..b.num_rows() {
            let frame = cell(column(&b, "frame"), i).as_u64().unwrap();
            let Some(d) = dissect.get(&frame) else {
                continue; // a reassembled scene's objects
            };
            let k = cell(column(&b, "index"), i).as_u64().unwrap();
            assert_eq!(
                k,
                objects.get(&frame).copied().unwrap_or(0),
                "frame {frame}: places in order"
            );
            *objects.entry(frame).or_default() += 1;
            let fields = by_path(d);
            assert_eq!(
                &cell(column(&b, "list_index"), i),
                fields[format!("objects[{k}].index").as_str()],
                "frame {frame} object {k}"
            );
            let position = column(&b, "position").as_struct();
            for axis in ["x", "y", "z"] {
                let got = cell(position.column_by_name(axis).unwrap(), i);
                let want = fields[format!("objects[{k}].position.{axis}").as_str()];
                assert!(
                    same(&got, want),
                    "frame {frame} object {k} {axis}: {got} vs {want}"
                );
            }
            let at_rest = cell(column(&b, "at_rest"), i);
            assert_eq!(&at_rest, fields[format!("objects[{k}].at_rest").as_str()]);
            assert_eq!(
                column(&b, "linear_velocity").is_null(i),
                at_rest == true,
                "frame {frame} object {k}: velocity only when moving"
            );
        }
    }
    let mut checked = 0;
    for (frame, d) in &dissect {
        let fields = by_path(d);
        let n = (0..)
            .take_while(|k| fields.contains_key(format!("objects[{k}]").as_str()))
            .count() as u64;
        assert_eq!(lengths[frame], n, "frame {frame}: the scene's length");
        assert_eq!(
            objects.get(frame).copied().unwrap_or(0),
            n,
            "frame {frame}: rows joined"
        );
        checked += n;
    }
    assert!(checked > 1000, "{checked} objects compared");
    let _ = std::fs::remove_dir_all(&out);
}

/// A dictionary column's value at row `i` as its name (null when null).
fn name_at(a: &ArrayRef, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    let d = a.as_dictionary::<UInt16Type>();
    let key = d.keys().value(i) as usize;
    Value::from(d.values().as_string::<i32>().value(key))
}

/// Regression (issue 31): custom header and fragment-header fields were exported nowhere
/// and enum fields had no names in the dataset. `packets.header` holds every header
/// field of a validated datagram, `fragment_header` every fragment-header field of a
/// fragment, and an enum field has its name beside it (`type` and `type_name`), equal
/// to what the packet columns say. The `mtu` table's flow is in the four columns every
/// other table has; `ts` is a microsecond UTC timestamp.
#[test]
fn export_keeps_header_fields_and_enum_names() {
    let out = std::env::temp_dir().join(format!("gpcap-export-header-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/captures/article.pcap");
    gpcap_ok(&[
        "export",
        "-d",
        &format!("{root}/dissectors/article.kdl"),
        &path,
        "-o",
        out.to_str().unwrap(),
    ]);
    let part = |t: &str| out.join("capture=article.pcap").join(t).join("part-0.parquet");
    let (mut headers, mut fragments, mut reassembled) = (0, 0, 0);
    for b in read(&part("packets")) {
        assert_eq!(
            b.schema().field_with_name("ts").unwrap().data_type(),
            &DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into()))
        );
        let header = column(&b, "header").as_struct();
        let fragment = column(&b, "fragment_header").as_struct();
        for i in 0..b.num_rows() {
            let status = cell(column(&b, "status"), i);
            let row = cell(column(&b, "row"), i);
            if row == "reassembled" || status == "crc_mismatch" {
                assert!(header.is_null(i), "row {i}: {row} {status}");
                reassembled += (row == "reassembled") as u32;
                continue;
            }
            assert!(header.is_valid(i), "row {i}");
            headers += 1;
            assert_eq!(
                cell(header.column_by_name("sequence").unwrap(), i),
                cell(column(&b, "sequence"), i)
            );
            assert_eq!(
                cell(header.column_by_name("type").unwrap(), i),
                cell(column(&b, "type_id"), i)
            );
            assert_eq!(
                name_at(header.column_by_name("type_name").unwrap(), i),
                cell(column(&b, "type_name"), i)
            );
            let frag_id = cell(column(&b, "fragment_id"), i);
            if frag_id.is_null() {
                assert!(fragment.is_null(i), "row {i}");
            } else {
                fragments += 1;
                assert_eq!(cell(fragment.column_by_name("fragment_id").unwrap(), i), frag_id);
                assert_eq!(
                    cell(fragment.column_by_name("num_fragments").unwrap(), i),
                    cell(column(&b, "fragment_count"), i)
                );
            }
        }
    }
    assert!(
        headers > 1000 && fragments > 30 && reassembled > 10,
        "{headers} {fragments} {reassembled}"
    );
    let mtu = read(&part("mtu"));
    let names: Vec<String> = mtu[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        [
            "finding", "frame", "src_ip", "src_port", "dst_ip", "dst_port", "ip_len", "value"
        ]
    );
    assert_eq!(cell(column(&mtu[0], "src_ip"), 0), "10.0.0.1");
    let _ = std::fs::remove_dir_all(&out);
}

/// A second of one client's traffic generated from fixture `fixture` as `NAME.pcap` in
/// a folder of its own, and exported: (the folder, the dataset).
fn generated_and_exported(fixture: &str, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("gpcap-export-{fixture}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let def = format!("{root}/tests/fixtures/{fixture}.kdl");
    let pcap = dir.join(format!("{name}.pcap"));
    let out = dir.join("out");
    let p = pcap.to_str().unwrap();
    gpcap_ok(&["gen", "-d", &def, "-o", p, "--clients", "1", "--duration", "1"]);
    gpcap_ok(&["export", "-d", &def, p, "-o", out.to_str().unwrap()]);
    (dir, out)
}

/// Regression: a field named alike in both branches of an if/else, an enum in one and a
/// plain int in the other, is one `state` column, and `state_name` named the plain
/// branch's values with the enum's names (top level), and, once groups found their
/// columns the top level's way, inside a struct too. The name is there exactly where
/// the enum's branch was read.
#[test]
fn export_names_only_the_enum_branch_s_values() {
    let (dir, out) = generated_and_exported("enum-branches", "b");
    let names = ["calm", "angry", "sad"];
    let (mut named, mut plain) = (0, 0);
    for b in read(&out.join("capture=b.pcap/type_p/part-0.parquet")) {
        let nested = column(&b, "nested").as_struct();
        let levels = [
            (column(&b, "named"), column(&b, "state"), column(&b, "state_name")),
            (
                nested.column_by_name("named").unwrap(),
                nested.column_by_name("state").unwrap(),
                nested.column_by_name("state_name").unwrap(),
            ),
        ];
        for (flag, state, name) in levels {
            for i in 0..b.num_rows() {
                let got = name_at(name, i);
                if cell(flag, i) == Value::Bool(true) {
                    let v = cell(state, i).as_i64().unwrap() as usize;
                    assert_eq!(got, Value::from(names[v]), "row {i}");
                    named += 1;
                } else {
                    assert_eq!(got, Value::Null, "row {i}: the plain branch has no name");
                    plain += 1;
                }
            }
        }
    }
    assert!(named > 20 && plain > 20, "{named} {plain}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three branches named `state` — a float, then two enums of one name set — are
/// `state` (the float), `state_2` and `state_3`, and one `state_name` beside them: the
/// third branch's value and name were both null (its name column read through the
/// second branch's, and its value column through the name column).
#[test]
fn export_names_each_enum_branch_from_its_own_value_column() {
    let (dir, out) = generated_and_exported("enum-three-branches", "t");
    let names = ["calm", "angry", "sad"];
    let mut seen = [0; 3];
    for b in read(&out.join("capture=t.pcap/type_p/part-0.parquet")) {
        let (which, name) = (column(&b, "which"), column(&b, "state_name"));
        for i in 0..b.num_rows() {
            let w = cell(which, i).as_i64().unwrap() as usize;
            seen[w] += 1;
            let value = |c: &str| cell(column(&b, c), i);
            match w {
                0 => {
                    assert!(value("state").is_number(), "row {i}");
                    assert_eq!(name_at(name, i), Value::Null, "row {i}");
                }
                _ => {
                    let (own, other) = if w == 1 {
                        ("state_2", "state_3")
                    } else {
                        ("state_3", "state_2")
                    };
                    let v = value(own)
                        .as_i64()
                        .unwrap_or_else(|| panic!("row {i}: {own} is null"));
                    assert_eq!(value(other), Value::Null, "row {i}");
                    assert_eq!(name_at(name, i), Value::from(names[v as usize]), "row {i}");
                }
            }
        }
    }
    assert!(seen.iter().all(|&n| n > 5), "{seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every message of a datagram is a row of its message type's table, in datagram order
/// (the type tables of ENet's commands were written empty): rows per type equal
/// `analyze`'s messages by type, and frame 117's five acknowledgements read back in order.
#[test]
fn export_writes_a_row_per_message() {
    let out = std::env::temp_dir().join(format!("gpcap-export-messages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    let capture = format!("{root}/tests/fixtures/enet/capture.pcap");
    let def = format!("{root}/dissectors/enet.kdl");
    gpcap_ok(&["export", "-d", &def, &capture, "-o", out.to_str().unwrap()]);
    let report: Value =
        serde_json::from_str(&gpcap_ok(&["analyze", "-d", &def, &capture, "--json"])).unwrap();
    let by_type = report["messages"]["by_type"].as_object().unwrap();
    assert_eq!(by_type.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), 6528);
    for (name, count) in by_type {
        let part = out
            .join("capture=capture.pcap")
            .join(format!("type_{name}"))
            .join("part-0.parquet");
        let rows: usize = read(&part).iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows as u64, count.as_u64().unwrap(), "{name}");
    }
    let part = out.join("capture=capture.pcap/type_acknowledge/part-0.parquet");
    let mut acked = Vec::new();
    for b in read(&part) {
        for i in 0..b.num_rows() {
            if cell(column(&b, "frame"), i) == 117 {
                acked.push(cell(column(&b, "received_reliable_sequence"), i));
            }
        }
    }
    assert_eq!(acked, [2, 3, 4, 5, 6]);
    std::fs::remove_dir_all(&out).unwrap();
}

/// The `messages` block's own fields (ENet's command header) are columns of every
/// message type's table, after the body's: every row's `acknowledge`, `command`,
/// `command_name`, `channel` and `reliable_sequence` equal what dissect reads in that
/// message, frame by frame in datagram order (they were not exported).
#[test]
fn export_writes_the_messages_block_s_own_fields() {
    let out = std::env::temp_dir().join(format!("gpcap-export-msghdr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    let capture = format!("{root}/tests/fixtures/enet/capture.pcap");
    let def = format!("{root}/dissectors/enet.kdl");
    gpcap_ok(&["export", "-d", &def, &capture, "-o", out.to_str().unwrap()]);
    const HEADER: [&str; 4] = ["acknowledge", "command", "channel", "reliable_sequence"];
    // By (command, frame): each message's header fields, in datagram order.
    let mut want: HashMap<(i64, u64), Vec<Vec<Value>>> = HashMap::new();
    for line in gpcap_ok(&["dissect", "-d", &def, &capture, "--jsonl"]).lines() {
        let d: Value = serde_json::from_str(line).unwrap();
        let frame = d["frame"].as_u64().unwrap();
        let fields = by_path(&d);
        for k in 0.. {
            let at = |f: &str| fields.get(format!("messages[{k}].{f}").as_str()).copied();
            let Some(command) = at("command") else { break };
            let values = HEADER.iter().map(|f| at(f).cloned().unwrap()).collect();
            want.entry((command.as_i64().unwrap(), frame))
                .or_default()
                .push(values);
        }
    }
    let mut got: HashMap<(i64, u64), Vec<Vec<Value>>> = HashMap::new();
    let mut rows = 0;
    for table in std::fs::read_dir(out.join("capture=capture.pcap")).unwrap() {
        let table = table.unwrap().path();
        let name = table.file_name().unwrap().to_string_lossy().into_owned();
        let Some(ty) = name.strip_prefix("type_") else {
            continue;
        };
        for b in read(&table.join("part-0.parquet")) {
            for i in 0..b.num_rows() {
                let values: Vec<Value> = HEADER.iter().map(|f| cell(column(&b, f), i)).collect();
                assert_eq!(name_at(column(&b, "command_name"), i), ty, "{name} row {i}");
                let key = (
                    values[1].as_i64().unwrap(),
                    cell(column(&b, "frame"), i).as_u64().unwrap(),
                );
                got.entry(key).or_default().push(values);
                rows += 1;
            }
        }
    }
    assert_eq!(rows, 6528);
    assert_eq!(got, want);
    std::fs::remove_dir_all(&out).unwrap();
}

/// Each column's encodings in the file (every row group's), by column path.
fn encodings(path: &Path) -> HashMap<String, Vec<parquet::basic::Encoding>> {
    use parquet::file::reader::FileReader;
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
    let mut out: HashMap<String, Vec<parquet::basic::Encoding>> = HashMap::new();
    for g in reader.metadata().row_groups() {
        for c in g.columns() {
            let e = out.entry(c.column_path().string()).or_default();
            e.extend(c.encodings());
        }
    }
    out
}

/// Dictionaries only where they pay: strings and numbers of few values (the header's
/// `type`, 6 values; B's items, 201) by dictionary; a 16-bit sequence, a 10-bit
/// quaternion part and ascending `ts` plain or by delta, never hashed.
#[test]
fn export_builds_dictionaries_only_where_they_pay() {
    use parquet::basic::Encoding;
    let out = std::env::temp_dir().join(format!("gpcap-export-enc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    gpcap_ok(&[
        "export",
        "-d",
        &format!("{root}/dissectors/article.kdl"),
        &format!("{root}/captures/article.pcap"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let part = |t: &str| out.join("capture=article.pcap").join(t).join("part-0.parquet");
    let (packets, scene, b) = (
        encodings(&part("packets")),
        encodings(&part("type_scene__objects")),
        encodings(&part("type_B__items")),
    );
    let dictionary = |t: &HashMap<String, Vec<Encoding>>, c: &str| {
        let e = t.get(c).unwrap_or_else(|| panic!("no column {c}"));
        e.contains(&Encoding::RLE_DICTIONARY) || e.contains(&Encoding::PLAIN_DICTIONARY)
    };
    assert!(packets["ts"].contains(&Encoding::DELTA_BINARY_PACKED));
    for c in ["ts", "ts_ns", "sequence", "header.sequence", "header.crc"] {
        assert!(!dictionary(&packets, c), "packets.{c}: {:?}", packets[c]);
    }
    assert!(dictionary(&packets, "status"));
    assert!(dictionary(&packets, "header.type"));
    assert!(dictionary(&b, "item"));
    assert!(!dictionary(&b, "frame"));
    let q = "orientation.x";
    assert!(!dictionary(&scene, q), "{:?}", scene[q]);
    assert!(scene[q].contains(&Encoding::BYTE_STREAM_SPLIT));
    // Statistics: every column of `packets`; a type's or a list's table only its keys.
    let stats = |t: &str| -> HashMap<String, bool> {
        use parquet::file::reader::FileReader;
        let file = std::fs::File::open(part(t)).unwrap();
        let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
        let g = reader.metadata().row_group(0);
        g.columns()
            .iter()
            .map(|c| (c.column_path().string(), c.statistics().is_some()))
            .collect()
    };
    let (p, o, s) = (
        stats("packets"),
        stats("type_scene__objects"),
        stats("type_scene"),
    );
    assert!(p["ts"] && p["src_ip"] && p["header.sequence"]);
    assert!(o["frame"] && o["row"] && o["index"], "{o:?}");
    assert!(!o["position.x"] && !o["list_index"] && !o["at_rest"], "{o:?}");
    assert!(s["frame"] && s["reassembled"] && !s["objects"], "{s:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Zero configuration exports the header as the reference layout reads it: the same
/// `header` and `fragment_header` columns, of the same types, as the article definition
/// gives (they were missing, so `header.sequence` named a table that did not exist and a
/// dataset of both held two schemas); the type is named by its number.
#[test]
fn zero_configuration_exports_the_same_header_columns() {
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = std::env::temp_dir().join(format!("gpcap-export-zero-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let capture = format!("{root}/captures/lossy-bursts.pcap");
    let (zero, with) = (dir.join("zero"), dir.join("with"));
    gpcap_ok(&["export", &capture, "-o", zero.to_str().unwrap()]);
    gpcap_ok(&[
        "export",
        &capture,
        "-d",
        &format!("{root}/dissectors/article.kdl"),
        "-o",
        with.to_str().unwrap(),
    ]);
    let part = |d: &Path| {
        d.join("capture=lossy-bursts.pcap")
            .join("packets")
            .join("part-0.parquet")
    };
    let (z, w) = (read(&part(&zero)), read(&part(&with)));
    for name in ["header", "fragment_header"] {
        let types = |b: &RecordBatch| {
            let DataType::Struct(fields) = b.schema().field_with_name(name).unwrap().data_type().clone()
            else {
                panic!("{name} is not a struct")
            };
            fields
                .iter()
                .map(|f| {
                    let t = match f.data_type() {
                        DataType::Dictionary(_, v) => (**v).clone(),
                        t => t.clone(),
                    };
                    (f.name().clone(), t)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(types(&z[0]), types(&w[0]), "{name}");
    }
    let (mut rows, mut read_back) = (0, 0);
    for b in &z {
        let seq = b.column_by_name("sequence").unwrap();
        let header = b.column_by_name("header").unwrap().as_struct();
        let hseq = header.column_by_name("sequence").unwrap();
        let row = b.column_by_name("row").unwrap();
        for i in 0..b.num_rows() {
            if cell(row, i) != "datagram" {
                continue;
            }
            rows += 1;
            if !header.is_null(i) {
                read_back += 1;
                assert_eq!(cell(hseq, i), cell(seq, i), "row {i}");
            }
        }
    }
    assert_eq!((rows, read_back), (2185, 2185));
    let _ = std::fs::remove_dir_all(&dir);
}
