//! Export against hostile definitions, partitions and disks: column names that collide,
//! renamed packet types, a failure midway, names no file system holds.
#![cfg(feature = "export")]

mod common;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::{Path, PathBuf};
use std::process::Command;

fn gpcap(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-export-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(d: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Regression (row 04): a packet field named `frame` and fields `a` and `A` gave two
/// `frame` columns (pyarrow refused the file; DuckDB returned the key for both) and two
/// columns one to DuckDB. Field columns never collide with keys or with each other
/// ignoring case: the later one is suffixed.
#[test]
fn field_columns_never_collide_with_keys_or_each_other() {
    let dir = temp_dir("collide");
    let def = dir.join("frame.kdl");
    std::fs::write(
        &def,
        "protocol \"f\" {\n    checksum \"none\"\n    ports 40000\n}\nheader {\n    bits type 4 role=type\n    bits sequence 12 role=sequence\n}\npacket 1 \"input\" {\n    bits frame 16\n    bits a 8\n    bits A 8\n    bits capture 8\n    bits day 8\n}\n",
    )
    .unwrap();
    let pcap = dir.join("f.pcap");
    common::udp_capture(
        &pcap,
        (0..5u16).map(|k| {
            let mut p = (1 | k << 4).to_le_bytes().to_vec();
            p.extend_from_slice(&(1000 + k).to_le_bytes());
            p.extend_from_slice(&[1, 2, 3, 4]);
            (
                "10.0.0.1:50000".parse().unwrap(),
                "10.0.0.2:40000".parse().unwrap(),
                p,
            )
        }),
    );
    let ds = dir.join("ds");
    let (code, err) = gpcap(&[
        "export",
        "-d",
        s(&def),
        s(&pcap),
        "-o",
        s(&ds),
        "--partition",
        "day=1",
    ]);
    assert_eq!(code, 0, "{err}");
    let part = ds.join("day=1/capture=f.pcap/type_input/part-0.parquet");
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&part).unwrap()).unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        [
            "frame",
            "row",
            "reassembled",
            "frame_2",
            "a",
            "A_2",
            "capture_2",
            "day_2"
        ]
    );
    let batch = reader.build().unwrap().next().unwrap().unwrap();
    let game_frame = batch.column_by_name("frame_2").unwrap();
    let v = arrow_array::cast::as_primitive_array::<arrow_array::types::UInt16Type>(game_frame);
    assert_eq!(v.value(0), 1000);
    let _ = std::fs::remove_dir_all(dir);
}

