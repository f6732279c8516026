//! `analyze --bits`: the rows add up to the captured bits on every capture, and the
//! estimates equal what the values written say.

mod common;

use gpcap::analysis::Config;
use gpcap::bits::BitWriter;
use gpcap::dissect;
use gpcap::run::bandwidth as run;
use gpcap::sinks::bandwidth::{BandwidthReport, Options, Row};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn config(def: &Path) -> Config {
    Config::from_program(Arc::new(dissect::load(def).unwrap()))
}

fn profile(paths: &[PathBuf], cfg: Config, opts: Options) -> BandwidthReport {
    let r = run::analyze_files(paths, cfg, opts, &mut |_, _| {}).unwrap();
    r.bandwidth.unwrap()
}

fn find<'a>(b: &'a BandwidthReport, ty: &str, path: &str) -> &'a Row {
    b.rows
        .iter()
        .find(|r| r.packet_type.as_deref() == Some(ty) && r.path == path)
        .unwrap_or_else(|| panic!("no row {ty} {path}"))
}

#[test]
fn rows_add_up_to_the_wire_on_every_bundled_capture() {
    for (capture, def) in common::BUNDLED {
        let cfg = config(&root().join("dissectors").join(def));
        let paths = vec![root().join("captures").join(capture)];
        let r = run::analyze_files(&paths, cfg, Options::default(), &mut |_, _| {}).unwrap();
        let b = r.bandwidth.as_ref().unwrap();
        assert_eq!(b.captured_bits, r.capture.bytes * 8, "{capture}");
        assert_eq!(
            b.rows.iter().map(|r| r.bits).sum::<u64>(),
            b.captured_bits,
            "{capture}"
        );
        assert!(b.rows.iter().all(|r| r.bits > 0), "{capture}");
        // A datagram cut inside its end check keeps the fields read before the fault.
        if capture == "malformed.pcap" {
            let rest: u64 = b
                .rows
                .iter()
                .filter(|r| r.category == "malformed_remainder")
                .map(|r| r.bits)
                .sum();
            assert!(rest > 0 && rest.is_multiple_of(8), "{rest}");
        }
    }
}

/// ENet's messages put back from fragments inside messages are bytes already counted in
/// their fragments' fields: they add nothing (they were counted twice, 17,862,104 bits
/// of rows for 13,208,072 captured).
#[test]
fn messages_from_fragments_inside_messages_are_not_counted_twice() {
    let cfg = config(&root().join("dissectors/enet.kdl"));
    let paths = vec![root().join("tests/fixtures/enet/capture.pcap")];
    let r = run::analyze_files(&paths, cfg, Options::default(), &mut |_, _| {}).unwrap();
    let b = r.bandwidth.unwrap();
    assert_eq!(b.captured_bits, r.capture.bytes * 8);
    assert_eq!(b.rows.iter().map(|r| r.bits).sum::<u64>(), b.captured_bits);
}

