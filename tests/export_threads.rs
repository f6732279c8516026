//! `export` on several cores writes the rows one core writes: every table of every
//! bundled capture, and of generated captures with loss, reordering, duplicates,
//! corruption, malformed bodies and fragments, read back and compared row for row.
#![cfg(feature = "export")]

mod common;

use arrow_array::RecordBatch;
use common::BUNDLED;
use gpcap::Config;
use gpcap::run::run_files;
use gpcap::sinks::export::Export;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every table of a dataset, each as one batch (row groups fall where the writer's
/// memory said: they may differ between runs, the rows may not).
fn tables(dir: &Path) -> BTreeMap<String, RecordBatch> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                let file = std::fs::File::open(&path).unwrap();
                let b = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
                let rows = b.metadata().file_metadata().num_rows().max(1) as usize;
                let batches: Vec<RecordBatch> = b
                    .with_batch_size(rows)
                    .build()
                    .unwrap()
                    .map(|b| b.unwrap())
                    .collect();
                assert!(batches.len() <= 1, "{}: one batch expected", path.display());
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                if let Some(batch) = batches.into_iter().next() {
                    out.insert(name, batch);
                }
            }
        }
    }
    out
}

/// Exports `capture` with `threads` threads into `dir`; the rows per table it reports.
fn export(capture: &Path, def: &str, threads: usize, dir: &Path) -> BTreeMap<String, u64> {
    let program = gpcap::load_definition(Path::new("dissectors").join(def)).unwrap();
    let cfg = Config::from_program(program);
    let mut sink = Export::new(dir, &[], "c.pcap", cfg.clone())
        .unwrap()
        .threads(threads);
    assert_eq!(
        sink.records(),
        threads == 1,
        "{}: rows on workers",
        capture.display()
    );
    run_files(&[capture.to_path_buf()], cfg, &mut sink, &mut |_, _| {}).unwrap();
    sink.close().unwrap().rows
}

fn same_on_one_core_and_several(capture: &Path, def: &str) {
    let tmp = tempfile_dir(capture);
    let one = export(capture, def, 1, &tmp.join("one"));
    let many = export(capture, def, 3, &tmp.join("many"));
    assert_eq!(one, many, "{}: rows per table", capture.display());
    let (a, b) = (tables(&tmp.join("one")), tables(&tmp.join("many")));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, rows) in &a {
        assert!(rows == &b[name], "{}: table {name} differs", capture.display());
    }
    assert!(
        a.keys().any(|k| k.contains("/type_")),
        "{}: no type table",
        capture.display()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

fn tempfile_dir(capture: &Path) -> PathBuf {
    let name = capture.file_name().unwrap().to_string_lossy();
    let dir = std::env::temp_dir().join(format!("gpcap-export-threads-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_bundled_capture_exports_the_same_rows_on_several_cores() {
    for (capture, def) in BUNDLED {
        same_on_one_core_and_several(&Path::new("captures").join(capture), def);
    }
}

/// Generated traffic over several seeds: every kind of damage the simulator makes, and
/// packets of many fragments (a reassembled packet's rows read the tree of the fragment
/// that completed it, in the same batch).
#[test]
fn generated_captures_export_the_same_rows_on_several_cores() {
    let dir = std::env::temp_dir().join(format!("gpcap-export-threads-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for seed in 1..=3 {
        let pcap = dir.join(format!("gen-{seed}.pcap"));
        let seed = seed.to_string();
        common::gpcap_ok(&[
            "gen",
            "-d",
            "dissectors/article.kdl",
            "-o",
            pcap.to_str().unwrap(),
            "--seed",
            &seed,
            "--duration",
            "3",
            "--clients",
            "8",
            "--loss",
            "0.05",
            "--reorder",
            "0.05",
            "--dup",
            "0.02",
            "--corrupt",
            "0.02",
            "--malformed",
            "0.05",
            "--big",
            "0.2",
            "--summary-only",
        ]);
        same_on_one_core_and_several(&pcap, "article.kdl");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An export on several cores dropped midway (an interrupt, an error elsewhere) leaves
/// nothing behind: no table, no temporary file, though its workers had rows queued.
#[test]
fn an_export_dropped_midway_on_several_cores_leaves_nothing() {
    let dir = std::env::temp_dir().join(format!("gpcap-export-threads-drop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let program = gpcap::load_definition("dissectors/article.kdl").unwrap();
    let cfg = Config::from_program(program);
    let mut sink = Export::new(&dir, &[], "c.pcap", cfg.clone()).unwrap().threads(3);
    let seen = std::cell::Cell::new(0u64);
    struct Counting<'a>(&'a mut Export, &'a std::cell::Cell<u64>);
    impl gpcap::Sink for Counting<'_> {
        fn needs(&self) -> gpcap::Needs {
            self.0.needs()
        }
        fn packet(&mut self, e: &gpcap::PacketEvent<'_>) -> Result<gpcap::Flow, gpcap::SinkError> {
            self.1.set(self.1.get() + 1);
            let flow = self.0.packet(e)?;
            Ok(flow.and(gpcap::Flow::stop_if(self.1.get() >= 2200)))
        }
    }
    run_files(
        &[PathBuf::from("captures/lossy-bursts.pcap")],
        cfg,
        &mut Counting(&mut sink, &seen),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(seen.get() >= 2200, "{} packets", seen.get());
    drop(sink);
    let mut left = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                left.push(path);
            }
        }
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
