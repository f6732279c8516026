//! One truth: the engine, `dissect --filter` and the TUI's `/` filter select the same
//! packets (reassembled ones included) on every bundled capture, and every output spells
//! fault kinds the same way.

mod common;

use common::BUNDLED;
use gpcap::Filter;
use gpcap::SinkError;
use gpcap::analysis::Config;
use gpcap::dissect;
use gpcap::run::run_files;
use gpcap::sinks::index::status;
use gpcap::{Flow, Kind, Needs, PacketEvent, Sink};
use gpcap_tui::{App, Index, load};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const FILTERS: [&str; 41] = [
    "type == scene",
    "type == 2",
    "size > 1000",
    "size > 3000",
    "reassembled",
    "frag",
    "crc.fail",
    "crc.ok && seq > 100",
    "malformed",
    "ipfrag",
    "!frag && seq < 50",
    "over-budget || truncated",
    "reassembled && type == scene",
    "frag.count >= 3 && frag.id == 0",
    // Dissected fields (a filter a definition cannot compile is skipped for it).
    "objects.at_rest == true",
    "all scene.objects.at_rest == true",
    "objects.position.x < -500 || objects[1].linear_velocity.y > 5",
    "scene.objects[0].index == 45",
    "misc.name contains \"a\" && misc.n != 3",
    "items.item >= 90 && !reassembled",
    "input.weapon == rocket && input.fire",
    "input.yaw == 12.5 || input.pitch < -80",
    "chat.text contains \"g\"",
    "connect.player_name",
    "end_check != 0",
    // Directions, Wireshark's names, time, and the sequence analysis' verdicts.
    "late",
    "dup",
    "gap",
    "gap > 2",
    "late || dup || gap",
    "not gap and gap == 0",
    "src 10.0.0.1 && dst 10.0.1.1",
    "ip.src == 10.0.1.1 or ip.dst == 10.0.0.2",
    "udp.srcport == 40000 and not udp.dstport == 50000",
    "udp.port == 50000",
    "time > 5 && time <= 10.5",
    "frame.time_relative < 1",
    "frame.number > 100 and frame.number <= 200",
    "over_budget or ipfrag",
    "time >= 2020-01-01T00:00:00",
    "host 10.0.0.1 && !(src 10.0.0.1:40000)",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn config(definition: &str) -> Config {
    let p = Arc::new(dissect::load(&root().join("dissectors").join(definition)).unwrap());
    let mut cfg = Config::from_program(p);
    if cfg.ports.is_empty() {
        cfg.any_port = true;
    }
    cfg
}

/// A game packet: its frame, and whether it is the reassembled packet.
type Key = (u64, bool);

struct Select {
    filter: Filter,
    out: BTreeSet<Key>,
}

impl Sink for Select {
    fn needs(&self) -> Needs {
        Needs {
            fields: self.filter.needs_engine(),
            layers: None,
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        // `time` counts from the first frame.
        self.filter.start(e.ts_ns);
        if e.is_game() && self.filter.matches(e) {
            self.out.insert((e.frame, e.kind == Kind::Reassembled));
        }
        Ok(Flow::Continue)
    }
}

fn engine(path: &Path, cfg: &Config, filter: &Filter) -> BTreeSet<Key> {
    let mut s = Select {
        filter: filter.clone(),
        out: BTreeSet::new(),
    };
    if filter.needs_acks() {
        let facts = gpcap::run::scans::ack_facts(&[path.to_path_buf()], cfg.clone()).unwrap();
        s.filter.set_acks(Arc::new(facts));
    }
    run_files(&[path.to_path_buf()], cfg.clone(), &mut s, &mut |_, _| {}).unwrap();
    s.out
}

fn dissect_cli(path: &Path, definition: &str, filter: &str) -> BTreeSet<Key> {
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(root())
        .args(["dissect", path.to_str().unwrap(), "-d"])
        .arg(root().join("dissectors").join(definition))
        .args(["--brief", "--filter", filter])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let frame = l.split(' ').next().unwrap().parse().unwrap();
            (frame, l.contains(" reassembled from frames "))
        })
        .collect()
}

fn tui(path: &Path, cfg: &Config) -> App {
    let (tx, rx) = std::sync::mpsc::channel();
    load(path, cfg.clone(), tx);
    let mut app = App::new(Index::new(path), rx, cfg.clone());
    app.tick();
    app
}

fn tui_selection(app: &mut App, filter: &str) -> BTreeSet<Key> {
    app.apply_filter(filter);
    // A filter on dissected fields runs on a thread of its own.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !app.scan_finished() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(2));
        app.tick();
    }
    assert!(
        app.scan_finished(),
        "`{filter}`: the TUI's field scan did not finish"
    );
    app.view
        .iter()
        .filter_map(|&i| app.index.rows.get(i as usize))
        .filter(|r| r.has(status::GAME))
        .map(|r| (r.frame, r.has(status::REASSEMBLED)))
        .collect()
}

