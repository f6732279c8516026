//! `gpcap diff` against the truth of `gen --second-point`: loss between the points,
//! duplicates and reordering exact, delay percentiles within 0.1 ms once clocks hours
//! apart and 100 ppm apart are fitted, through NAT; and what it says instead of figures
//! when the captures are of different sessions, share no flow, hold no game traffic, or
//! have clocks no line fits. The matching window stays bounded whatever the offset.

mod common;

use gpcap::capture::{CaptureReader, PcapWriter};
use gpcap::sinks::diff::matcher::{A, B};
use gpcap::sinks::diff::{Matcher, Options, Seen, Sighting};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-diff-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `gen --second-point` into `dir`: the two captures' paths (A, B); with `check`, gen
/// runs diff on them and compares every figure with its truth (it must agree).
fn points(dir: &Path, def: &str, args: &[&str], check: bool) -> (String, String) {
    std::fs::create_dir_all(dir).unwrap();
    let a = dir.join("a.pcap").to_str().unwrap().to_string();
    let b = dir.join("b.pcap").to_str().unwrap().to_string();
    let mut all = vec!["gen", "-d", def, "-o", &a, "--second-point", &b];
    all.extend_from_slice(args);
    if check {
        all.push("--check");
    }
    let (code, _, err) = common::gpcap_run(&all);
    assert_eq!(code, 0, "{err}");
    if check {
        assert!(err.contains("diff agrees with the truth of both points"), "{err}");
    }
    (a, b)
}

/// The truth's summary line of the session written to `a`.
fn truth(a: &str) -> Value {
    let text = std::fs::read_to_string(format!("{a}.truth.jsonl")).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// `gpcap diff --json A B ARGS…`: exit code and report.
fn diff(a: &str, b: &str, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["diff", "--json", "-d", "dissectors/article.kdl", a, b];
    all.extend_from_slice(args);
    let (code, out, err) = common::gpcap_run(&all);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v)
}