#[test]
fn a_what_if_path_the_definition_lacks_is_refused_with_the_nearest() {
    let (code, _, err) = common::gpcap_run(&[
        "analyze",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--bits",
        "--what-if",
        "objects.position.xx=0.01",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean objects.position.x?"), "{err}");
    let (code, _, err) = common::gpcap_run(&[
        "analyze",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--bits",
        "--what-if",
        "sequence=0.5",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a float field"), "{err}");
}

/// A float read at a resolution the user names: the bits its observed range needs there.
#[test]
fn a_what_if_resolution_quantizes_the_floats_seen() {
    let out = common::gpcap_ok(&[
        "analyze",
        root().join("captures/clean.pcap").to_str().unwrap(),
        "-d",
        root().join("dissectors/article.kdl").to_str().unwrap(),
        "--bits",
        "--json",
        "--what-if",
        "C.position.x=0.5",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = v["bandwidth"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["packet_type"] == "C" && r["path"] == "position.x")
        .unwrap();
    let e = &row["estimate"];
    let (min, max) = (e["min"].as_f64().unwrap(), e["max"].as_f64().unwrap());
    let steps = (max / 0.5).round() - (min / 0.5).round();
    assert_eq!(e["resolution"], 0.5);
    assert_eq!(e["resolution_source"], "what-if");
    assert_eq!(
        e["range_bits"].as_u64().unwrap(),
        64 - (steps as u64).leading_zeros() as u64
    );
}

/// The values the fixture's packet `k` of a flow carries.
fn values(flow: u32, k: u32) -> (u32, u32, bool, u32) {
    let start = if flow == 0 { 1000 } else { 30000 };
    // +1 three packets in four, -1 the fourth: two steps forward per four packets.
    let x = start + k / 4 * 2 + [0, 1, 2, 3][(k % 4) as usize] - if k % 4 == 3 { 2 } else { 0 };
    (7, k % 64, true, x)
}

fn datagram(k: u32, (version, quarter, alive, x): (u32, u32, bool, u32)) -> Vec<u8> {
    let mut w = BitWriter::new();
    w.write_bits(k, 16).unwrap();
    w.write_bits(1, 1).unwrap();
    w.write_bits(version, 8).unwrap();
    w.write_bits(quarter, 8).unwrap();
    w.write_bits(alive as u32, 1).unwrap();
    w.write_bits(x, 16).unwrap();
    w.write_align().unwrap();
    w.finish()
}

const PER_FLOW: u32 = 256;

fn client(flow: u32) -> SocketAddr {
    format!("10.0.0.{}:5000{flow}", flow + 1).parse().unwrap()
}

/// The fixture's capture of the given flows, interleaved.
fn fixture(name: &str, flows: &[u32]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("gpcap-bits-{name}-{}.pcap", std::process::id()));
    let server: SocketAddr = "10.0.1.1:42000".parse().unwrap();
    let datagrams = (0..PER_FLOW).flat_map(|k| {
        flows
            .iter()
            .map(move |&f| (client(f), server, datagram(k, values(f, k))))
    });
    common::udp_capture(&path, datagrams.collect::<Vec<_>>());
    path
}

fn zigzag_width(d: i64) -> u32 {
    let z = if d >= 0 {
        (d as u64) << 1
    } else {
        ((-(d + 1)) as u64) << 1 | 1
    };
    64 - z.leading_zeros()
}

#[test]
fn estimates_equal_what_the_fixture_wrote() {
    let cfg = config(&root().join("tests/fixtures/distributions.kdl"));
    let path = fixture("all", &[0, 1]);
    let b = profile(std::slice::from_ref(&path), cfg, Options::default());
    let n = u64::from(PER_FLOW) * 2;
    // 16 + 1 + 8 + 8 + 1 + 16 = 50 bits, 6 of alignment: 7 bytes each.
    assert_eq!(find(&b, "state", "sequence").bits, 16 * n);
    assert_eq!(find(&b, "state", "sequence").category, "header");
    assert_eq!(find(&b, "state", "align").bits, 6 * n);
    assert_eq!(find(&b, "state", "align").category, "padding");
    let headers = b.rows.iter().find(|r| r.category == "link_headers").unwrap();
    assert_eq!(headers.bits, b.captured_bits - 56 * n);

    let version = find(&b, "state", "version").estimate.clone().unwrap();
    assert!(version.constant);
    assert_eq!(
        (version.min, version.max, version.range_bits),
        (Some(7.0), Some(7.0), Some(0))
    );
    assert_eq!(version.range_saves_bits, Some(8 * n));
    assert_eq!(version.entropy_bits, Some(0.0));

    let quarter = find(&b, "state", "quarter").estimate.clone().unwrap();
    assert!(!quarter.constant);
    assert_eq!((quarter.min, quarter.max), (Some(0.0), Some(63.0)));
    assert_eq!(quarter.range_bits, Some(6));
    assert_eq!(quarter.range_saves_bits, Some(2 * n));
    assert_eq!(quarter.distinct, Some(64));
    assert_eq!(quarter.entropy_bits, Some(6.0));

    let alive = find(&b, "state", "alive").estimate.clone().unwrap();
    assert_eq!(alive.always, Some(true));

    let x = find(&b, "state", "x").estimate.clone().unwrap();
    let written: Vec<Vec<u32>> = (0..2)
        .map(|f| (0..PER_FLOW).map(|k| values(f, k).3).collect())
        .collect();
    let all = written.iter().flatten();
    assert_eq!(x.min, all.clone().min().map(|&v| f64::from(v)));
    assert_eq!(x.max, all.clone().max().map(|&v| f64::from(v)));
    let delta = x.delta.unwrap();
    let steps: Vec<i64> = written
        .iter()
        .flat_map(|w| w.windows(2).map(|p| i64::from(p[1]) - i64::from(p[0])))
        .collect();
    assert!(steps.iter().all(|d| d.abs() == 1));
    assert_eq!(delta.samples, n - 2);
    assert_eq!(
        delta.bits,
        steps.iter().map(|&d| u64::from(zigzag_width(d))).sum::<u64>()
    );
    assert_eq!(delta.width, 2);
    assert_eq!(delta.not_tracked, 0);
    let _ = std::fs::remove_file(path);
}

/// Flows profiled apart and merged equal the profile of the capture holding both (as
/// the engine's shards split by address pair).
#[test]
fn flows_profiled_apart_and_merged_equal_the_whole() {
    use gpcap::run::run_files;
    use gpcap::sinks::bandwidth::Bandwidth;
    let cfg = config(&root().join("tests/fixtures/distributions.kdl"));
    let opts = Options::default();
    let run = |p: &PathBuf| {
        let mut b = Bandwidth::new(cfg.program.clone(), opts.clone());
        run_files(std::slice::from_ref(p), cfg.clone(), &mut b, &mut |_, _| {}).unwrap();
        b
    };
    let (whole, a, b) = (fixture("whole", &[0, 1]), fixture("a", &[0]), fixture("b", &[1]));
    let mut merged = run(&a);
    merged.merge(run(&b));
    // Frame times differ between the files (1 ms apart in each): compare all but time.
    let strip = |mut r: BandwidthReport| {
        r.duration_s = 0.0;
        for row in &mut r.rows {
            row.bits_per_s = None;
        }
        serde_json::to_value(r).unwrap()
    };
    assert_eq!(strip(merged.report()), strip(run(&whole).report()));
    for p in [whole, a, b] {
        let _ = std::fs::remove_file(p);
    }
}

/// Captures `gen` writes from the bundled definitions: every payload bit the generator
/// sent is in a row of the protocol (all but link headers and other traffic), and the
/// header's fields once per datagram and reassembled packet.
#[test]
fn generated_captures_match_the_generator() {
    for def in ["article.kdl", "example-shooter.kdl"] {
        let (dir, path) = common::gen_checked(
            root().join("dissectors").join(def).to_str().unwrap(),
            &format!("bits-{}", def.trim_end_matches(".kdl")),
            &["--seed", "7", "--duration", "2"],
        );
        let truth = std::fs::read_to_string(format!("{path}.truth.jsonl")).unwrap();
        let sent: Vec<serde_json::Value> = truth
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|v: &serde_json::Value| v["event"] == "send")
            .collect();
        let payload_bits: u64 = sent.iter().map(|v| v["udp_payload"].as_u64().unwrap() * 8).sum();
        let cfg = config(&root().join("dissectors").join(def));
        let r = run::analyze_files(&[PathBuf::from(&path)], cfg, Options::default(), &mut |_, _| {}).unwrap();
        let b = r.bandwidth.unwrap();
        let protocol: u64 = b
            .rows
            .iter()
            .filter(|r| !matches!(r.category, "link_headers" | "other_traffic"))
            .map(|r| r.bits)
            .sum();
        // Reassembled packets' bits replace their fragments' data: still the payloads.
        assert_eq!(protocol, payload_bits, "{def}");
        assert_eq!(
            b.rows.iter().map(|r| r.bits).sum::<u64>(),
            r.capture.bytes * 8,
            "{def}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// `export --bits` writes `field_bits`, whose rows are `analyze --bits`'s: the same bits.
#[cfg(feature = "export")]
#[test]
fn export_writes_field_bits_as_analyze_counts_them() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    let dir = std::env::temp_dir().join(format!("gpcap-bits-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let capture = root().join("captures/clean.pcap");
    let def = root().join("dissectors/article.kdl");
    let (c, d) = (capture.to_str().unwrap(), def.to_str().unwrap());
    common::gpcap_ok(&["export", c, "-d", d, "-o", dir.to_str().unwrap(), "--bits"]);
    let file = dir.join("capture=clean.pcap/field_bits/part-0.parquet");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&file).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let mut bits = 0u64;
    let mut rows = 0;
    for batch in reader {
        let batch = batch.unwrap();
        let col = batch.column_by_name("bits").unwrap().as_primitive::<UInt64Type>();
        bits += col.values().iter().sum::<u64>();
        rows += batch.num_rows();
    }
    let v: serde_json::Value =
        serde_json::from_str(&common::gpcap_ok(&["analyze", c, "-d", d, "--bits", "--json"])).unwrap();
    assert_eq!(bits, v["bandwidth"]["captured_bits"].as_u64().unwrap());
    assert_eq!(rows, v["bandwidth"]["rows"].as_array().unwrap().len());
    let _ = std::fs::remove_dir_all(dir);
}

/// Without a definition nothing is read field by field: each datagram is one row of
/// `not_dissected` bits, and reassembled packets (whose bits are their fragments') add
/// nothing — the rows still add up to the wire.
#[test]
fn zero_configuration_rows_add_up_to_the_wire() {
    for capture in ["clean.pcap", "lossy-bursts.pcap", "article.pcap"] {
        let path = root().join("captures").join(capture);
        let out = common::gpcap_ok(&["analyze", path.to_str().unwrap(), "--bits", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let b = &v["bandwidth"];
        assert_eq!(b["rows_bits"], b["captured_bits"], "{capture}");
        assert_eq!(
            b["captured_bits"].as_u64(),
            v["capture"]["bytes"].as_u64().map(|n| n * 8),
            "{capture}"
        );
    }
}

/// The headers row is summed once at the end, yet it occurred once per game frame
/// (it said 1 occurrence, 1 packet for the whole capture).
#[test]
fn the_headers_row_occurs_once_per_game_frame() {
    let cfg = config(&root().join("dissectors/article.kdl"));
    let paths = vec![root().join("captures/lossy-bursts.pcap")];
    let b = profile(&paths, cfg, Options::default());
    let headers = b.rows.iter().find(|r| r.category == "link_headers").unwrap();
    assert_eq!(
        (headers.occurrences, headers.packets, headers.bits),
        (2185, 2185, 2185 * 336)
    );
}

/// The profile of `shards` shards by address pair, merged.
fn sharded(paths: &[PathBuf], cfg: &Config, opts: &Options, shards: usize) -> serde_json::Value {
    let r = run::shard_profile(paths, cfg, opts, shards, &mut |_, _| {})
        .unwrap()
        .unwrap_or_else(|| panic!("{shards} shards reached a cap"));
    serde_json::to_value(r.bandwidth.unwrap()).unwrap()
}

/// The profile counted in the ordered stage of a pipeline of `workers` validation
/// threads (None: the definition needs field trees, and is not pipelined).
fn pipelined(paths: &[PathBuf], cfg: &Config, opts: &Options, workers: usize) -> Option<serde_json::Value> {
    let r = run::pipelined(paths, cfg, opts, workers, &mut |_, _| {}).unwrap()?;
    Some(serde_json::to_value(r.bandwidth.unwrap()).unwrap())
}

/// `analyze --bits` on several cores gives the profile of one core: every bundled
/// capture and captures `gen` writes from article.kdl and example-shooter.kdl (many
/// clients), with a `--what-if` resolution too, on 2, 3 and 5 shards. A row a later
/// shard met first kept no kind when merged (a boolean lost `always`, a compressed
/// float its declared resolution). Pipelined (one client), the same profile too.
#[test]
fn sharded_profiles_equal_the_sequential_one() {
    let mut cases: Vec<(PathBuf, &str, Options)> = common::BUNDLED
        .iter()
        .map(|(c, d)| (root().join("captures").join(c), *d, Options::default()))
        .collect();
    let mut dirs = Vec::new();
    for def in ["article.kdl", "example-shooter.kdl"] {
        let (dir, path) = common::gen_checked(
            root().join("dissectors").join(def).to_str().unwrap(),
            &format!("bits-shards-{}", def.trim_end_matches(".kdl")),
            &["--seed", "11", "--duration", "2", "--clients", "6"],
        );
        cases.push((PathBuf::from(&path), def, Options::default()));
        dirs.push(dir);
    }
    let what_if = Options {
        what_if: vec![("C.position.x".into(), 0.5)],
        ..Options::default()
    };
    cases.push((root().join("captures/article.pcap"), "article.kdl", what_if));
    for (path, def, opts) in &cases {
        let cfg = config(&root().join("dissectors").join(def));
        let paths = vec![path.clone()];
        let one = run::analyze_files(&paths, cfg.clone(), opts.clone(), &mut |_, _| {}).unwrap();
        let one = serde_json::to_value(one.bandwidth.unwrap()).unwrap();
        for shards in [2, 3, 5] {
            assert!(
                sharded(&paths, &cfg, opts, shards) == one,
                "{} on {shards} shards differs from one core",
                path.display()
            );
        }
        for workers in [1, 3] {
            assert!(
                pipelined(&paths, &cfg, opts, workers).is_none_or(|p| p == one),
                "{} pipelined with {workers} workers differs from one core",
                path.display()
            );
        }
    }
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
