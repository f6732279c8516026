//! The `constructs`, `export` and `messages` fuzz targets' properties as a
//! proptest-driven run, for machines without a nightly toolchain: definitions built from
//! the language's constructs compile fast or are refused, dissect without a panic, and
//! export to Parquet that reads back with distinct column names; messages, declared
//! checksums and netcode decryption with hostile tokens and ciphertexts are analyzed
//! and their trees rendered without a panic. `GPCAP_FUZZ_SECONDS` sets how
//! long each runs (default 3); `GPCAP_FUZZ_SECONDS=900 cargo test --release --test
//! fuzz_long -- --nocapture` is the long run, printing how many inputs it tried.

mod common;
#[path = "../fuzz/fuzz_targets/gen_def.rs"]
#[allow(dead_code)]
mod gen_def;

#[path = "../fuzz/fuzz_targets/gen_msgs.rs"]
mod gen_msgs;

#[path = "../fuzz/fuzz_targets/gen_keys.rs"]
mod gen_keys;

#[path = "../fuzz/fuzz_targets/native_diff.rs"]
mod native_diff;

use gen_def::{Choices, definition};
use std::time::{Duration, Instant};

fn seconds() -> Duration {
    Duration::from_secs(
        std::env::var("GPCAP_FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3),
    )
}

/// Inputs tried past the time at most, waiting for hits.
const MAX_INPUTS: u64 = 5_000;

/// Random inputs (proptest's byte vectors) until the time is up; how many.
fn run(name: &str, mut one: impl FnMut(&[u8])) -> u64 {
    run_until(name, 0, |input| {
        one(input);
        false
    })
}

/// Random inputs until the time is up and `hits` of them made `one` say true (at most
/// [`MAX_INPUTS`] past the time): how many. The inputs are the same on every machine,
/// so a slow or busy one still reaches the first hits (the native target's first
/// definition that compiles is its 232nd input, which a loaded machine did not reach
/// in 3 s).
fn run_until(name: &str, hits: u64, mut one: impl FnMut(&[u8]) -> bool) -> u64 {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    let strategy = proptest::collection::vec(proptest::num::u8::ANY, 0..512);
    let mut runner = TestRunner::deterministic();
    let until = Instant::now() + seconds();
    let (mut n, mut hit) = (0u64, 0u64);
    while Instant::now() < until || (hit < hits && n < MAX_INPUTS) {
        let input = strategy.new_tree(&mut runner).unwrap().current();
        hit += u64::from(one(&input));
        n += 1;
    }
    // Written straight to stderr, so a run with --nocapture or not shows the count.
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{name}: {n} inputs in {:?}", seconds());
    n
}

#[test]
fn definitions_from_constructs_compile_fast_or_are_refused() {
    let n = run("constructs", |data| {
        let mut c = Choices(data);
        let text = definition(&mut c);
        let t = Instant::now();
        match gpcap::dissect::compile("fuzz.kdl", &text) {
            Ok(p) => {
                let p = std::sync::Arc::new(p);
                let _ = gpcap::dissect::catalog(&p);
                let mut d = gpcap::dissect::Dissector::new(p.clone());
                let out = d.dissect(c.0);
                let _ = gpcap::present::tree::text_tree(&p, &out, c.0);
            }
            Err(e) => {
                let _ = gpcap::dissect::render(&e, false);
            }
        }
        assert!(t.elapsed() < Duration::from_secs(10), "slow:\n{text}");
    });
    assert!(n > 0);
}

/// The compiled reader against the plan executor on random definitions and datagrams:
/// the same verdicts, faults and slots (and some definitions had code to compare).
#[test]
fn compiled_code_decides_as_the_interpreter() {
    let mut compiled = 0u64;
    let n = run_until("native", 4, |data| {
        let yes = native_diff::run(data);
        compiled += u64::from(yes);
        yes
    });
    assert!(n > 0 && compiled > 0, "{compiled} of {n} had compiled blocks");
}

#[test]
fn messages_checksums_and_decryption_never_panic() {
    assert!(run("messages", gen_msgs::run) > 0);
}

#[test]
fn key_logs_decrypt_connection_by_connection() {
    assert!(run("keys", gen_keys::run) > 0);
}

#[cfg(feature = "export")]
#[test]
fn exports_of_random_definitions_read_back_with_distinct_columns() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::sync::Arc;
    fn names(fields: &arrow_schema::Fields) {
        let mut seen = std::collections::HashSet::new();
        for f in fields {
            assert!(seen.insert(f.name().to_lowercase()), "duplicate {}", f.name());
            if let arrow_schema::DataType::Struct(inner) = f.data_type() {
                names(inner);
            }
            if let arrow_schema::DataType::List(item) = f.data_type()
                && let arrow_schema::DataType::Struct(inner) = item.data_type()
            {
                names(inner);
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("gpcap-fuzz-long-{}", std::process::id()));
    let n = run("export", |data| {
        let mut c = Choices(data);
        let text = definition(&mut c);
        let Ok(p) = gpcap::dissect::compile("fuzz.kdl", &text) else {
            return;
        };
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pcap = dir.join("c.pcap");
        let mut rest = c.0;
        let mut datagrams = Vec::new();
        while !rest.is_empty() && datagrams.len() < 32 {
            let n = (rest[0] as usize % 48 + 1).min(rest.len());
            let (d, r) = rest.split_at(n);
            rest = r;
            datagrams.push((
                "10.0.0.1:50000".parse().unwrap(),
                "10.0.0.2:40000".parse().unwrap(),
                d.to_vec(),
            ));
        }
        common::udp_capture(&pcap, datagrams);
        let cfg = gpcap::Config::from_program(Arc::new(p));
        let ds = dir.join("ds");
        let keys = vec![("day".to_string(), "1".to_string())];
        let Ok(mut sink) = gpcap::sinks::export::Export::new(&ds, &keys, "c.pcap", cfg.clone()) else {
            return;
        };
        let ran = gpcap::run::run_files(&[pcap], cfg, &mut sink, &mut |_, _| {});
        assert!(ran.is_ok() && sink.close().is_ok(), "{text}");
        let mut stack = vec![ds];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let reader =
                    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&p).unwrap()).unwrap();
                names(reader.schema().fields());
                for b in reader.build().unwrap() {
                    b.unwrap();
                }
            }
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert!(n > 0);
}