fn sum(t: &Value, field: &str) -> u64 {
    t["directions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d[field].as_u64().unwrap())
        .sum()
}

/// Through a NAT, B's clock 3 h 25 min ahead and 100 ppm fast: every count exact and
/// every delay percentile within 0.1 ms (gen --check compares them), on a session that
/// loses before and between the points, duplicates, reorders and fragments.
#[test]
fn through_nat_with_clocks_hours_apart() {
    let dir = scratch("nat");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--duration",
            "30",
            "--clients",
            "2",
            "--nat",
            "--clock-offset",
            "12300",
            "--skew",
            "100",
            "--loss",
            "0.03",
            "--burst",
            "0.01,0.3,0.7",
            "--loss-before",
            "0.01",
            "--dup",
            "0.02",
            "--reorder",
            "0.03",
            "--jitter",
            "6",
            "--big",
            "0.3",
        ],
        true,
    );
    let t = truth(&a);
    for f in ["lost_between", "lost_before", "duplicated", "reordered"] {
        assert!(sum(&t, f) > 10, "{f}: {t}");
    }
    let (code, r) = diff(&a, &b, &[]);
    assert_eq!(code, 0);
    let d = r["directions"].as_array().unwrap();
    assert_eq!(d.len(), 4);
    for x in d {
        assert_eq!(
            x["paired_by"]["shared_datagrams"].as_u64(),
            Some(3),
            "{}",
            x["pairing"]
        );
        assert!(
            x["pairing"].as_str().unwrap().starts_with("NAT: "),
            "{}",
            x["pairing"]
        );
    }
    assert!(d.iter().any(|x| {
        x["fragments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["lost"].as_u64() > Some(0))
    }));
    let c = &r["clock"];
    assert_eq!(c["status"], "fitted");
    assert!((c["skew_ppm"].as_f64().unwrap() - 100.0).abs() < 5.0, "{c}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// B's clock three hours behind and 100 ppm slow, IPv6, another definition.
#[test]
fn negative_offset_and_skew_over_ipv6() {
    let dir = scratch("v6");
    points(
        &dir,
        "dissectors/example-shooter.kdl",
        &[
            "--duration",
            "20",
            "--ipv6",
            "--clock-offset=-10800",
            "--skew=-100",
            "--loss",
            "0.04",
            "--dup",
            "0.03",
            "--reorder",
            "0.05",
            "--jitter",
            "10",
            "--nat",
        ],
        true,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// IP fragments lost piece by piece, copies damaged on the way (counted lost, as RFC
/// 7680 counts them, and damaged on arrival), Gilbert–Elliott bursts.
#[test]
fn ip_fragments_damage_and_bursts() {
    let dir = scratch("frag");
    let (a, _) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--duration",
            "15",
            "--link-mtu",
            "1000",
            "--big",
            "0.5",
            "--corrupt",
            "0.03",
            "--loss",
            "0.02",
            "--burst",
            "0.03,0.2,0.9",
            "--dup",
            "0.03",
            "--jitter",
            "3",
            "--skew",
            "40",
        ],
        true,
    );
    assert!(sum(&truth(&a), "damaged") > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The check can fail: the truth moved by one datagram (or 0.2 ms) is a mismatch.
#[test]
fn a_wrong_figure_fails_the_check() {
    use gpcap::generate::points::PointsTruth;
    let dir = scratch("mismatch");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--loss",
            "0.05",
            "--dup",
            "0.05",
            "--reorder",
            "0.05",
            "--jitter",
            "4",
            "--loss-before",
            "0.03",
        ],
        false,
    );
    let program = gpcap::load_definition("dissectors/article.kdl").unwrap();
    let report = gpcap::run::diff::diff(
        [a.clone().into(), b.into()],
        gpcap::Config::from_program(program),
        Options::default(),
        gpcap::sinks::diff::ClockMode::Fit,
    )
    .unwrap()
    .report;
    let t: PointsTruth = serde_json::from_value(truth(&a)).unwrap();
    assert_eq!(
        gpcap::run::points_truth::compare(&t, &report),
        Vec::<String>::new()
    );
    type Change = fn(&mut PointsTruth);
    let moved: [(&str, Change); 6] = [
        ("lost between", |t| t.directions[0].lost_between += 1),
        ("lost before", |t| t.directions[1].lost_before += 1),
        ("duplicated", |t| t.directions[0].duplicated += 1),
        ("reordered", |t| t.directions[1].reordered += 1),
        ("delay p50", |t| {
            t.directions[0].delay_ms.as_mut().unwrap().p50 += 0.2
        }),
        ("clock offset", |t| t.offset_ns += 200_000),
    ];
    for (what, change) in moved {
        let mut wrong = t.clone();
        change(&mut wrong);
        let diffs = gpcap::run::points_truth::compare(&wrong, &report);
        assert!(diffs.iter().any(|d| d.contains(what)), "{what}: {diffs:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two sessions on the same addresses: paired by their addresses, no datagram in
/// common — said so, exit 1, no figures.
#[test]
fn different_sessions_are_said_so() {
    let dir = scratch("sessions");
    let (a, _) = points(&dir.join("1"), "dissectors/article.kdl", &["--seed", "1"], false);
    let (_, b) = points(&dir.join("2"), "dissectors/article.kdl", &["--seed", "2"], false);
    let (code, r) = diff(&a, &b, &[]);
    assert_eq!(code, 1);
    assert_eq!(r["verdict"], "no_common_datagram");
    assert_eq!(r["directions"].as_array().unwrap().len(), 0);
    assert!(
        r["notes"][0]
            .as_str()
            .unwrap()
            .contains("share their addresses but no datagram")
    );
    let (code, out, _) = common::gpcap_run(&["diff", "-d", "dissectors/article.kdl", &a, &b]);
    assert_eq!(code, 1);
    assert!(out.contains("Nothing to compare"), "{out}");
    assert!(!out.contains("Directions"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Through NATs, two sessions share no address and no datagram: no flow in common.
#[test]
fn no_common_flow_is_said_so() {
    let dir = scratch("flows");
    let (a, _) = points(
        &dir.join("1"),
        "dissectors/article.kdl",
        &["--seed", "1", "--nat"],
        false,
    );
    let (_, b) = points(
        &dir.join("2"),
        "dissectors/article.kdl",
        &["--seed", "2", "--nat"],
        false,
    );
    let (code, r) = diff(&a, &b, &[]);
    assert_eq!((code, r["verdict"].as_str()), (1, Some("no_common_flow")));
    assert_eq!(r["points"][0]["unpaired_flows"].as_u64(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A capture of other traffic: nothing to compare.
#[test]
fn no_game_traffic_is_said_so() {
    let dir = scratch("empty");
    let (a, _) = points(&dir, "dissectors/article.kdl", &[], false);
    let other = dir.join("dns.pcap");
    let dns = ([10, 0, 0, 7], 33000).into();
    let server = ([10, 0, 0, 53], 53).into();
    common::udp_capture(&other, (0..50).map(|k| (dns, server, vec![k as u8; 40])));
    let (code, r) = diff(&a, other.to_str().unwrap(), &["--protocol-id", "0x55667788"]);
    assert_eq!((code, r["verdict"].as_str()), (1, Some("no_game_traffic")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rewrites a capture, each frame's time through `t`, keeping those `keep` says.
fn rewrite(from: &str, to: &Path, t: impl Fn(i64) -> i64, keep: impl Fn(&[u8], i32, i64) -> bool) {
    let mut r = CaptureReader::open(Path::new(from)).unwrap();
    let mut w: Option<PcapWriter<std::fs::File>> = None;
    while let Some(f) = r.next_frame().unwrap() {
        let w = w.get_or_insert_with(|| {
            PcapWriter::new(std::fs::File::create(to).unwrap(), f.linktype as u32, 65535, true).unwrap()
        });
        if keep(f.data, f.linktype, f.ts_ns) {
            w.write(t(f.ts_ns), f.data, f.origlen).unwrap();
        }
    }
}

/// The captures' first frame time.
fn first_ns(path: &str) -> i64 {
    CaptureReader::open(Path::new(path))
        .unwrap()
        .next_frame()
        .unwrap()
        .unwrap()
        .ts_ns
}

/// B's clock steps 2 s forward halfway: no line fits both halves, so no delay is given
/// (and said why), while loss, duplicates and reordering, which need no clock, stay
/// exact.
#[test]
fn a_clock_step_is_not_fitted() {
    let dir = scratch("step");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--duration",
            "20",
            "--loss",
            "0.03",
            "--dup",
            "0.02",
            "--reorder",
            "0.02",
            "--jitter",
            "5",
        ],
        true,
    );
    let stepped = dir.join("stepped.pcap");
    let half = first_ns(&b) + 10_000_000_000;
    rewrite(
        &b,
        &stepped,
        |t| if t >= half { t + 2_000_000_000 } else { t },
        |_, _, _| true,
    );
    let (code, r) = diff(&a, stepped.to_str().unwrap(), &[]);
    assert_eq!(code, 0);
    let c = &r["clock"];
    assert_eq!(c["status"], "not_fitted", "{c}");
    assert!(c["reason"].as_str().unwrap().contains("stepped"), "{c}");
    assert!(c["offset_ms"].is_null() && c["skew_ppm"].is_null(), "{c}");
    let t = truth(&a);
    for d in r["directions"].as_array().unwrap() {
        assert!(d["delay"].is_null());
        assert!(d["delay_note"].as_str().unwrap().contains("stepped"));
        let flow = format!(
            "{}>{}",
            d["a"]["src"].as_str().unwrap(),
            d["a"]["dst"].as_str().unwrap()
        );
        let td = t["directions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["flow_a"] == flow)
            .unwrap();
        for (got, want) in [
            ("lost", "lost_between"),
            ("duplicated", "duplicated"),
            ("reordered", "reordered"),
        ] {
            assert_eq!(d[got], td[want], "{flow} {got}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A clock 3000 ppm fast is no crystal's: not fitted, no delays.
#[test]
fn a_skew_beyond_any_clock_is_not_fitted() {
    let dir = scratch("skew");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &["--skew", "3000", "--jitter", "2"],
        false,
    );
    let (_, r) = diff(&a, &b, &[]);
    assert_eq!(r["clock"]["status"], "not_fitted");
    assert!(r["clock"]["skew_ppm"].is_null());
    assert!(r["clock"]["reason"].as_str().unwrap().contains("ppm"));
    assert!(
        r["directions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["delay"].is_null())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Four packets cannot fit a clock.
#[test]
fn too_few_datagrams_are_not_fitted() {
    let dir = scratch("few");
    let (a, b) = points(&dir, "dissectors/article.kdl", &["--packets", "4"], false);
    let (code, r) = diff(&a, &b, &[]);
    assert_eq!(code, 0);
    assert_eq!(r["clock"]["status"], "not_fitted");
    assert!(
        r["clock"]["reason"].as_str().unwrap().contains("too few"),
        "{}",
        r["clock"]
    );
    assert!(
        r["directions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["delay"].is_null())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Keeps only the server's datagrams (and other traffic): one way.
fn from_server(data: &[u8], link: i32, _: i64) -> bool {
    match gpcap::decode::decode(link, data) {
        gpcap::decode::Decoded::Udp {
            src_port, dst_port, ..
        } => src_port == 40000 || dst_port == 53,
        _ => true,
    }
}

/// The truth of the server's direction.
fn server_truth(a: &str) -> Value {
    let t = truth(a);
    t["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["upstream"] == "B")
        .unwrap()
        .clone()
}

/// Traffic one way: the offset cannot be told from the fixed delay, so delays are
/// given above the direction's floor (and said so); they still agree with the truth's.
#[test]
fn one_way_traffic_gives_delays_above_the_floor() {
    let dir = scratch("oneway");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--duration",
            "20",
            "--clock-offset",
            "500",
            "--skew",
            "60",
            "--jitter",
            "8",
            "--loss",
            "0.02",
        ],
        false,
    );
    let (a1, b1) = (dir.join("a1.pcap"), dir.join("b1.pcap"));
    rewrite(&a, &a1, |t| t, from_server);
    rewrite(&b, &b1, |t| t, from_server);
    let (_, r) = diff(a1.to_str().unwrap(), b1.to_str().unwrap(), &[]);
    assert!(r["clock"]["offset_ms"].is_null(), "{}", r["clock"]);
    let d = &r["directions"][0];
    assert_eq!(d["upstream"], "B", "{}", d["upstream_by"]);
    let delay = &d["delay"];
    assert_eq!(delay["above_floor"], true);
    assert!(delay["floor_ms"].is_null());
    let t = &server_truth(&a)["delay_ms"];
    let floor = t["floor"].as_f64().unwrap();
    for (got, want) in [("p50_ms", "p50"), ("p90_ms", "p90"), ("max_ms", "max")] {
        let (g, w) = (delay[got].as_f64().unwrap(), t[want].as_f64().unwrap() - floor);
        assert!((g - w).abs() < 0.1, "{got}: {g} against {w}");
    }
    assert!(r["notes"][0].as_str().unwrap().contains("one way only"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Captures stamped by one clock (`--clock same`): absolute delays one way too.
#[test]
fn one_clock_gives_absolute_delays_one_way() {
    let dir = scratch("same");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &["--duration", "10", "--jitter", "5"],
        false,
    );
    let (a1, b1) = (dir.join("a1.pcap"), dir.join("b1.pcap"));
    rewrite(&a, &a1, |t| t, from_server);
    rewrite(&b, &b1, |t| t, from_server);
    let (_, r) = diff(a1.to_str().unwrap(), b1.to_str().unwrap(), &["--clock", "same"]);
    assert_eq!(r["clock"]["status"], "same");
    let delay = &r["directions"][0]["delay"];
    let t = &server_truth(&a)["delay_ms"];
    for (got, want) in [
        ("floor_ms", "floor"),
        ("p50_ms", "p50"),
        ("p99_ms", "p99"),
        ("max_ms", "max"),
    ] {
        let (g, w) = (delay[got].as_f64().unwrap(), t[want].as_f64().unwrap());
        assert!((g - w).abs() < 1e-3, "{got}: {g} against {w}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// B's capture began 25 s after A's (each by its own clock, an hour apart): they still
/// meet; A's datagrams from before B ran are not compared, not lost.
#[test]
fn captures_that_began_apart_still_meet() {
    let dir = scratch("late");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--duration",
            "40",
            "--clock-offset",
            "3600",
            "--nat",
            "--loss",
            "0.02",
        ],
        false,
    );
    let late = dir.join("late.pcap");
    let start = first_ns(&b) + 25_000_000_000;
    rewrite(&b, &late, |t| t, |_, _, t| t >= start);
    let (code, r) = diff(&a, late.to_str().unwrap(), &[]);
    assert_eq!((code, r["verdict"].as_str()), (0, Some("compared")));
    let up_a = r["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["upstream"] == "A")
        .unwrap();
    // About 25 s of the client's 30 Hz.
    assert!(up_a["not_compared"].as_u64().unwrap() > 600, "{up_a}");
    let lost: u64 = r["directions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["lost"].as_u64().unwrap())
        .sum();
    assert!(lost <= sum(&truth(&a), "lost_between"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A datagram every 10 ms at each point, B's clock ten hours ahead: the matcher's
/// windows hold the window's worth of traffic, never the offset's.
#[test]
fn the_window_is_bounded_whatever_the_offset() {
    let opts = Options {
        window_ns: 2_000_000_000,
        ..Options::default()
    };
    for (offset, late_start) in [
        (36_000_000_000_000i64, 0i64),
        (-36_000_000_000_000, 0),
        (0, 30_000_000_000),
    ] {
        let mut m = Matcher::new(opts);
        let flow = gpcap::sinks::diff::FlowId {
            src: ([10, 0, 0, 1], 40000).into(),
            dst: ([10, 0, 0, 2], 50000).into(),
        };
        let mut most = [0usize; 2];
        let n = 60_000u64;
        let at = |side: usize, k: u64| -> i64 {
            let t = 1_700_000_000_000_000_000 + k as i64 * 10_000_000;
            if side == A { t } else { t + offset + 20_000_000 }
        };
        let first_b = (late_start / 10_000_000) as u64;
        m.push(A, Seen::Flow { index: 0, id: flow });
        m.push(B, Seen::Flow { index: 0, id: flow });
        let (mut ka, mut kb) = (0u64, first_b);
        loop {
            let heads = [(ka < n).then(|| at(A, ka)), (kb < n).then(|| at(B, kb))];
            let Some(x) = m.next_side(heads) else { break };
            let k = if x == A { &mut ka } else { &mut kb };
            m.push(
                x,
                Seen::Datagram(Sighting {
                    ts_ns: at(x, *k),
                    frame: *k + 1,
                    hash: k.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    seq: Some(*k & 0xffff),
                    fragment: None,
                    flow: 0,
                    size: 100,
                }),
            );
            *k += 1;
            if ka == n {
                m.end(A);
                ka += 1;
            }
            if kb == n {
                m.end(B);
                kb += 1;
            }
            let p = m.pending();
            most = [most[0].max(p[0]), most[1].max(p[1])];
        }
        // The window (2 s) and the delay of 100-a-second traffic, plus the captures'
        // head start when one began later.
        let bound = 200 + 10 + (late_start / 10_000_000) as usize + 5;
        assert!(
            most[0] <= bound && most[1] <= bound,
            "offset {offset}: {most:?} > {bound}"
        );
        assert_eq!(m.open_entries(), 0);
    }
}

/// `-o DIR`: the tables read back hold the report's figures, row for row.
#[cfg(feature = "export")]
#[test]
fn the_tables_hold_the_report() {
    use arrow_array::{Array, StringArray, UInt64Array};
    let dir = scratch("export");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &[
            "--loss",
            "0.05",
            "--dup",
            "0.03",
            "--reorder",
            "0.05",
            "--big",
            "0.4",
            "--jitter",
            "5",
            "--nat",
        ],
        false,
    );
    let out = dir.join("out");
    let (_, r) = diff(&a, &b, &["-o", out.to_str().unwrap()]);
    let read = |table: &str| {
        let path = out.join("diff=a.pcap+b.pcap").join(table).join("part-0.parquet");
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        reader.map(|b| b.unwrap()).collect::<Vec<_>>()
    };
    let directions = read("diff_directions");
    let rows: usize = directions.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, r["directions"].as_array().unwrap().len());
    let b = &directions[0];
    let col = |name: &str| {
        b.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap()
            .clone()
    };
    let up = b
        .column_by_name("upstream")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .clone();
    for (k, d) in r["directions"].as_array().unwrap().iter().enumerate() {
        for f in ["sent", "arrived", "lost", "duplicated", "reordered"] {
            assert_eq!(Some(col(f).value(k)), d[f].as_u64(), "{f}");
        }
        assert_eq!(Some(up.value(k)), d["upstream"].as_str());
    }
    let events: usize = read("diff_events").iter().map(|b| b.num_rows()).sum();
    let listed: usize = r["directions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            ["lost", "late", "reordered", "duplicated"]
                .iter()
                .map(|k| d["events"][k].as_array().unwrap().len())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(events, listed);
    let fragments = read("diff_fragments");
    let lost: u64 = fragments
        .iter()
        .map(|b| {
            b.column_by_name("lost")
                .unwrap()
                .as_any()
                .downcast_ref::<UInt64Array>()
                .unwrap()
                .iter()
                .flatten()
                .sum::<u64>()
        })
        .sum();
    let want: u64 = r["directions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| {
            d["fragments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["lost"].as_u64().unwrap())
        })
        .sum();
    assert_eq!(lost, want);
    assert!(want > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A capture cut inside a record: what was read is compared, the cut is said, exit 2;
/// a window out of range and a missing capture are refused before anything is read.
#[test]
fn a_capture_cut_short_and_bad_flags() {
    let dir = scratch("cut");
    let (a, b) = points(
        &dir,
        "dissectors/article.kdl",
        &["--duration", "5", "--loss", "0.02"],
        false,
    );
    let bytes = std::fs::read(&b).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 7]).unwrap();
    let (code, out, err) =
        common::gpcap_run(&["diff", "-d", "dissectors/article.kdl", &a, cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("Directions"), "{out}");
    assert!(err.contains("cut.pcap"), "{err}");
    for args in [
        vec!["--window", "0"],
        vec!["--window", "601"],
        vec!["--clock", "maybe"],
    ] {
        let mut all = vec!["diff", "-d", "dissectors/article.kdl", &a, &b];
        all.extend(args.iter());
        let (code, _, err) = common::gpcap_run(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let (code, _, err) =
        common::gpcap_run(&["diff", "-d", "dissectors/article.kdl", &a, "/nonexistent.pcap"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent.pcap"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
