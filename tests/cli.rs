//! The command line as a user types it: exit codes, gates, errors that name the file,
//! dissect's filter and JSON, and the two README commands' main job.

mod common;
use std::process::Command;

use common::gpcap_run as gpcap;

#[test]
fn quick_start_needs_no_configuration() {
    let (code, out, _) = gpcap(&["analyze", "captures/article.pcap"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("Protocol id 0x55667788 identified from the traffic"),
        "{out}"
    );
    assert!(out.contains("│ crc_ok                    ┆ 1156"), "{out}");
}

#[test]
fn gates_exit_3_and_say_why() {
    let (code, _, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--fail-on",
        "crc,mtu",
        "captures/article.pcap",
    ]);
    assert_eq!(code, 3);
    assert!(
        err.contains("gate failed: crc: 7 datagrams failed the CRC"),
        "{err}"
    );
    assert!(
        err.contains("gate failed: mtu: 30 payloads over the 1200-byte budget, 21 IP-fragmented"),
        "{err}"
    );
    let (code, _, _) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--fail-on",
        "frag-loss=0.05",
        "captures/clean.pcap",
    ]);
    assert_eq!(code, 0);
    let (code, _, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--fail-on",
        "frag-loss=0.01",
        "captures/lossy-bursts.pcap",
    ]);
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--fail-on",
        "bogus",
        "captures/clean.pcap",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown --fail-on gate `bogus`"), "{err}");
}