#[test]
fn dissect_tui_and_engine_select_the_same_packets() {
    let mut reassembled_seen = 0;
    let mut by_fields = 0;
    for (capture, definition) in BUNDLED {
        let path: PathBuf = root().join("captures").join(capture);
        let cfg = config(definition);
        let mut app = tui(&path, &cfg);
        for (k, text) in FILTERS.into_iter().enumerate() {
            // `scene` is a type of the article's definition only.
            let Ok(filter) = Filter::parse(text, cfg.program.as_deref()) else {
                continue;
            };
            let by_engine = engine(&path, &cfg, &filter);
            let by_dissect = dissect_cli(&path, definition, text);
            let by_tui = tui_selection(&mut app, text);
            assert_eq!(
                by_engine, by_dissect,
                "{capture}: `{text}`: engine vs dissect --filter"
            );
            assert_eq!(
                by_engine, by_tui,
                "{capture}: `{text}`: engine vs the TUI's filter"
            );
            if text == "reassembled" {
                reassembled_seen += by_engine.len();
            }
            if (14..25).contains(&k) {
                by_fields += by_engine.len();
            }
        }
    }
    assert!(
        by_fields > 5000,
        "filters on dissected fields selected only {by_fields} packets"
    );
    assert!(
        reassembled_seen > 100,
        "only {reassembled_seen} reassembled packets selected"
    );
}

fn analyze(path: &Path, cfg: &Config) -> gpcap::analysis::Report {
    let mut a = gpcap::analysis::Analyzer::new(cfg.clone());
    let mut r = gpcap::capture::CaptureReader::open(path).unwrap();
    a.begin_file(&path.display().to_string());
    while let Ok(Some(f)) = r.next_frame() {
        a.frame(&f);
    }
    a.finish()
}

