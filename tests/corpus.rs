//! Every capture of ../shared/corpus/tcpdump (real and deliberately malformed) is read
//! and analyzed without panic, hang or unbounded memory; unreadable ones get an error
//! naming the file and offset. A few of them live in tests/fixtures/corpus.

mod common;
use gpcap::analysis::{Analyzer, Config};
use gpcap::capture::CaptureReader;
use gpcap::validate::ProtocolId;
use std::path::{Path, PathBuf};

fn analyze(path: &Path) -> Result<u64, String> {
    let cfg = Config {
        protocol_id: Some(ProtocolId::new32(0x5566_7788)),
        any_port: true,
        ..Config::default()
    };
    let mut a = Analyzer::new(cfg);
    let mut r = CaptureReader::open(path).map_err(|e| e.to_string())?;
    a.begin_file(&path.display().to_string());
    let mut err = None;
    loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                a.frame(&f);
            }
            Ok(None) => break,
            Err(e) => {
                err = Some(e.to_string());
                break;
            }
        }
    }
    let report = a.finish();
    match err {
        Some(e) => Err(e),
        None => Ok(report.capture.frames),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn bundled_corpus_samples() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
    let all = files(&dir);
    assert!(!all.is_empty());
    for p in all.iter().filter(|p| !p.to_string_lossy().contains("LICENSE")) {
        let _ = analyze(p);
    }
}

#[test]
fn tcpdump_corpus_never_panics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/tcpdump");
    if !dir.is_dir() {
        common::skipped(module_path!(), &format!("{} is absent", dir.display()));
        return;
    }
    let all: Vec<PathBuf> = files(&dir)
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains("LICENSE"))
        .collect();
    let (mut ok, mut failed) = (0, 0);
    for p in &all {
        match analyze(p) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.contains(&p.display().to_string()), "error names the file: {e}");
                assert!(e.contains("offset"), "error names the offset: {e}");
                failed += 1;
            }
        }
    }
    eprintln!("{} files: {ok} read, {failed} with an error", all.len());
    assert!(ok > all.len() / 2);
}

/// A frame's number, time, link type, original length, offset and bytes.
type FrameRow = (u64, i64, i32, u32, u64, Vec<u8>);

/// Every frame, then how reading ended, as one comparable list.
fn frames_of(mut r: CaptureReader) -> (Vec<FrameRow>, Option<String>, Option<String>) {
    let mut v = Vec::new();
    let err = loop {
        match r.next_frame() {
            Ok(Some(f)) => v.push((
                f.number,
                f.ts_ns,
                f.linktype,
                f.origlen,
                f.offset,
                f.data.to_vec(),
            )),
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    (v, err, r.truncated_tail.map(|t| t.to_string()))
}

/// The classic-pcap fast path reads exactly what the general parser reads: frames,
/// timestamps, offsets, and where and how a cut or broken file ends.
#[test]
fn classic_pcap_fast_path_equals_the_general_parser() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = files(&root.join("captures"));
    all.extend(files(&root.join("tests/fixtures/corpus")));
    let shared = root.join("../shared/corpus/tcpdump");
    if shared.is_dir() {
        all.extend(files(&shared));
    } else {
        eprintln!("SKIPPED part: ../shared/corpus/tcpdump not found; bundled captures only");
    }
    let mut compared = 0;
    for p in &all {
        let (Ok(fast), Ok(general)) = (CaptureReader::open(p), CaptureReader::open_general(p)) else {
            continue;
        };
        let (a, b) = (frames_of(fast), frames_of(general));
        assert_eq!(a.0.len(), b.0.len(), "{}: frame count", p.display());
        assert!(a.0 == b.0, "{}: frames differ", p.display());
        assert_eq!(a.1, b.1, "{}: the error that stopped reading", p.display());
        assert_eq!(a.2, b.2, "{}: end of file", p.display());
        compared += 1;
    }
    assert!(compared > 5);
}

/// A file opened by its path and the same bytes given as a stream read the same way:
/// frames, the error that stops reading and how the file ends, for every bundled classic
/// pcap cut inside its first records, inside its last, and whole.
#[test]
fn a_file_reads_as_the_same_bytes_streamed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = files(&root.join("captures"));
    all.extend(files(&root.join("tests/fixtures/corpus")));
    let tmp = std::env::temp_dir().join(format!("gpcap-opened-{}.pcap", std::process::id()));
    let name = tmp.display().to_string();
    let mut compared = 0;
    for p in &all {
        let bytes = std::fs::read(p).unwrap();
        if !matches!(
            bytes.get(..4),
            Some([0xd4, 0xc3, 0xb2, 0xa1] | [0xa1, 0xb2, 0xc3, 0xd4] | [0x4d, 0x3c, 0xb2, 0xa1])
        ) {
            continue;
        }
        let n = bytes.len();
        let cuts = (0..n.min(300))
            .step_by(7)
            .chain((n.saturating_sub(300)..n).step_by(11))
            .chain([n]);
        for cut in cuts {
            std::fs::write(&tmp, &bytes[..cut]).unwrap();
            let opened = CaptureReader::open(&tmp)
                .map(frames_of)
                .map_err(|e| e.to_string());
            let streamed = CaptureReader::from_read(&name, std::io::Cursor::new(bytes[..cut].to_vec()))
                .map(frames_of)
                .map_err(|e| e.to_string());
            assert!(opened == streamed, "{} cut to {cut} of {n} bytes", p.display());
            compared += 1;
        }
    }
    let _ = std::fs::remove_file(&tmp);
    assert!(compared > 100, "{compared} cuts compared");
}