/// Regression (row 05): after renaming a packet type, exporting the same capture again
/// left the old type's partition beside the new one.
#[test]
fn a_capture_exported_again_replaces_its_partition_in_every_table() {
    let dir = temp_dir("stale");
    let renamed = dir.join("renamed.kdl");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl"))
        .unwrap();
    std::fs::write(&renamed, text.replace("\"scene\"", "\"world\"")).unwrap();
    let ds = dir.join("ds");
    let (code, err) = gpcap(&[
        "export",
        "-d",
        "dissectors/article.kdl",
        "captures/article.pcap",
        "-o",
        s(&ds),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(ds.join("capture=article.pcap/type_scene/part-0.parquet").exists());
    let (code, err) = gpcap(&["export", "-d", s(&renamed), "captures/article.pcap", "-o", s(&ds)]);
    assert_eq!(code, 0, "{err}");
    let all = files(&ds);
    assert!(!all.iter().any(|f| f.contains("/type_scene/")), "{all:?}");
    assert!(
        all.iter()
            .any(|f| f.starts_with("capture=article.pcap/type_world/")),
        "{all:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Regression (row 06): an export that failed midway (a full disk) left the tables
/// finished before the failure under their final names, looking complete, and `.tmp`
/// files for the others. Now nothing is committed unless everything is written, and
/// the staging directory is removed. The failure here is the kernel's: files may grow
/// to 8 KiB only (`RLIMIT_FSIZE`, its signal ignored, so a write fails with EFBIG), so
/// the small tables are written and the packets table is not.
#[cfg(target_os = "linux")]
#[test]
fn an_unfinished_export_leaves_nothing_that_looks_complete() {
    use std::os::unix::process::CommandExt;
    let dir = temp_dir("unfinished");
    let ds = dir.join("ds");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpcap"));
    cmd.args([
        "export",
        "-d",
        "dissectors/article.kdl",
        "captures/article.pcap",
        "-o",
    ])
    .arg(&ds)
    .current_dir(env!("CARGO_MANIFEST_DIR"));
    // SAFETY: between fork and exec the closure calls only async-signal-safe functions
    // (signal, setrlimit) and touches no memory of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 8 << 10,
                rlim_max: 8 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("packets"), "{err}");
    assert_eq!(files(&ds), Vec::<String>::new(), "{err}");
    let hidden: Vec<_> = std::fs::read_dir(&ds)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(hidden.is_empty(), "{hidden:?} {err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Regression (row 19): `k=..` (read back as `_..`), `k=__HIVE_DEFAULT_PARTITION__`
/// (read back as NULL), `day=1 --partition day=2`, a 300-character value and a
/// 5,000-character packet type name ("File name too long", `.tmp` files left) were
/// accepted. Each is refused before anything is written, naming the value.
#[test]
fn partitions_and_names_the_dataset_cannot_hold_are_refused_before_writing() {
    let dir = temp_dir("names");
    let long = "v".repeat(300);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["k=..".into()], "`..`"),
        (
            vec!["k=__HIVE_DEFAULT_PARTITION__".into()],
            "__HIVE_DEFAULT_PARTITION__",
        ),
        (vec!["day=1".into(), "day=2".into()], "given twice"),
        (vec![format!("k={long}")], "over 255"),
        (vec!["status=x".into()], "is a column"),
    ];
    for (parts, says) in cases {
        let ds = dir.join("ds");
        let mut args = vec![
            "export",
            "-d",
            "dissectors/article.kdl",
            "captures/article.pcap",
            "-o",
            s(&ds),
        ];
        for p in &parts {
            args.extend(["--partition", p]);
        }
        let (code, err) = gpcap(&args);
        assert_eq!(code, 2, "{parts:?}: {err}");
        assert!(err.contains(says), "{parts:?}: {err}");
        assert_eq!(files(&ds), Vec::<String>::new(), "{parts:?}");
    }
    let def = dir.join("long.kdl");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("dissectors/article.kdl"))
        .unwrap();
    std::fs::write(
        &def,
        text.replace("\"scene\"", &format!("\"{}\"", "s".repeat(5000))),
    )
    .unwrap();
    let ds = dir.join("ds2");
    let (code, err) = gpcap(&["export", "-d", s(&def), "captures/article.pcap", "-o", s(&ds)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("packet type 4") && err.contains("shorten its name"),
        "{err}"
    );
    assert_eq!(files(&ds), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(dir);
}

/// Regression (row 07): each column searched the packet's fields, so a type of 5,000
/// fields took 25 s and 272 MB for 900 rows. Now a row is placed in one pass; this checks
/// a wide type's first and last columns hold their values.
#[test]
fn a_wide_packet_type_exports_every_column() {
    let dir = temp_dir("wide");
    let def = dir.join("wide.kdl");
    // 2 bits each: a packet fits one Ethernet frame.
    let body: String = (0..5000).map(|i| format!("    bits f{i} 2\n")).collect();
    std::fs::write(
        &def,
        format!("protocol \"w\" {{\n    checksum \"none\"\n    ports 40000\n    mtu-budget 60000\n}}\nheader {{\n    bits type 4 role=type\n    bits sequence 12 role=sequence\n}}\npacket 1 \"wide\" {{\n{body}}}\n"),
    )
    .unwrap();
    let pcap = dir.join("w.pcap");
    common::udp_capture(
        &pcap,
        (0..100u16).map(|k| {
            let mut p = (1 | k << 4).to_le_bytes().to_vec();
            p.extend(std::iter::repeat_n(k as u8 | 0xc0, 1250));
            (
                "10.0.0.1:50000".parse().unwrap(),
                "10.0.0.2:40000".parse().unwrap(),
                p,
            )
        }),
    );
    let ds = dir.join("ds");
    let (code, err) = gpcap(&["export", "-d", s(&def), s(&pcap), "-o", s(&ds)]);
    assert_eq!(code, 0, "{err}");
    let part = ds.join("capture=w.pcap/type_wide/part-0.parquet");
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&part).unwrap()).unwrap();
    let batch = reader.build().unwrap().next().unwrap().unwrap();
    assert_eq!(batch.num_columns(), 5003);
    let col = |name: &str| {
        arrow_array::cast::as_primitive_array::<arrow_array::types::UInt8Type>(
            batch.column_by_name(name).unwrap(),
        )
        .value(7)
    };
    // Row 7: every byte 0xc7, so f0 = 3, f1 = 1, f2 = 0 and f4999 (the top two bits) 3.
    assert_eq!((col("f0"), col("f1"), col("f2"), col("f4999")), (3, 1, 0, 3));
    let _ = std::fs::remove_dir_all(dir);
}

/// An export interrupted (SIGINT) while writing a capture: that capture's partition is
/// left as it was (no file of it, complete-looking or temporary), the captures exported
/// before it stay, and the message names both; exit status 130.
#[cfg(unix)]
#[test]
fn an_interrupted_export_says_so_and_leaves_nothing_that_looks_complete() {
    let dir = temp_dir("interrupted");
    let big = dir.join("big.pcap");
    let (code, err) = gpcap(&[
        "gen",
        "-d",
        "dissectors/article.kdl",
        "-o",
        s(&big),
        "--clients",
        "64",
        "--duration",
        "20",
        "--summary-only",
    ]);
    assert_eq!(code, 0, "{err}");
    let ds = dir.join("ds");
    let child = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["export", "-d", "dissectors/article.kdl", "captures/article.pcap"])
        .arg(&big)
        .arg("-o")
        .arg(&ds)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the big capture's packets are being written, interrupt.
    let writing = ds.join(format!(
        ".capture=big.pcap.staging-{}/packets/.part-0.parquet.tmp",
        child.id()
    ));
    let t0 = std::time::Instant::now();
    while !writing.exists() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(writing.exists(), "the export never began writing big.pcap");
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted: big.pcap was not exported"), "{err}");
    assert!(err.contains("complete: article.pcap"), "{err}");
    let left = files(&ds);
    assert!(left.iter().all(|f| !f.contains("big.pcap")), "{left:?}");
    assert!(
        left.iter()
            .any(|f| f.starts_with("capture=article.pcap/packets/part-0")),
        "{left:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

const HEADER: &str = "protocol \"n\" {\n    checksum \"none\"\n    ports 40000\n}\nheader {\n    bits type 4 role=type\n    bits sequence 12 role=sequence\n}\n";

/// A capture of `n` datagrams of packet type 1 and `len` pseudo-random body bytes each.
fn random_capture(path: &Path, n: u16, len: usize) {
    let mut x = 0x9e37_79b9u32;
    common::udp_capture(
        path,
        (0..n).map(|k| {
            let mut p = (1 | k << 4).to_le_bytes().to_vec();
            p.extend((0..len).map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            }));
            (
                "10.0.0.1:50000".parse().unwrap(),
                "10.0.0.2:40000".parse().unwrap(),
                p,
            )
        }),
    );
}

/// Every row of a table's files as JSON objects by column name.
fn rows_of(dir: &Path) -> Vec<serde_json::Map<String, serde_json::Value>> {
    use arrow_array::Array;
    let mut out = Vec::new();
    for f in files(dir) {
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(dir.join(f)).unwrap()).unwrap();
        for b in r.build().unwrap() {
            let b = b.unwrap();
            for i in 0..b.num_rows() {
                let mut row = serde_json::Map::new();
                for (c, field) in b.schema().fields().iter().enumerate() {
                    use arrow_array::cast::AsArray;
                    use arrow_array::types::*;
                    let col = b.column(c);
                    let v: serde_json::Value = if col.is_null(i) {
                        serde_json::Value::Null
                    } else {
                        match col.data_type() {
                            arrow_schema::DataType::UInt8 => col.as_primitive::<UInt8Type>().value(i).into(),
                            arrow_schema::DataType::UInt16 => {
                                col.as_primitive::<UInt16Type>().value(i).into()
                            }
                            arrow_schema::DataType::UInt32 => {
                                col.as_primitive::<UInt32Type>().value(i).into()
                            }
                            arrow_schema::DataType::UInt64 => {
                                col.as_primitive::<UInt64Type>().value(i).into()
                            }
                            _ => serde_json::Value::Null,
                        }
                    };
                    row.insert(field.name().clone(), v);
                }
                out.push(row);
            }
        }
    }
    out
}