#[test]
fn unreadable_input_is_one_line_naming_file_and_offset() {
    let (code, _, err) = gpcap(&["analyze", "--protocol-id", "0x55667788", "Cargo.toml"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        "gpcap: Cargo.toml: not a pcap or pcapng file (unknown magic) at byte offset 0 (after frame 0)"
    );
    let (code, _, err) = gpcap(&["analyze", "--protocol-id", "0x55667788", "no/such.pcap"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("gpcap: no/such.pcap: cannot open"), "{err}");
}

#[test]
fn check_reports_diagnostics_and_exit_1() {
    let (code, out, _) = gpcap(&["check", "dissectors/example-shooter.kdl"]);
    assert_eq!(code, 0, "{out}");
    let dir = std::env::temp_dir().join(format!("gpcap-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.kdl");
    std::fs::write(&bad, "header {\n    bits crc 32 role=crc\n    bits sequence 16 role=sequence\n    int type 0 5 role=type\n}\npacket 1 \"A\" {\n    flaot x\n}\n").unwrap();
    let (code, _, err) = gpcap(&["check", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("bad.kdl:7:5: unknown primitive or struct `flaot`"),
        "{err}"
    );
    assert!(err.contains("did you mean `float`?"), "{err}");
    // Regression (a new user's trial): one unclosed block gave five follow-on errors, two
    // of which printed the rest of the file (158 lines); each now shows its first line.
    let article = std::fs::read_to_string("dissectors/article.kdl").unwrap();
    std::fs::write(
        &bad,
        article.replace("    int a -10 10\n", "    int a -10 10 {{\n"),
    )
    .unwrap();
    let (code, _, err) = gpcap(&["check", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.starts_with(&format!("{}:39:19: ", bad.display())), "{err}");
    assert!(
        err.lines().count() < 60 && !err.contains("packet 2 \"B\""),
        "{err}"
    );
    // Regression (a new user's trial): a directory was a definition error at `DIR:1:1`
    // (exit 1); it cannot be read, as a missing file cannot (exit 2).
    let (code, _, err) = gpcap(&["check", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("gpcap: {}: ", dir.display())) && !err.contains(":1:1"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dissect_filters_and_shows_reassembled_packets() {
    let (code, out, _) = gpcap(&[
        "dissect",
        "captures/article.pcap",
        "-d",
        "dissectors/article.kdl",
        "--filter",
        "seq == 100 && (frag || reassembled)",
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        out.matches("\nFrame ").count() + out.starts_with("Frame ") as usize,
        4,
        "{out}"
    );
    assert!(
        out.contains("[packet reassembled from 3 fragments, completed by this frame]\n[fragments in frames"),
        "{out}"
    );
    assert!(out.contains("article type 2 (B), sequence 100, crc_ok"), "{out}");
    // A reassembled packet is an event like any other: filters see its type and size.
    let (code, out, _) = gpcap(&[
        "dissect",
        "captures/lossy-bursts.pcap",
        "-d",
        "dissectors/article.kdl",
        "--filter",
        "type == scene && reassembled",
    ]);
    assert_eq!(code, 0);
    assert_eq!(out.matches("[packet reassembled from").count(), 89, "{out}");
    let (code, out, _) = gpcap(&[
        "dissect",
        "captures/article.pcap",
        "-d",
        "dissectors/article.kdl",
        "--json",
        "--filter",
        "ipfrag",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let frames = v.as_array().unwrap();
    assert_eq!(frames.len(), 21);
    assert!(frames.iter().all(|f| {
        f["note"]
            .as_str()
            .unwrap()
            .starts_with("reassembled from 2 IP fragments")
    }));
    assert!(frames.iter().all(|f| f["fault"].is_null() && f["crc_ok"] == true));
}

#[test]
fn dissect_shows_the_fault() {
    let (code, out, _) = gpcap(&[
        "dissect",
        "captures/malformed.pcap",
        "-d",
        "dissectors/article.kdl",
        "--filter",
        "malformed",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("[Malformed: past_end at bit"), "{out}");
    assert!(out.contains(" in end_check: past end: needed 32 bits"), "{out}");
}

/// Live capture is in the default build: an interface that does not exist is answered
/// with the list of those that do (no root needed to find that out), exit 2.
#[test]
fn live_on_an_unknown_interface_lists_the_interfaces() {
    let (code, _, err) = gpcap(&["live", "nope0", "--no-tui", "--duration", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no such interface `nope0`; interfaces: "), "{err}");
    assert!(err.contains("lo"), "{err}");
}

/// Without the libpcap feature, `--filter` says what the default build captures
/// instead (the capture itself then goes on, or fails on the interface as here).
#[test]
fn live_filter_in_the_default_build_says_what_is_captured_instead() {
    if cfg!(feature = "libpcap") {
        return;
    }
    let (code, _, err) = gpcap(&[
        "live",
        "nope0",
        "--filter",
        "udp",
        "--port",
        "40000",
        "--no-tui",
        "--duration",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--filter needs the libpcap build (cargo install --path . --features libpcap); capturing instead what gpcap analyzes: UDP on port 40000, IPv4 and IPv6 fragments, ICMP fragmentation-needed and ICMPv6 packet-too-big"),
        "{err}"
    );
}

/// A capture large enough for analyze to shard it over the cores, with loss and
/// reordering, agrees with its truth (gen --check runs analyze the way the CLI does).
#[test]
fn large_capture_sharded_analysis_agrees_with_truth() {
    let dir = std::env::temp_dir().join(format!("gpcap-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("large.pcap");
    let (code, _, err) = gpcap(&[
        "gen",
        "-d",
        "dissectors/article.kdl",
        "-o",
        out.to_str().unwrap(),
        "--clients",
        "16",
        "--duration",
        "60",
        "--loss",
        "0.02",
        "--reorder",
        "0.01",
        "--dup",
        "0.01",
        "--big",
        "0.1",
        "--summary-only",
        "--check",
    ]);
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(size > 8 << 20, "only {size} bytes: not large enough to shard");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("analyze agrees with the ground truth"), "{err}");
}

/// Without a terminal the TUI says so in one line instead of panicking (exit 101).
#[test]
fn tui_without_a_terminal_is_a_clear_error() {
    let (code, out, err) = gpcap(&["tui", "captures/clean.pcap"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.starts_with("gpcap: tui needs a terminal"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Regression (a new user's trial): a filter that does not parse opened the TUI with
    // the error on its status line, where dissect refuses it; refused the same way.
    let (code, _, err) = gpcap(&[
        "tui",
        "captures/article.pcap",
        "-d",
        "dissectors/article.kdl",
        "--filter",
        "seq >",
    ]);
    assert_eq!(code, 2);
    assert_eq!(err.trim(), "gpcap: --filter: column 6: expected a value");
}

/// Regression: dissect exited 0 when its output could not be written (a full disk).
#[test]
fn dissect_fails_when_its_output_cannot_be_written() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        common::skipped(module_path!(), "no /dev/full");
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["dissect", "captures/clean.pcap", "-d", "dissectors/article.kdl"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("stdout") && err.contains("No space left"), "{err}");
    // Regression (a new user's trial): `-w` into a directory that does not exist failed
    // only after every packet had been printed; it fails before the first.
    let (code, out, err) = gpcap(&[
        "dissect",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--brief",
        "-w",
        "/nonexistent/x.pcapng",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("/nonexistent/x.pcapng"), "{err}");
    // A directory is no file to write either (review: its `.partial` was left behind).
    let dir = std::env::temp_dir().join(format!("gpcap-wdir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (code, out, err) = gpcap(&[
        "dissect",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "-w",
        dir.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("it is a directory"), "{err}");
    // With --frame, the frame shown is the frame written (review: it wrote frame 1).
    let one = dir.join("f50.pcapng");
    let (code, out, err) = gpcap(&[
        "dissect",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--brief",
        "--frame",
        "50",
        "-w",
        one.to_str().unwrap(),
    ]);
    assert_eq!((code, out.lines().count()), (0, 1), "{err}");
    assert!(err.contains("wrote 1 frame of 1 packet"), "{err}");
    let (_, again, _) = gpcap(&[
        "dissect",
        one.to_str().unwrap(),
        "-d",
        "dissectors/article.kdl",
        "--brief",
    ]);
    assert_eq!(again.split_once(' ').unwrap().1, out.split_once(' ').unwrap().1);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!std::path::Path::new(&format!("{}.partial", dir.display())).exists());
}

/// Regression: out-of-range flags were accepted (`--vlan 5000` was written as VLAN 904,
/// `--loss 2`, NaN and infinite numbers, zero clients, rates, MTUs and budgets), `dissect
/// --frame` past the end printed nothing with exit 0, and `check` on a missing file
/// exited 1 like a definition error. Each is refused with exit 2, naming the flag.
#[test]
fn flags_out_of_range_are_refused() {
    let generate = ["gen", "-d", "dissectors/article.kdl", "-o", "/nonexistent/x.pcap"];
    let cases: &[(&[&str], &str)] = &[
        (&["--vlan", "5000"], "--vlan"),
        (
            &["--vlan", "5", "--linktype", "raw"],
            "--vlan needs --linktype ethernet",
        ),
        (&["--loss", "2"], "--loss"),
        (&["--loss", "NaN"], "--loss"),
        (&["--dup=-0.1"], "--dup"),
        (&["--duration", "inf"], "--duration"),
        (&["--clients", "0"], "--clients"),
        (&["--rate", "0"], "--rate"),
        (&["--jitter", "NaN"], "--jitter"),
    ];
    for (extra, says) in cases {
        let args: Vec<&str> = generate.iter().chain(extra.iter()).copied().collect();
        let (code, _, err) = gpcap(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let analyze: &[(&[&str], &str)] = &[
        (&["--mtu", "0"], "--mtu"),
        (&["--link-mtu", "10"], "--link-mtu"),
        (&["--fail-on", "frag-loss=NaN"], "frag-loss"),
        (&["--fail-on=frag-loss=-1"], "frag-loss"),
        (&["--fail-on", "frag-loss=5"], "frag-loss"),
        (&["--reassembly-memory", "0"], "--reassembly-memory"),
    ];
    for (extra, says) in analyze {
        let args: Vec<&str> = ["analyze", "captures/clean.pcap"]
            .iter()
            .chain(extra.iter())
            .copied()
            .collect();
        let (code, _, err) = gpcap(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let (code, _, err) = gpcap(&[
        "dissect",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--frame",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("numbered from 1"), "{err}");
    let (code, out, err) = gpcap(&[
        "dissect",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--frame",
        "99999",
    ]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("has 1558 frames"), "{err}");
    let (code, _, err) = gpcap(&["check", "no-such-definition.kdl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no-such-definition.kdl"), "{err}");
}

/// Regression: `gen` on a full disk left a partial capture and an empty truth file
/// behind. Both are written under temporary names and renamed only when complete.
#[test]
fn gen_leaves_nothing_behind_when_it_fails() {
    let dir = std::env::temp_dir().join(format!("gpcap-gen-fail-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("x.pcap.truth.jsonl")).unwrap();
    let out = dir.join("x.pcap");
    let run = |out: &std::path::Path| {
        gpcap(&[
            "gen",
            "-d",
            "dissectors/article.kdl",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "5",
        ])
    };
    // The truth file cannot be created (a directory has its name).
    let (code, _, err) = run(&out);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("x.pcap.truth.jsonl"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["x.pcap.truth.jsonl"], "left behind: {left:?}");
    // A disk that fills up while writing (a 64 KiB tmpfs; mounting needs root).
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs", small.to_str().unwrap()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        let (code, _, err) = run(&small.join("y.pcap"));
        let left = std::fs::read_dir(&small).unwrap().count();
        let _ = Command::new("umount").arg(&small).status();
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("y.pcap") && err.contains("No space left"), "{err}");
        assert_eq!(left, 0, "files left on the full disk");
    } else {
        common::skipped(
            module_path!(),
            "cannot mount a small tmpfs (needs root): full-disk case not run",
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression (#17, item 14): a definition that does not fit the capture said nothing
/// but its 100% CRC mismatch; it now names the id the traffic validates with.
#[test]
fn a_wrong_protocol_id_gets_the_identified_one_as_a_hint() {
    let (code, out, err) = gpcap(&["analyze", "--protocol-id", "0x12345678", "captures/clean.pcap"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("│ crc_ok                    ┆ 0"), "{out}");
    assert!(
        err.contains("no datagram passed the CRC with protocol id 0x12345678")
            && err.contains("validate with 0x55667788")
            && err.contains("--protocol-id 0x55667788"),
        "{err}"
    );
}

/// Regression (#17, item 14): ordinary traffic without a game protocol got only "no
/// protocol found"; it now gets the capture summary and its UDP conversations.
#[test]
fn traffic_without_a_game_protocol_gets_its_conversations() {
    use std::net::SocketAddr;
    let path = std::env::temp_dir().join(format!("gpcap-dns-{}.pcap", std::process::id()));
    let a: SocketAddr = "10.0.0.1:5353".parse().unwrap();
    let b: SocketAddr = "10.0.0.2:53".parse().unwrap();
    common::udp_capture(
        &path,
        (0..30u32).map(|k| {
            let (src, dst) = if k % 3 == 0 { (b, a) } else { (a, b) };
            (src, dst, (0..40 + k).map(|i| (i * 7 + k) as u8).collect())
        }),
    );
    let p = path.to_str().unwrap();
    let (code, out, err) = gpcap(&["analyze", p]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("UDP conversations"), "{out}");
    assert!(
        out.contains("│ 10.0.0.1:5353 → 10.0.0.2:53 ┆        20 ┆"),
        "{out}"
    );
    assert!(
        out.contains("│ 10.0.0.2:53 → 10.0.0.1:5353 ┆        10 ┆"),
        "{out}"
    );
    assert!(
        out.contains("No game protocol found: none of 30 sampled datagrams in 2 flows"),
        "{out}"
    );
    let (code, out, _) = gpcap(&["analyze", "--json", p]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["protocol"], serde_json::Value::Null);
    assert_eq!(v["conversations"][0]["datagrams"], 20);
    assert_eq!(v["capture"]["udp_datagrams"], 30);
    let _ = std::fs::remove_file(&path);
}

/// Regression (#17, item 15): several captures were merged by 4-tuple without a word.
/// Now the merge is said (stderr and the files row), and `--per-file` reports each
/// capture exactly as it is alone.
#[test]
fn several_captures_say_how_they_combine() {
    let two = ["captures/clean.pcap", "captures/lossy-bursts.pcap"];
    // These two overlap in time: read as one trace they are refused (tests/fit.rs), and
    // the note that they were read as one is not said before the refusal (a new user's
    // trial found the two contradicting each other).
    let (code, _, err) = gpcap(&["analyze", "-d", "dissectors/article.kdl", two[0], two[1]]);
    assert_eq!(code, 2);
    assert!(!err.contains("analyzed as one trace"), "{err}");
    assert!(err.contains("overlap in time"), "{err}");
    let apart = ["captures/article.pcap", "captures/clean.pcap"];
    let (code, _, err) = gpcap(&["analyze", "-d", "dissectors/article.kdl", apart[0], apart[1]]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("2 captures analyzed as one trace in the order given"),
        "{err}"
    );
    let (code, out, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--per-file",
        "--json",
        two[0],
        two[1],
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("one trace"), "{err}");
    let per_file: serde_json::Value = serde_json::from_str(&out).unwrap();
    for (i, file) in two.iter().enumerate() {
        let (_, alone, _) = gpcap(&["analyze", "-d", "dissectors/article.kdl", "--json", file]);
        let alone: serde_json::Value = serde_json::from_str(&alone).unwrap();
        assert_eq!(per_file[i], alone, "{file}");
    }
    let (_, text, _) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--per-file",
        two[0],
        two[1],
    ]);
    assert!(
        text.starts_with("== captures/clean.pcap\n") && text.contains("\n== captures/lossy-bursts.pcap\n")
    );
}

/// Regression (#17, item 16): `dissect --json` was indented (1.5 GB for a 5.7 MB capture)
/// and named things unlike `analyze --json` (`flow` "a → b", float `time`). Now one
/// compact object per line (`--jsonl`), the same objects in an array for `--json`, with
/// `src`/`dst`/`ts_ns`/`size` as `analyze` names them.
#[test]
fn dissect_json_is_streamable_and_shaped_like_analyze() {
    let base = ["dissect", "captures/clean.pcap", "-d", "dissectors/article.kdl"];
    let (code, lines, _) = gpcap(&[&base[..], &["--jsonl"]].concat());
    assert_eq!(code, 0);
    let (_, array, _) = gpcap(&[&base[..], &["--json"]].concat());
    let array: Vec<serde_json::Value> = serde_json::from_str(&array).unwrap();
    let objects: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(objects.len(), 1589);
    assert_eq!(objects, array);
    let (_, report, _) = gpcap(&[
        "analyze",
        "--json",
        "-d",
        "dissectors/article.kdl",
        "captures/clean.pcap",
    ]);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let flow = &report["flows"][0];
    let first = objects
        .iter()
        .find(|o| o["src"] == flow["src"] && o["dst"] == flow["dst"])
        .unwrap();
    assert_eq!(first["ts_ns"], flow["first_ns"]);
    for key in ["flow", "time", "length"] {
        assert!(first.get(key).is_none(), "{key}");
    }
    let bytes: u64 = objects
        .iter()
        .filter(|o| o["src"] == flow["src"] && o["dst"] == flow["dst"] && o.get("fragment_frames").is_none())
        .map(|o| o["size"].as_u64().unwrap())
        .sum();
    assert_eq!(bytes, flow["bytes"].as_u64().unwrap());
}

/// Regression (#17, item 17): compressed floats printed with f32 noise (`-9.080002`,
/// `6.6500015`); they print at their resolution, in the tree and in JSON.
#[test]
fn compressed_floats_print_at_their_resolution() {
    let base = [
        "dissect",
        "captures/ipv6-sll2.pcapng",
        "-d",
        "dissectors/example-shooter.kdl",
    ];
    let (_, tree, _) = gpcap(&base);
    assert!(
        tree.contains("= yaw: -146.31  [bit 69, 16 bits]"),
        "{}",
        &tree[..2000]
    );
    assert!(tree.contains("velocity: (-31.15, -2.50, -28.70)  [bit 427, 33 bits]"));
    // yaw is -180..180 by 0.01: two decimals, never f32 noise such as -146.30999.
    let yaws: Vec<&str> = tree.lines().filter_map(|l| l.split("= yaw: ").nth(1)).collect();
    assert!(yaws.len() > 20, "{} yaws", yaws.len());
    for y in &yaws {
        let v = y.split_whitespace().next().unwrap();
        assert_eq!(v.split('.').nth(1).map(str::len), Some(2), "{y}");
    }
    let (_, json, _) = gpcap(&[&base[..], &["--jsonl"]].concat());
    assert!(json.contains(r#""value":-146.31"#) && json.contains("[-31.15,-2.5,-28.7]"));
}

/// #13: a protocol without a checksum is generated, recognised by its header alone
/// (no identification is attempted) and analyzed exactly as its truth says.
#[test]
fn a_protocol_without_a_checksum_is_analyzed_exactly() {
    let out = std::env::temp_dir().join(format!("gpcap-plain-{}.pcap", std::process::id()));
    let o = out.to_str().unwrap();
    let (code, _, err) = gpcap(&[
        "gen",
        "-d",
        "tests/fixtures/no-checksum.kdl",
        "-o",
        o,
        "--duration",
        "5",
        "--clients",
        "2",
        "--loss",
        "0.03",
        "--big",
        "0.3",
        "--check",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("analyze agrees with the ground truth"), "{err}");
    let (code, json, err) = gpcap(&["analyze", "--json", "-d", "tests/fixtures/no-checksum.kdl", o]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["protocol"]["checksum"], "none");
    assert_eq!(r["identification"], serde_json::Value::Null);
    assert_eq!(r["validation"]["crc_mismatch"], 0);
    assert!(r["validation"]["fragments"].as_u64().unwrap() > 50);
    assert!(r["reassembly"]["completed"].as_u64().unwrap() > 10);
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(format!("{o}.truth.jsonl"));
}

#[test]
fn dissect_write_keeps_every_fragment_of_a_selected_packet() {
    let dir = std::env::temp_dir().join(format!("gpcap-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("resting.pcapng");
    let filter = "scene.objects.at_rest == true && reassembled";
    let (code, shown, err) = gpcap(&[
        "dissect",
        "captures/lossy-bursts.pcap",
        "-d",
        "dissectors/article.kdl",
        "--brief",
        "--filter",
        filter,
        "--write",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(shown.lines().count(), 89);
    assert!(err.contains("wrote 462 frames of 89 packets"), "{err}");
    // The written capture reassembles the same packets again, and nothing else.
    let (code, json, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["capture"]["frames"], 462);
    assert_eq!(r["reassembly"]["completed"], 89);
    assert_eq!(r["reassembly"]["packets_seen"], 89);
    let (_, again, _) = gpcap(&[
        "dissect",
        out.to_str().unwrap(),
        "-d",
        "dissectors/article.kdl",
        "--brief",
        "--filter",
        filter,
    ]);
    assert_eq!(again.lines().count(), 89);
    // A write that cannot be made leaves nothing behind and says where.
    let (code, _, err) = gpcap(&[
        "dissect",
        "captures/lossy-bursts.pcap",
        "-d",
        "dissectors/article.kdl",
        "--brief",
        "--filter",
        "reassembled",
        "--write",
        "/nonexistent-dir/x.pcapng",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent-dir/x.pcapng"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression (a new user's trial): a definition whose ports the capture never uses said
/// "Fit: good" over 0 datagrams, and `--fail-on fit` passed. Nothing was judged: the fit
/// says so and why, a hint names the id and ports the traffic validates with, and a gate
/// has nothing to gate (exit 2).
#[test]
fn a_definition_that_meets_no_datagram_is_not_said_to_fit() {
    let base = [
        "analyze",
        "captures/clean.pcap",
        "-d",
        "dissectors/example-shooter.kdl",
    ];
    let (code, out, err) = gpcap(&[&base[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["fit"]["verdict"], "nothing_judged");
    assert_eq!(
        v["fit"]["rests_on"][0],
        "none of the 1558 UDP datagrams is on the protocol's ports (27015 27016)"
    );
    assert!(
        err.contains("no datagram on the definition's ports, and 96 of 96 sampled datagrams validate with another protocol id, 0x55667788 (ports 40000 50000 50001)"),
        "{err}"
    );
    let (code, out, err) = gpcap(&[&base[..], &["--fail-on", "fit"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(out.starts_with("Fit: nothing judged\n"), "{out}");
    assert!(
        err.contains("gpcap: nothing to gate: none of the 1558 UDP datagrams is on the protocol's ports"),
        "{err}"
    );
    // The right id on the wrong port: the hint names the ports to pass.
    let (code, _, err) = gpcap(&[
        "analyze",
        "captures/clean.pcap",
        "-d",
        "dissectors/article.kdl",
        "--port",
        "9",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("validate with its id 0x55667788 on ports 40000 50000 50001: check the definition's `ports`, or pass --port 40000 --port 50000 --port 50001"),
        "{err}"
    );
    // With --per-file each capture is gated on its own: a gate crossed in one (3) is
    // said and wins over nothing to gate in another (2), which is said too.
    let dns = std::env::temp_dir().join(format!("gpcap-dns-gate-{}.pcap", std::process::id()));
    let (a, b): (std::net::SocketAddr, std::net::SocketAddr) =
        ("10.0.0.1:5353".parse().unwrap(), "10.0.0.2:53".parse().unwrap());
    common::udp_capture(&dns, (0..30u32).map(|k| (a, b, vec![k as u8; 40])));
    let d = dns.to_str().unwrap();
    let gated = [
        "analyze",
        "-d",
        "dissectors/article.kdl",
        "--per-file",
        "--fail-on",
        "crc",
    ];
    let (code, _, err) = gpcap(&[&gated[..], &["captures/article.pcap", d]].concat());
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("gate failed: captures/article.pcap: crc: 7 datagrams failed the CRC"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "nothing to gate: {d}: none of the 30 UDP datagrams is on the protocol's ports"
        )),
        "{err}"
    );
    let (code, _, err) = gpcap(&[&gated[..], &[d]].concat());
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_file(&dns);
}

/// Regression (a new user's trial): a capture cut inside a record, or with a corrupt
/// record, exited 0 from analyze, dissect and export (tcpdump exits 1, tshark 2), so a
/// pipeline could not tell frames were lost; identify did not mention it at all. Each
/// shows what was read, names where reading stopped, and exits 2.
#[test]
fn a_capture_read_only_in_part_exits_2_after_what_was_read() {
    let dir = std::env::temp_dir().join(format!("gpcap-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let whole =
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/clean.pcap")).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &whole[..5000]).unwrap();
    let c = cut.to_str().unwrap();
    let tail = "cut.pcap: last record truncated (17 bytes of an incomplete record) at byte offset 4983 (after frame 54)";
    let (code, out, err) = gpcap(&["analyze", "-d", "dissectors/article.kdl", c, "--json"]);
    assert_eq!(code, 2, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["capture"]["frames"], 54);
    assert!(err.contains(tail), "{err}");
    let (code, out, err) = gpcap(&["dissect", "-d", "dissectors/article.kdl", c, "--brief"]);
    assert_eq!((code, out.lines().count()), (2, 54), "{err}");
    assert!(err.contains(tail), "{err}");
    let (code, out, err) = gpcap(&["identify", c]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("0x55667788") && err.contains(tail), "{out}{err}");
    let ds = dir.join("ds");
    let (code, _, err) = gpcap(&[
        "export",
        "-d",
        "dissectors/article.kdl",
        c,
        "-o",
        ds.to_str().unwrap(),
    ]);
    if !err.contains("not compiled in") {
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(tail) && err.contains("cut.pcap: 54 frames"), "{err}");
        assert!(
            ds.join("capture=cut.pcap/packets/part-0.parquet").exists(),
            "{err}"
        );
    }
    // A file that cannot be opened names no offset: nothing of it was read.
    let (code, _, err) = gpcap(&["analyze", "-d", "dissectors/article.kdl", "/nonexistent/x.pcap"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        "gpcap: /nonexistent/x.pcap: cannot open: No such file or directory (os error 2)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dissect -c N` stops after N packets shown, as tcpdump's and tshark's `-c` do (a new
/// user's trial typed it first), the same on one thread and two, and `-w` writes the
/// frames of those packets. Regression found with it: `-w` also wrote the datagrams on
/// other ports, which dissect does not show ("wrote 1183 frames of 1183 packets" under
/// 1112 packets printed).
#[test]
fn dissect_count_stops_after_n_packets_and_write_takes_only_those_shown() {
    let dir = std::env::temp_dir().join(format!("gpcap-count-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = [
        "dissect",
        "captures/vlan-corrupt.pcap",
        "-d",
        "dissectors/article.kdl",
        "--brief",
    ];
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let to = dir.join(format!("first-{threads}.pcapng"));
        let args = [
            &base[..],
            &["-c", "5", "--threads", threads, "-w", to.to_str().unwrap()],
        ]
        .concat();
        let (code, out, err) = gpcap(&args);
        assert_eq!((code, out.lines().count()), (0, 5), "{err}");
        assert!(err.contains("wrote 5 frames of 5 packets"), "{err}");
        outs.push(out);
    }
    assert_eq!(outs[0], outs[1]);
    let (_, all, _) = gpcap(&base);
    assert!(all.starts_with(&outs[0]));
    let to = dir.join("all.pcapng");
    let (code, out, err) = gpcap(&[&base[..], &["-w", to.to_str().unwrap()]].concat());
    assert_eq!((code, out.lines().count()), (0, 1112), "{err}");
    assert!(err.contains("wrote 1112 frames of 1112 packets"), "{err}");
    let (code, _, err) = gpcap(&[&base[..], &["-c", "0"]].concat());
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Traffic that is not the game's is named by its well-known ports, as Wireshark names
/// it (a new user saw DNS as `udp  udp`): the conversations of a capture without a game
/// protocol, in text and JSON.
#[test]
fn conversations_name_well_known_services() {
    let dir = std::env::temp_dir().join(format!("gpcap-services-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("services.pcap");
    let a: std::net::SocketAddr = "10.0.0.1:53124".parse().unwrap();
    let dns: std::net::SocketAddr = "10.0.0.53:53".parse().unwrap();
    let quic: std::net::SocketAddr = "10.0.0.9:443".parse().unwrap();
    let other: std::net::SocketAddr = "10.0.0.7:41999".parse().unwrap();
    let mut datagrams = Vec::new();
    for k in 0..6u8 {
        datagrams.push((a, dns, vec![k; 30]));
        datagrams.push((a, quic, vec![k; 1200]));
        datagrams.push((a, other, vec![k; 60]));
    }
    common::udp_capture(&path, datagrams);
    let p = path.to_str().unwrap();
    let (_, text, err) = common::gpcap_run(&["analyze", p]);
    assert!(text.contains("UDP conversations"), "{text}{err}");
    let row = |port: &str| {
        text.lines()
            .find(|l| l.contains(port))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("10.0.0.53:53").contains("DNS"), "{text}");
    assert!(row("10.0.0.9:443").contains("QUIC"), "{text}");
    assert!(row("10.0.0.7:41999").contains("┆ -       │"), "{text}");
    let (_, json, _) = common::gpcap_run(&["analyze", p, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let services: Vec<&serde_json::Value> = v["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["service"])
        .collect();
    assert!(services.contains(&&serde_json::json!("DNS")) && services.contains(&&serde_json::json!("QUIC")));
    assert!(services.contains(&&serde_json::Value::Null));
    let _ = std::fs::remove_dir_all(&dir);
}
