//! The run layer: a sink says what it needs of the engine and when the run stops; every
//! run mode gives the report one core gives; the engine names no sink.

use gpcap::run::{Mode, RunError, run_files};
use gpcap::{Config, Flow, Needs, PacketEvent, Sink, SinkError, Summary};
use std::path::{Path, PathBuf};

fn article() -> Config {
    Config::from_program(gpcap::load_definition("dissectors/article.kdl").unwrap())
}

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("captures").join(name)
}

/// Counts game packets, and those that came with a field tree; stops at `stop_at`
/// frames when given.
struct Trees {
    fields: bool,
    stop_at: Option<u64>,
    game: u64,
    with_tree: u64,
    last_frame: (u32, u64),
}

impl Trees {
    fn new(fields: bool, stop_at: Option<u64>) -> Self {
        Trees {
            fields,
            stop_at,
            game: 0,
            with_tree: 0,
            last_frame: (0, 0),
        }
    }
}

impl Sink for Trees {
    fn needs(&self) -> Needs {
        Needs {
            fields: self.fields,
            layers: None,
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.last_frame = (e.file, e.frame);
        if e.is_game() {
            self.game += 1;
            self.with_tree += e.dissection.is_some() as u64;
        }
        Ok(Flow::stop_if(self.stop_at.is_some_and(|n| e.frame >= n)))
    }
}

/// The engine records field trees for a sink that says it needs them, and only then.
#[test]
fn the_engine_records_fields_only_for_a_sink_that_needs_them() {
    let paths = [capture("article.pcap")];
    let mut bare = Trees::new(false, None);
    run_files(&paths, article(), &mut bare, &mut |_, _| {}).unwrap();
    let mut recorded = Trees::new(true, None);
    run_files(&paths, article(), &mut recorded, &mut |_, _| {}).unwrap();
    assert!(bare.game > 100, "{} game packets", bare.game);
    assert_eq!(bare.with_tree, 0);
    assert_eq!(recorded.game, bare.game);
    assert_eq!(recorded.with_tree, recorded.game);
    // Two sinks together need what either needs.
    let mut pair = (Trees::new(false, None), Trees::new(true, None));
    run_files(&paths, article(), &mut pair, &mut |_, _| {}).unwrap();
    assert_eq!((pair.0.with_tree, pair.1.with_tree), (bare.game, bare.game));
}

/// `Flow::Stop` ends the run after the frame it was said on: the rest of the capture
/// and the captures after it are not read.
#[test]
fn a_sink_that_says_stop_ends_the_run_after_that_frame() {
    let paths = [capture("article.pcap"), capture("clean.pcap")];
    let mut s = Trees::new(false, Some(25));
    let out = run_files(&paths, article(), &mut s, &mut |_, _| {}).unwrap();
    assert_eq!(out.len(), 1, "the second capture is not opened");
    assert_eq!(out[0].frames, 25);
    assert_eq!(s.last_frame, (0, 25));
    // A stop from either sink of a pair stops both.
    let mut pair = (Trees::new(false, None), Trees::new(false, Some(7)));
    let out = run_files(&paths, article(), &mut pair, &mut |_, _| {}).unwrap();
    assert_eq!(out[0].frames, 7);
    assert_eq!(pair.0.last_frame, (0, 7));
}

/// A sink whose write fails at frame `at`: it says so with its error.
struct FailsAt {
    at: u64,
    after: u64,
    finished: bool,
}

impl Sink for FailsAt {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.frame > self.at {
            self.after += 1;
        }
        if e.frame == self.at {
            return Err(SinkError::new(std::io::Error::other("disk full")));
        }
        Ok(Flow::Continue)
    }
    fn finish(&mut self, _: &Summary) {
        self.finished = true;
    }
}

/// A sink that fails ends the run with its own error, found again by its type: nothing
/// more is read, handed to it or to the sink beside it, and the run is not finished
/// (no caller asks the sink afterwards whether it failed).
#[test]
fn a_sink_that_fails_ends_the_run_with_its_error() {
    let paths = [capture("article.pcap"), capture("clean.pcap")];
    let fails = || FailsAt {
        at: 40,
        after: 0,
        finished: false,
    };
    let mut s = fails();
    let Err(RunError::Sink(e)) = run_files(&paths, article(), &mut s, &mut |_, _| {}) else {
        panic!("the run ended without the sink's error");
    };
    assert_eq!(e.to_string(), "disk full");
    let io = e.downcast::<std::io::Error>().expect("the sink's own error");
    assert_eq!(io.kind(), std::io::ErrorKind::Other);
    assert_eq!((s.after, s.finished), (0, false));
    // In a pair, the second sink is handed nothing more either.
    let mut pair = (fails(), Trees::new(false, None));
    let ran = run_files(&paths, article(), &mut pair, &mut |_, _| {});
    assert!(matches!(ran, Err(RunError::Sink(_))));
    assert_eq!(pair.1.last_frame, (0, 39));
}

/// Serial, pipelined and sharded runs, chosen by hand, give the same report.
#[test]
fn every_run_mode_gives_the_serial_report() {
    for name in ["article.pcap", "lossy-bursts.pcap"] {
        let paths = [capture(name)];
        let json = |mode| {
            let r = gpcap::run::analyze(&paths, article(), mode, &mut |_, _| {}).unwrap();
            serde_json::to_value(r).unwrap()
        };
        let serial = json(Mode::Serial);
        assert_eq!(json(Mode::Pipelined(2)), serial, "{name} pipelined");
        assert_eq!(json(Mode::Sharded(3)), serial, "{name} sharded");
    }
}

/// Small inputs run on one core whatever the threads asked for.
#[test]
fn small_inputs_run_serially() {
    let paths = [capture("article.pcap")];
    assert_eq!(Mode::choose(&paths, &article(), Some(4)), Mode::Serial);
    assert_eq!(Mode::choose(&paths, &article(), None), Mode::Serial);
}

/// The engine imports no sink: sinks and runs are built on it, never the other way. Its
/// crate cannot depend on `gpcap` (that would be a cycle); this also keeps it from
/// naming them in words a re-export could bring back.
#[test]
fn the_engine_names_no_sink() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("crates/engine/Cargo.toml")).unwrap();
    assert!(
        !manifest.lines().any(|l| l.trim_start().starts_with("gpcap ")),
        "the engine's crate depends on gpcap"
    );
    let dir = root.join("crates/engine/src");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        files += 1;
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in ["sinks::", "crate::analysis", "crate::run", "Statistics"] {
                assert!(
                    !code.contains(name),
                    "{}:{}: the engine names `{name}`: {line}",
                    path.display(),
                    i + 1
                );
            }
        }
    }
    assert!(files > 10, "{files} files in crates/engine/src");
}