/// Lists inside lists: the inner list's elements are a grandchild table keyed by the
/// parent row, the outer element's place (`rows_index`) and their own (`index`), one row
/// per element dissect shows, each value as dissect shows it at `rows[i].cells[j].v`.
#[test]
fn lists_in_lists_become_grandchild_tables() {
    let dir = temp_dir("nested");
    let def = dir.join("n.kdl");
    std::fs::write(
        &def,
        format!(
            "{HEADER}packet 1 \"grid\" {{\n    bits n 3\n    array rows n {{\n        bits m 3\n        array cells m {{\n            bits v 4\n        }}\n    }}\n}}\n"
        ),
    )
    .unwrap();
    let pcap = dir.join("n.pcap");
    random_capture(&pcap, 40, 32);
    let ds = dir.join("ds");
    let (code, err) = gpcap(&["export", "-d", s(&def), s(&pcap), "-o", s(&ds)]);
    assert_eq!(code, 0, "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["dissect", "-d", s(&def), s(&pcap), "--jsonl"])
        .output()
        .unwrap();
    let mut want = std::collections::BTreeMap::new();
    let mut outer = 0;
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let d: serde_json::Value = serde_json::from_str(l).unwrap();
        fn walk(
            f: &serde_json::Value,
            frame: u64,
            want: &mut std::collections::BTreeMap<(u64, u64, u64), u64>,
            outer: &mut u32,
        ) {
            for f in f.as_array().into_iter().flatten() {
                let path = f["path"].as_str().unwrap();
                if let Some((i, j)) = path
                    .strip_prefix("rows[")
                    .and_then(|p| p.strip_suffix("].v"))
                    .and_then(|p| p.split_once("].cells["))
                {
                    want.insert(
                        (frame, i.parse().unwrap(), j.parse().unwrap()),
                        f["value"].as_u64().unwrap(),
                    );
                } else if path.starts_with("rows[") && !path.contains('.') {
                    *outer += 1;
                }
                walk(&f["fields"], frame, want, outer);
            }
        }
        walk(&d["fields"], d["frame"].as_u64().unwrap(), &mut want, &mut outer);
    }
    let base = ds.join("capture=n.pcap");
    let rows = rows_of(&base.join("type_grid__rows"));
    assert_eq!(rows.len(), outer as usize);
    let cells = rows_of(&base.join("type_grid__rows__cells"));
    let keys: Vec<&String> = cells[0].keys().collect();
    assert_eq!(keys, ["frame", "index", "row", "rows_index", "v"]);
    let got: std::collections::BTreeMap<(u64, u64, u64), u64> = cells
        .iter()
        .map(|r| {
            let k = |n: &str| r[n].as_u64().unwrap();
            ((k("frame"), k("rows_index"), k("index")), k("v"))
        })
        .collect();
    assert!(want.len() > 50, "{} cells", want.len());
    assert_eq!(got, want);
    // Each outer element's length is the number of its cells.
    for r in &rows {
        let (frame, i, m) = (
            r["frame"].as_u64().unwrap(),
            r["index"].as_u64().unwrap(),
            r["cells"].as_u64().unwrap(),
        );
        assert_eq!(want.range((frame, i, 0)..(frame, i + 1, 0)).count() as u64, m);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A definition of more lists than an export writes tables for, or of lists nested
/// deeper than it lays out, is refused before anything is written, naming the line.
#[test]
fn too_many_or_too_deep_lists_are_refused_with_their_line() {
    let dir = temp_dir("lists");
    let pcap = dir.join("l.pcap");
    random_capture(&pcap, 3, 8);
    let many: String = (0..70)
        .map(|k| format!("    array l{k} 1 {{\n        bits v 1\n    }}\n"))
        .collect();
    let deep = (0..20).fold("bits v 1\n".to_string(), |inner, k| {
        format!("array d{k} 1 {{\n{inner}}}\n")
    });
    for (name, body, says) in [
        (
            "many",
            many,
            "line 202: this list would be child table 65, over the 64",
        ),
        ("deep", deep, "line 26: fields nested more than 16 deep"),
    ] {
        let def = dir.join(format!("{name}.kdl"));
        std::fs::write(&def, format!("{HEADER}packet 1 \"p\" {{\n{body}}}\n")).unwrap();
        let ds = dir.join(name);
        let (code, err) = gpcap(&["export", "-d", s(&def), s(&pcap), "-o", s(&ds)]);
        assert_ne!(code, 0, "{name}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(files(&ds).is_empty(), "{name}: {:?}", files(&ds));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Regressions (found in review): a list shared its column with a same-named `bits` in
/// the other branch of an `if` (its child table was not written: 2,658 elements lost); a
/// type named like a list's table (`B__items` beside `B`'s list `items`) made two tables
/// of one name; `--partition index=…` hid the child tables' `index` key.
#[test]
fn lists_share_nothing_and_their_tables_and_keys_keep_their_names() {
    let dir = temp_dir("list-names");
    let root = env!("CARGO_MANIFEST_DIR");
    let clean = format!("{root}/captures/clean.pcap");
    let merge = dir.join("merge");
    let (code, err) = gpcap(&[
        "export",
        "-d",
        "tests/fixtures/export-merge.kdl",
        &clean,
        "-o",
        s(&merge),
    ]);
    assert_eq!(code, 0, "{err}");
    let base = merge.join("capture=clean.pcap");
    let b = rows_of(&base.join("type_B"));
    let items = rows_of(&base.join("type_B__items_2"));
    let big = b.iter().filter(|r| !r["items"].is_null()).count();
    let lengths: u64 = b.iter().filter_map(|r| r["items_2"].as_u64()).sum();
    assert!(big > 0, "the bits field keeps its column");
    assert_eq!(lengths, items.len() as u64, "the list's elements are all written");
    assert!(items.len() > 1000, "{} elements", items.len());
    let dup = dir.join("dup");
    let (code, err) = gpcap(&[
        "export",
        "-d",
        "tests/fixtures/export-type-like-list.kdl",
        &clean,
        "-o",
        s(&dup),
    ]);
    assert_eq!(code, 0, "{err}");
    let base = dup.join("capture=clean.pcap");
    assert!(
        rows_of(&base.join("type_B__items"))[0].contains_key("reassembled"),
        "the type keeps its name"
    );
    assert!(
        rows_of(&base.join("type_B__items_2"))[0].contains_key("index"),
        "the list is suffixed"
    );
    let (code, err) = gpcap(&[
        "export",
        "-d",
        "dissectors/article.kdl",
        &clean,
        "-o",
        s(&dir.join("p")),
        "--partition",
        "objects_index=1",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("`objects_index` is a column"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
