//! `analyze --json` is the same byte for byte with definitions compiled to machine code
//! and interpreted (`--no-jit`, `GPCAP_NO_JIT=1`), on every bundled capture and every
//! capture of real libraries in tests/fixtures, with their definitions.

mod common;

use common::huge_definition;
use std::process::Command;

/// `gpcap ARGS` (exit code, stdout, stderr), with `GPCAP_NO_JIT` set or not.
fn gpcap(args: &[&str], env_off: bool) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpcap"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env_remove("GPCAP_NO_JIT");
    if env_off {
        c.env("GPCAP_NO_JIT", "1");
    }
    let out = c.output().unwrap();
    (out.status.code(), out.stdout, out.stderr)
}

/// The same report compiled, with `--no-jit`, and with `GPCAP_NO_JIT=1`.
fn same_either_way(args: &[&str]) {
    let compiled = gpcap(args, false);
    let mut flagged = args.to_vec();
    flagged.push("--no-jit");
    let interpreted = gpcap(&flagged, false);
    let by_env = gpcap(args, true);
    assert_eq!(compiled.0, interpreted.0, "{args:?}: exit codes");
    assert!(!compiled.1.is_empty(), "{args:?}: no report");
    assert!(
        compiled.1 == interpreted.1,
        "{args:?}: --no-jit changes the report"
    );
    assert!(
        compiled.1 == by_env.1,
        "{args:?}: GPCAP_NO_JIT changes the report"
    );
    assert_eq!(compiled.2, interpreted.2, "{args:?}: stderr");
}

#[test]
fn bundled_captures_report_the_same_compiled_or_interpreted() {
    let mut captures: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/captures"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .map(|p| p.display().to_string())
        .collect();
    captures.sort();
    assert!(captures.len() >= 8, "{captures:?}");
    for c in &captures {
        same_either_way(&["analyze", "-d", "dissectors/article.kdl", "--json", c]);
        same_either_way(&[
            "analyze",
            "-d",
            "dissectors/article.kdl",
            "--json",
            "--threads",
            "1",
            c,
        ]);
    }
    same_either_way(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--json",
        "--bits",
        "captures/article.pcap",
    ]);
    same_either_way(&[
        "analyze",
        "-d",
        "dissectors/example-shooter.kdl",
        "--json",
        "--any-port",
        "captures/clean.pcap",
    ]);
}

#[test]
fn library_captures_report_the_same_compiled_or_interpreted() {
    for (defs, capture) in [
        (&["dissectors/enet.kdl"][..], "tests/fixtures/enet/capture.pcap"),
        (
            &["dissectors/reliable.kdl"][..],
            "tests/fixtures/reliable/capture.pcap",
        ),
        (
            &["dissectors/netcode.kdl"][..],
            "tests/fixtures/netcode/capture.pcap",
        ),
        (
            &["dissectors/netcode.kdl", "dissectors/reliable.kdl"][..],
            "tests/fixtures/netcode-reliable/capture.pcap",
        ),
    ] {
        let mut args = vec!["analyze", "--json"];
        for d in defs {
            args.extend(["-d", d]);
        }
        args.push(capture);
        same_either_way(&args);
    }
}

/// A definition too large to compile says so once on stderr and reads as interpreted.
#[test]
fn a_definition_refused_for_compilation_is_said_once() {
    let dir = std::env::temp_dir().join(format!("gpcap-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let def = dir.join("big.kdl");
    std::fs::write(&def, huge_definition()).unwrap();
    let def = def.display().to_string();
    let (code, out, err) = gpcap(&["analyze", "-d", &def, "--json", "captures/article.pcap"], false);
    let err = String::from_utf8_lossy(&err);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("too large to compile").count(), 1, "{err}");
    let (_, interpreted, err) = gpcap(
        &[
            "analyze",
            "-d",
            &def,
            "--json",
            "--no-jit",
            "captures/article.pcap",
        ],
        false,
    );
    assert!(out == interpreted);
    assert!(!String::from_utf8_lossy(&err).contains("compile"));
    let _ = std::fs::remove_dir_all(&dir);
}