/// `late`, `dup` and `gap` select, flow by flow (`src A && dst B`), exactly the late,
/// duplicate and gap counts of `analyze`'s sequence analysis — in the engine, in
/// `dissect --filter` and in the TUI.
#[test]
fn sequence_verdicts_select_what_analyze_counts() {
    let (mut late, mut dup, mut gaps) = (0, 0, 0);
    for (capture, definition) in BUNDLED {
        let path: PathBuf = root().join("captures").join(capture);
        let cfg = config(definition);
        let report = analyze(&path, &cfg);
        let mut app = tui(&path, &cfg);
        for fl in &report.flows {
            let dir = format!("src {} && dst {}", fl.src, fl.dst);
            let spaces = || fl.sequence_spaces.iter().map(|(_, s)| s);
            let want_late = fl.seq.late + spaces().map(|s| s.late).sum::<u64>();
            let want_dup = fl.seq.duplicates + spaces().map(|s| s.duplicates).sum::<u64>();
            let runs: Vec<(u64, u32)> = fl
                .seq
                .gap_starts
                .iter()
                .chain(spaces().flat_map(|s| &s.gap_starts))
                .copied()
                .collect();
            let mut count = |what: &str| {
                let text = format!("{what} && {dir}");
                let f = Filter::parse(&text, cfg.program.as_deref()).unwrap();
                let n = engine(&path, &cfg, &f).len();
                assert_eq!(
                    n,
                    tui_selection(&mut app, &text).len(),
                    "{capture}: `{text}`: TUI"
                );
                n as u64
            };
            assert_eq!(count("late"), want_late, "{capture} {dir}: late");
            assert_eq!(count("dup"), want_dup, "{capture} {dir}: dup");
            // The report lists the first 64 gaps of a flow; below that, every one.
            if runs.len() < 64 {
                assert_eq!(count("gap") as usize, runs.len(), "{capture} {dir}: gaps");
                let wide = runs.iter().filter(|r| r.1 > 2).count();
                assert_eq!(
                    count("gap > 2") as usize,
                    wide,
                    "{capture} {dir}: gaps of 3 or more"
                );
                gaps += runs.len();
            }
            late += want_late;
            dup += want_dup;
        }
    }
    assert!(
        late > 10 && dup > 0 && gaps > 50,
        "late {late}, dup {dup}, gaps {gaps}"
    );
    // `dissect --brief` marks them the same way.
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(root())
        .args([
            "dissect",
            "captures/lossy-bursts.pcap",
            "-d",
            "dissectors/article.kdl",
            "--brief",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let cfg = config("article.kdl");
    let path = root().join("captures/lossy-bursts.pcap");
    let report = analyze(&path, &cfg);
    let lines = |word: &str| text.lines().filter(|l| l.contains(word)).count() as u64;
    assert_eq!(
        lines(" late"),
        report.flows.iter().map(|f| f.seq.late).sum::<u64>()
    );
    assert_eq!(
        lines(" dup"),
        report.flows.iter().map(|f| f.seq.duplicates).sum::<u64>()
    );
    assert_eq!(
        lines(" gap "),
        report
            .flows
            .iter()
            .map(|f| f.seq.gap_starts.len() as u64)
            .sum::<u64>()
    );
}

/// Every game packet of a flow: its frame, whether reassembled, and its sequence.
fn sequences(path: &Path, cfg: &Config, filter: &str) -> BTreeMap<Key, u64> {
    struct Seqs(Filter, BTreeMap<Key, u64>);
    impl Sink for Seqs {
        fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
            if e.is_game()
                && let Some(s) = e.sequence
                && self.0.matches(e)
            {
                self.1.insert((e.frame, e.kind == Kind::Reassembled), s);
            }
            Ok(Flow::Continue)
        }
    }
    let mut f = Filter::parse(filter, cfg.program.as_deref()).unwrap();
    if f.needs_acks() {
        f.set_acks(Arc::new(
            gpcap::run::scans::ack_facts(&[path.to_path_buf()], cfg.clone()).unwrap(),
        ));
    }
    let mut s = Seqs(f, BTreeMap::new());
    run_files(&[path.to_path_buf()], cfg.clone(), &mut s, &mut |_, _| {}).unwrap();
    s.1
}

/// `never_acked` and `rtt` select, flow by flow, the sequences `analyze`'s ack analysis
/// settled so: as many round trips as it timed, and every captured sequence of its
/// never-acked runs — in the engine, in `dissect --filter` and in the TUI.
#[test]
fn ack_verdicts_select_what_analyze_counts() {
    let path = root().join("tests/fixtures/reliable/capture.pcap");
    let cfg = config("reliable.kdl");
    let report = analyze(&path, &cfg);
    let mut app = tui(&path, &cfg);
    let mut never = 0;
    for fl in &report.flows {
        let Some(acks) = &fl.acks else { continue };
        let dir = format!("src {} && dst {}", fl.src, fl.dst);
        let captured: BTreeSet<u64> = sequences(&path, &cfg, &dir).into_values().collect();
        let runs: BTreeSet<u64> = acks
            .never_acked_runs
            .iter()
            .flat_map(|&(a, b)| (a..=b).map(|s| s & 0xffff))
            .collect();
        assert!(acks.never_acked_runs.len() < 256, "every run is listed");
        let want: BTreeSet<u64> = runs.intersection(&captured).copied().collect();
        let text = format!("never_acked && {dir}");
        let got: BTreeSet<u64> = sequences(&path, &cfg, &text).into_values().collect();
        assert_eq!(got, want, "`{text}`");
        let timed: BTreeSet<u64> = sequences(&path, &cfg, &format!("rtt >= 0 && {dir}"))
            .into_values()
            .collect();
        assert_eq!(
            timed.len() as u64,
            acks.rtt_ms.unwrap().samples,
            "rtt samples of {dir}"
        );
        assert!(timed.is_disjoint(&got));
        never += got.len();
        for text in [
            text,
            format!("rtt > 1.5 && {dir}"),
            format!("!never_acked && !(rtt >= 0) && {dir}"),
        ] {
            let f = Filter::parse(&text, cfg.program.as_deref()).unwrap();
            let by_engine = engine(&path, &cfg, &f);
            assert_eq!(
                by_engine,
                dissect_cli(&path, "reliable.kdl", &text),
                "`{text}`: dissect"
            );
            assert_eq!(by_engine, tui_selection(&mut app, &text), "`{text}`: TUI");
        }
    }
    assert!(never > 20, "only {never} never-acked sequences were captured");
    // Without ack roles the words are refused, and say why.
    let e = Filter::parse("rtt > 5", config("article.kdl").program.as_deref()).unwrap_err();
    assert!(e.message.contains("ack and ack-bits roles"), "{}", e.message);
}

#[test]
fn reassembled_packets_are_packets() {
    let path = root().join("captures/lossy-bursts.pcap");
    let cfg = config("article.kdl");
    let scene = Filter::parse("type == scene && reassembled", cfg.program.as_deref()).unwrap();
    // The report's reassembled count, the engine's events and the filter agree.
    let report = {
        let mut a = gpcap::analysis::Analyzer::new(cfg.clone());
        let mut r = gpcap::capture::CaptureReader::open(&path).unwrap();
        a.begin_file("lossy-bursts.pcap");
        while let Ok(Some(f)) = r.next_frame() {
            a.frame(&f);
        }
        a.finish()
    };
    let all = Filter::parse("reassembled", None).unwrap();
    assert_eq!(
        engine(&path, &cfg, &all).len() as u64,
        report.reassembly.completed
    );
    assert_eq!(report.reassembly.completed, 89);
    let scenes = engine(&path, &cfg, &scene);
    let by_type: u64 = report
        .flows
        .iter()
        .map(|f| f.reassembled_types.get(4).copied().unwrap_or(0))
        .sum();
    assert_eq!(scenes.len() as u64, by_type);
    assert!(!scenes.is_empty());
}

#[test]
fn fault_kinds_are_spelled_one_way() {
    let codes: Vec<&str> = gpcap::dissect::FaultKind::ALL.iter().map(|k| k.code()).collect();
    assert!(codes.contains(&"nonzero_padding"));
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(root())
        .args([
            "dissect",
            "captures/malformed.pcap",
            "-d",
            "dissectors/article.kdl",
            "--json",
            "--filter",
            "malformed",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: BTreeSet<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["fault"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert!(!kinds.is_empty());
    for k in &kinds {
        assert!(codes.contains(&k.as_str()), "dissect --json says `{k}`");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(root())
        .args([
            "analyze",
            "captures/malformed.pcap",
            "-d",
            "dissectors/article.kdl",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let causes = v["malformed"]["by_cause"].as_object().unwrap();
    for k in causes.keys() {
        assert!(codes.contains(&k.as_str()), "analyze --json says `{k}`");
        assert!(kinds.contains(k), "analyze says `{k}`, dissect does not");
    }
    // The serialized kind is the code, whatever the variant's name.
    assert_eq!(
        serde_json::to_string(&gpcap::dissect::FaultKind::NonZeroPadding).unwrap(),
        "\"nonzero_padding\""
    );
}

mod random_field_filters {
    use super::*;
    use gpcap::dissect::{Holds, catalog};
    use proptest::prelude::*;

    /// A comparison of a dissected field of the article's definition: any path the
    /// catalog lists, an operator, a value of its kind, `all` now and then.
    fn term(paths: Vec<(String, Holds)>) -> impl Strategy<Value = String> {
        let n = paths.len();
        (0..n, 0..6usize, -40i64..1200, any::<bool>(), 0..8u8).prop_map(move |(i, op, v, b, q)| {
            let (path, holds) = &paths[i];
            let ops = ["==", "!=", "<", "<=", ">", ">="];
            let all = if q == 0 { "all " } else { "" };
            match holds {
                Holds::Bool => format!("{all}{path} {} {b}", ops[op % 2]),
                Holds::Float { .. } | Holds::Double => {
                    format!("{all}{path} {} {}", ops[op], v as f64 / 1.7)
                }
                Holds::Text | Holds::Bytes => format!(
                    "{path} contains \"{}\"",
                    (b'a' + (v.rem_euclid(26)) as u8) as char
                ),
                Holds::Group => path.clone(),
                Holds::Int { .. } => format!("{all}{path} {} {}", ops[op], v.rem_euclid(70)),
            }
        })
    }

    fn filters() -> impl Strategy<Value = String> {
        let cfg = config("article.kdl");
        let paths: Vec<(String, Holds)> = catalog(cfg.program.as_deref().unwrap())
            .into_iter()
            .map(|e| (e.path, e.holds))
            .collect();
        (term(paths.clone()), term(paths), 0..4u8).prop_map(|(a, b, join)| match join {
            0 => a,
            1 => format!("{a} && {b}"),
            2 => format!("{a} || {b}"),
            _ => format!("!({a}) && reassembled"),
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// For random filters over dissected fields, the TUI, `dissect --filter` and the
        /// engine select the same packets.
        #[test]
        fn tui_dissect_and_engine_agree(text in filters()) {
            thread_local! {
                static APP: std::cell::RefCell<Option<App>> = const { std::cell::RefCell::new(None) };
            }
            let path = root().join("captures/lossy-bursts.pcap");
            let cfg = config("article.kdl");
            let filter = Filter::parse(&text, cfg.program.as_deref()).unwrap();
            let by_engine = engine(&path, &cfg, &filter);
            let by_dissect = dissect_cli(&path, "article.kdl", &text);
            let by_tui = APP.with(|a| {
                let mut a = a.borrow_mut();
                let app = a.get_or_insert_with(|| tui(&path, &cfg));
                tui_selection(app, &text)
            });
            prop_assert_eq!(&by_engine, &by_dissect, "`{}`: engine vs dissect --filter", text);
            prop_assert_eq!(&by_engine, &by_tui, "`{}`: engine vs the TUI", text);
        }
    }
}
