//! The second round of hostile inputs: flags out of range, definitions that expand past
//! the limits, captures that lie, sequences that jump and acks that cannot be matched.
//! Each test reproduces one finding and fails without its fix.

mod common;

use common::gpcap_run as gpcap;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Regression (rows 08, 09, 10, 18): `send --rate 1e-20` panicked in
/// `Duration::from_secs_f64`, `gen --rate 2e9` never ended (its interval rounded to 0 ns),
/// `gen --duration 1e10` overflowed the nanosecond clock and wrote nothing, and `--burst
/// 2,0,0` and `--jitter 1e308` were accepted. Each float flag is refused with exit 2,
/// naming the flag and its range.
#[test]
fn float_flags_out_of_range_are_refused_with_their_range() {
    let send = [
        "send",
        "-d",
        "dissectors/article.kdl",
        "--to",
        "127.0.0.1:9",
        "--packets",
        "1",
    ];
    let gen_ = ["gen", "-d", "dissectors/article.kdl", "-o", "/nonexistent/x.pcap"];
    let cases: &[(&[&str], &[&str], &str)] = &[
        (&send, &["--rate", "1e-20"], "0.001 to 1000000"),
        (&send, &["--rate", "inf"], "--rate"),
        (&gen_, &["--rate", "2e9"], "0.1 to 1000000"),
        (&gen_, &["--duration", "1e10"], "0.001 to 1000000"),
        (&gen_, &["--burst", "2,0,0"], "ENTER `2`"),
        (&gen_, &["--burst", "0.1,0.2"], "--burst"),
        (&gen_, &["--burst", "0.1,x,0.2"], "EXIT"),
        (&gen_, &["--jitter", "1e308"], "0 to 60000"),
        (&gen_, &["--foreign", "1e308"], "0 to 100"),
    ];
    for (cmd, extra, says) in cases {
        let args: Vec<&str> = cmd.iter().chain(extra.iter()).copied().collect();
        let (code, _, err) = gpcap(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says) && err.contains(extra[0]), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Regression (row 10): the largest accepted duration writes the packets asked for.
#[test]
fn gen_long_duration_with_a_packet_cap_writes_the_packets() {
    let dir = temp_dir("gen-long");
    let out = dir.join("g.pcap");
    let (code, _, err) = gpcap(&[
        "gen",
        "-d",
        "dissectors/article.kdl",
        "-o",
        out.to_str().unwrap(),
        "--duration",
        "1000000",
        "--packets",
        "10",
        "--summary-only",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/article.kdl",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["capture"]["frames"].as_u64().unwrap() >= 10, "{}", v["capture"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// Compiles `text`; the diagnostics rendered as text (empty when it compiles).
fn check(text: &str) -> String {
    match gpcap::dissect::compile("t.kdl", text) {
        Ok(_) => String::new(),
        Err(e) => e
            .iter()
            .map(|d| {
                format!(
                    "{}:{}: {} ({})\n",
                    d.line,
                    d.column,
                    d.message,
                    d.help.clone().unwrap_or_default()
                )
            })
            .collect(),
    }
}

/// A definition of the protocol block `proto`, header fields `header` and packet 1 with
/// properties `props` and body `body`.
fn def(proto: &str, header: &str, props: &str, body: &str) -> String {
    format!(
        "protocol \"h\" {{\n    checksum \"none\"\n    ports 40000\n{proto}\n}}\nheader {{\n    bits type 4 role=type\n    bits sequence 12 role=sequence\n{header}\n}}\npacket 1 \"a\" {props} {{\n{body}\n}}\n"
    )
}

/// The nested-struct definition of row 17: `L0` ten bools, each `Lk` ten copies of
/// `L(k-1)`, one packet holding `L(n-1)`: 10^n fields in about a kilobyte.
fn nested_structs(n: u32) -> String {
    let mut d = String::from("struct L0 {\n");
    for i in 0..10 {
        d += &format!("    bool b{i}\n");
    }
    d += "}\n";
    for l in 1..n {
        d += &format!("struct L{l} {{\n");
        for i in 0..10 {
            d += &format!("    L{} x{i}\n", l - 1);
        }
        d += "}\n";
    }
    d + &def("", "", "", &format!("    L{} u", n - 1))
}

/// Regression (row 17): `check` said "ok" to 10^9 fields after 50 s and 8.6 GB, and
/// export of 10^7 was killed at 24 GB. The field limit counts fields as expanded, and the
/// refusal names the struct use that crosses it, at once.
#[test]
fn nested_structs_are_refused_where_they_pass_the_field_limit() {
    assert_eq!(check(&nested_structs(4)), "", "10^4 fields fit");
    for n in [5, 9, 19] {
        let t = std::time::Instant::now();
        let err = check(&nested_structs(n));
        assert!(
            err.contains("past 65535 fields once structs are expanded"),
            "{err}"
        );
        assert!(err.contains("this use of a struct"), "{err}");
        assert!(t.elapsed().as_secs() < 5, "n={n}: {:?}", t.elapsed());
        // At a struct use inside the structs, where the count crosses, not at the packet.
        let text = nested_structs(n);
        let packet_line = text.lines().position(|l| l.starts_with("packet 1")).unwrap() + 1;
        let line: usize = err.split(':').next().unwrap().parse().unwrap();
        assert!(
            line < packet_line && text.lines().nth(line - 1).unwrap().contains(" x"),
            "{err}"
        );
    }
}

/// Regression (row 02): a `sequence-space` naming no declared space was a new per-flow
/// space, silently.
#[test]
fn an_undeclared_sequence_space_is_refused_with_the_nearest() {
    let text = def(
        "    sequence-space \"server-global\" per=\"sender\"",
        "",
        "from=server sequence-space=\"server-globl\"",
        "    rest x",
    );
    let err = check(&text);
    assert!(
        err.contains("sequence space `server-globl` is not declared"),
        "{err}"
    );
    assert!(err.contains("did you mean `server-global`?"), "{err}");
    let err = check(&def("", "", "sequence-space=\"g\"", "    rest x"));
    assert!(err.contains("declare it in the protocol block"), "{err}");
}

/// Regression (row 13): an expression error after escapes or in a raw string put the
/// caret at the decoded text's offset, not the source's.
#[test]
fn expression_errors_point_at_the_source_column() {
    for expr in [
        r#""\t\t\t\t1 + bogus""#,
        r#""\u{31}\u{31}\u{31}\u{31} + bogus""#,
        r##"#"1 + bogus"#"##,
    ] {
        let line = format!("    derived z {expr}");
        let text = def("", &line, "", "    rest x");
        let col = line.find("bogus").unwrap() + 1;
        let err = check(&text);
        assert!(
            err.starts_with(&format!("9:{col}: unknown field `bogus`")),
            "{expr}: {err}"
        );
    }
}

/// Regression (row 14): each was accepted — a 65-bit id (read as 32 bits), a constant
/// division by zero (every packet then malformed), `{{x}}` (shown as `?}`) and an element
/// index of a field that is no list, too large for any.
#[test]
fn check_refuses_what_cannot_work() {
    let cases = [
        (
            def("    id 0x1 bits=65", "", "", "    rest x"),
            "a protocol id is 32 bits",
        ),
        (
            def("    id 0x1ffffffff bits=32", "", "", "    rest x"),
            "a protocol id is 32 bits",
        ),
        (
            def("", "    derived z \"1/0\"", "", "    rest x"),
            "divides by zero",
        ),
        (
            def("", "    derived z \"sequence % (2 - 2)\"", "", "    rest x"),
            "divides by zero",
        ),
        (
            def("", "", "info=\"{{x}}\"", "    rest x"),
            "inside a placeholder",
        ),
        (def("", "", "info=\"x}\"", "    rest x"), "closes no placeholder"),
        (def("", "", "info=\"{x\"", "    rest x"), "never closed"),
        (
            def("", "", "info=\"{x[99999999999999999999]}\"", "    rest x"),
            "is not a list or array",
        ),
        (
            def(
                "",
                "",
                "info=\"{l[99999999999999999999]}\"",
                "    array l 2 {\n        bits v 8\n    }",
            ),
            "is not a number below 65536",
        ),
        // Siblings: constant counts past what any packet can hold.
        (
            def("", "", "", "    array l 1000000000 {\n        bool b\n    }"),
            "over the 65536 elements",
        ),
        (def("", "", "", "    bytes b 70000"), "over the 65535 bytes"),
    ];
    for (text, says) in cases {
        let err = check(&text);
        assert!(err.contains(says), "{text}\n{err}");
    }
    // What stays fine: a 64-bit id, a division by a field, an indexed list element.
    let ok = [
        def("    id 0x1ffffffff bits=64", "", "", "    rest x"),
        def("", "    derived z \"1 / (sequence | 1)\"", "", "    rest x"),
        def(
            "",
            "",
            "info=\"{l[1].v} of {#l}\"",
            "    array l 2 {\n        bits v 8\n    }",
        ),
    ];
    for text in ok {
        assert_eq!(check(&text), "", "{text}");
    }
}

/// Regression (row 21): `role=sequence` on a field of a packet's body passed `check` and
/// was ignored (the sequence stayed the header's: every packet a "dup"). A kind's body
/// may carry the sequence now, never beside the header's on one path.
#[test]
fn roles_that_cannot_take_effect_are_refused() {
    let err = check(&def("", "", "", "    bits seq 16 role=sequence\n    rest x"));
    assert!(
        err.contains("more than one field with role=sequence on one path through the header and `a`"),
        "{err}"
    );
    let err = check(&def(
        "",
        "",
        "",
        "    bits t 4 role=type\n    rest x role=fragment-data",
    ));
    assert!(
        err.contains("role=type") && err.contains("role=fragment-data"),
        "{err}"
    );
    // Every shipped definition still compiles.
    for d in ["article", "example-shooter", "reliable", "netcode"] {
        let path = format!("{}/dissectors/{d}.kdl", env!("CARGO_MANIFEST_DIR"));
        assert!(gpcap::dissect::load(std::path::Path::new(&path)).is_ok(), "{d}");
    }
}

fn addr(s: &str) -> std::net::SocketAddr {
    s.parse().unwrap()
}

/// `analyze --json` of `datagrams` (1 ms apart) with definition `def` (a path or text).
fn analyze(name: &str, def: &str, datagrams: Vec<(&str, &str, Vec<u8>)>) -> serde_json::Value {
    let dir = temp_dir(name);
    let pcap = dir.join("c.pcap");
    common::udp_capture(
        &pcap,
        datagrams.into_iter().map(|(s, d, p)| (addr(s), addr(d), p)),
    );
    let def_path = if def.contains('\n') {
        let p = dir.join("d.kdl");
        std::fs::write(&p, def).unwrap();
        p.to_str().unwrap().to_string()
    } else {
        def.to_string()
    };
    let (code, json, err) = gpcap(&["analyze", "-d", &def_path, pcap.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(dir);
    serde_json::from_str(&json).unwrap()
}

/// A netcode payload packet (type 5) with sequence `s` in as few bytes as it needs.
fn netcode(s: u64) -> Vec<u8> {
    let n = (64 - s.leading_zeros()).div_ceil(8).max(1) as usize;
    let mut p = vec![5 | (n as u8) << 4];
    p.extend_from_slice(&s.to_le_bytes()[..n]);
    p.extend_from_slice(&[b'U'; 20]);
    p
}

/// Regression (rows 01 and 15): a netcode datagram whose 64-bit sequence jumps ~2^63 made
/// the flow lose 4,294,967,295 (clamped) with the 100 genuine datagrams after it late and
/// single-datagram loss 0.99999995; two jumps wrapped the timeline's u32 to 4,294,967,294
/// while the flow said 8,589,934,590. A jump is one counted datagram.
#[test]
fn a_sequence_jump_is_one_anomaly_not_billions_lost() {
    let (c, s) = ("10.0.1.1:50000", "10.0.0.1:40000");
    let seqs = (1..=100).chain([(1u64 << 63) + 50]).chain(101..=200);
    let v = analyze(
        "jump",
        "dissectors/netcode.kdl",
        seqs.map(|q| (c, s, netcode(q))).collect(),
    );
    let seq = &v["flows"][0]["seq"];
    assert_eq!(
        (seq["lost"].as_u64(), seq["late"].as_u64(), seq["jumps"].as_u64()),
        (Some(0), Some(0), Some(1)),
        "{seq}"
    );
    assert_eq!(seq["received"], 200);
    assert_eq!(v["reassembly"]["single_loss"], 0.0);
    let seqs = [1u64, 2, 3, 1 << 62, (1 << 63) + 5];
    let v = analyze(
        "jumps",
        "dissectors/netcode.kdl",
        seqs.iter().map(|&q| (c, s, netcode(q))).collect(),
    );
    let seq = &v["flows"][0]["seq"];
    assert_eq!(
        (seq["lost"].as_u64(), seq["jumps"].as_u64()),
        (Some(0), Some(2)),
        "{seq}"
    );
    let timeline_lost: u64 = v["timeline"]["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["lost"].as_u64().unwrap())
        .sum();
    assert_eq!(timeline_lost, 0);
}

/// 8-bit sequence and ack with 32 ack bits (row 16).
const S8: &str = "protocol \"s8\" {\n    checksum \"none\"\n    ports 40000\n}\nheader {\n    bits sequence 8 role=sequence\n    bits ack 8 role=ack\n    bits ack_bits 32 role=ack-bits\n}\npacket 0 \"m\" {\n    rest x\n}\n";

/// Regression (row 16): with 8-bit sequences and acks, sequence analysis saw 600 received
/// and 2 wraps while ack analysis stopped at the first wrap (256 sequences, 256 acked).
#[test]
fn ack_analysis_wraps_as_sequences_do() {
    let (a, b) = ("10.0.0.1:40000", "10.0.1.1:50000");
    let mut d = Vec::new();
    for s in 0..600u32 {
        let mut p = vec![s as u8, s.wrapping_sub(1) as u8];
        p.extend_from_slice(&u32::MAX.to_le_bytes());
        d.push((a, b, [p.clone(), b"x".to_vec()].concat()));
        p[1] = s as u8;
        d.push((b, a, [p, b"y".to_vec()].concat()));
    }
    let v = analyze("s8", S8, d);
    for f in v["flows"].as_array().unwrap() {
        assert_eq!(
            (f["seq"]["received"].as_u64(), f["seq"]["wraps"].as_u64()),
            (Some(600), Some(2))
        );
        let acks = &f["acks"];
        assert_eq!(acks["sequences"], 600, "{acks}");
        assert!(acks["acked"].as_u64().unwrap() >= 599, "{acks}");
        assert!(acks["rtt_ms"]["samples"].as_u64().unwrap() >= 599, "{acks}");
    }
}

/// A reliable.io datagram: flags with the 1-byte ack flag, sequence, ack, ack bits.
fn reliable(seq: u16, ack: u16, bits: u32) -> Vec<u8> {
    let mut p = vec![0x20 | 0x1e];
    p.extend_from_slice(&seq.to_le_bytes());
    p.push(seq.wrapping_sub(ack) as u8);
    p.extend_from_slice(&bits.to_le_bytes());
    p.extend_from_slice(b"xxxxxxxxxx");
    p
}

/// Regression (row 03): reliable.io traffic in one direction, the peer silent, read as
/// "never acked 976, ack-implied loss 100.0%". No ack figures for that direction.
#[test]
fn no_ack_figures_for_a_direction_whose_peer_sent_nothing() {
    let d = (0..2000u16)
        .map(|s| ("10.0.0.1:40000", "10.0.1.1:50000", reliable(s, s, 0)))
        .collect();
    let v = analyze("oneway", "dissectors/reliable.kdl", d);
    assert!(v["flows"][0]["acks"].is_null(), "{}", v["flows"][0]["acks"]);
}

/// Regression (row 22): acks were matched against every sequence a direction sent, in
/// any space: a direction mixing two counters had acks.sequences 787 where seq.last was
/// 756, 30 "unacked at end" and a 405 ms p50. Acks count the flow's own counter only.
#[test]
fn acks_match_only_the_space_they_refer_to() {
    let def = "protocol \"sp\" {\n    checksum \"none\"\n    ports 40000\n    sequence-space \"other\" per=\"flow\"\n}\nheader {\n    bits type 4 role=type\n    bits sequence 12 role=sequence\n    bits ack 16 role=ack\n    bits ack_bits 32 role=ack-bits\n}\npacket 1 \"m\" {\n    rest x\n}\npacket 2 \"side\" sequence-space=\"other\" {\n    rest x\n}\n";
    let header = |ty: u16, seq: u16, ack: u16, bits: u32| {
        let mut p = (ty | seq << 4).to_le_bytes().to_vec();
        p.extend_from_slice(&ack.to_le_bytes());
        p.extend_from_slice(&bits.to_le_bytes());
        p.push(b'z');
        p
    };
    let (a, b) = ("10.0.0.1:40000", "10.0.1.1:50000");
    let mut d = Vec::new();
    for s in 0..300u16 {
        d.push((a, b, header(1, s, 0, 0)));
        // The other counter runs far ahead of the flow's own.
        d.push((a, b, header(2, 1000 + 3 * s, 0, 0)));
        d.push((b, a, header(1, s, s, 0xffff_ffff)));
    }
    let v = analyze("spaces", def, d);
    let f = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == a)
        .unwrap();
    let acks = &f["acks"];
    assert_eq!(f["seq"]["last"], 299);
    assert_eq!(
        (acks["sequences"].as_u64(), acks["never_acked"].as_u64()),
        (Some(300), Some(0)),
        "{acks}"
    );
    assert_eq!(acks["unacked_at_end"], 0, "{acks}");
    assert!(acks["rtt_ms"]["p50"].as_f64().unwrap() < 5.0, "{acks}");
}

/// Regression (row 18): an ack timestamped 500 s before the packet it acks was a 0.0 ms
/// round trip.
#[test]
fn an_ack_older_than_its_packet_is_dropped_and_counted() {
    let dir = temp_dir("rtt");
    let pcap = dir.join("c.pcap");
    {
        use gpcap::generate::{Link, ip_packets};
        let link = Link::Ethernet { vlan: None };
        let mut w = gpcap::capture::PcapWriter::new(
            std::fs::File::create(&pcap).unwrap(),
            link.linktype(),
            65535,
            true,
        )
        .unwrap();
        let (a, b) = (addr("10.0.0.1:40000"), addr("10.0.1.1:50000"));
        for (t, src, dst, p) in [(1000, a, b, reliable(1, 0, 0)), (500, b, a, reliable(1, 1, 1))] {
            let f = link.frame(&ip_packets(src, dst, &p, 0, false, 1500)[0], false);
            w.write(t * 1_000_000_000, &f, f.len() as u32).unwrap();
        }
    }
    let (code, json, err) = gpcap(&[
        "analyze",
        "-d",
        "dissectors/reliable.kdl",
        pcap.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let f = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["src"] == "10.0.0.1:40000")
        .unwrap();
    assert_eq!(
        (f["acks"]["rtt_before_sent"].as_u64(), f["acks"]["acked"].as_u64()),
        (Some(1), Some(1)),
        "{}",
        f["acks"]
    );
    assert!(f["acks"]["rtt_ms"].is_null(), "{}", f["acks"]);
    let _ = std::fs::remove_dir_all(dir);
}

/// Regression (row 12): a record mid-file whose header claims 0x7fffffff captured bytes
/// was "last record truncated … after frame 9", as if the file were cut; tcpdump and
/// tshark call it corrupt. It is named corrupt, with its offset, and reading stops there.
#[test]
fn a_corrupt_record_mid_file_is_called_corrupt_with_its_offset() {
    let dir = temp_dir("corrupt");
    let mut d = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/article.pcap"))
        .unwrap();
    let mut off = 24;
    for _ in 0..9 {
        off += 16 + u32::from_le_bytes(d[off + 8..off + 12].try_into().unwrap()) as usize;
    }
    d[off + 8..off + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let bad = dir.join("bad.pcap");
    std::fs::write(&bad, &d).unwrap();
    let (code, json, err) = gpcap(&["analyze", bad.to_str().unwrap(), "--json"]);
    // The frames before it are reported, and the run fails (as tcpdump and tshark do).
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("corrupt record header") && err.contains(&format!("offset {off}")),
        "{err}"
    );
    assert!(!err.contains("truncated"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["capture"]["frames"], 9);
    let e = v["capture"]["files"][0]["error"].to_string();
    assert!(e.contains("corrupt") && e.contains("stopped"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Regression (row 14): the filter `flow [::1` (an unclosed bracket) was taken as `::1`.
#[test]
fn a_flow_address_with_an_unpaired_bracket_is_refused() {
    for f in ["flow [::1", "flow ::1]"] {
        let (code, _, err) = gpcap(&[
            "dissect",
            "captures/article.pcap",
            "-d",
            "dissectors/article.kdl",
            "--brief",
            "--filter",
            f,
        ]);
        assert_eq!(code, 2, "{f}: {err}");
        assert!(
            err.contains("column 6") && err.contains("is not an address"),
            "{f}: {err}"
        );
    }
    let (code, _, err) = gpcap(&[
        "dissect",
        "captures/article.pcap",
        "-d",
        "dissectors/article.kdl",
        "--brief",
        "--filter",
        "flow [::1]",
    ]);
    assert_eq!(code, 0, "{err}");
}
