//! A Wireshark or tshark user's habits, as a new user tried them: `frame.*`, `ip.*` and
//! `udp.*` fields read from the real headers, `in {…}` sets, the word operators,
//! `matches`, `dissect -r FILE -Y FILTER`, tshark's `-t` time formats, the headers as
//! layers of the field tree, and "did you mean" answers that make sense. Values are
//! checked against the capture's bytes read here by hand (an implementation of its own).

mod common;
use common::gpcap_run;

const DEF: &str = "dissectors/article.kdl";

/// `dissect --brief` lines of a capture through a filter (the process must succeed).
fn brief(capture: &str, filter: &str) -> Vec<String> {
    let (code, out, err) = gpcap_run(&["dissect", capture, "-d", DEF, "--brief", "--filter", filter]);
    assert_eq!(code, 0, "--filter {filter}: {err}");
    out.lines().map(str::to_string).collect()
}

fn count(capture: &str, filter: &str) -> usize {
    brief(capture, filter).len()
}

/// The frames of a classic little-endian pcap: (original length, bytes).
fn frames(capture: &str) -> Vec<(u32, Vec<u8>)> {
    let d = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(capture)).unwrap();
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= d.len() {
        let u = |k: usize| u32::from_le_bytes(d[at + k..at + k + 4].try_into().unwrap());
        let (incl, orig) = (u(8) as usize, u(12));
        out.push((orig, d[at + 16..at + 16 + incl].to_vec()));
        at += 16 + incl;
    }
    out
}

/// Frame 5 of mtu-df.pcap, Ethernet + IPv4 + UDP: each Wireshark field equals the
/// header's bytes, and the filter that names it selects that frame.
#[test]
fn header_fields_are_read_from_the_frame() {
    let capture = "captures/mtu-df.pcap";
    let (orig, f) = frames(capture)[4].clone();
    let ip = &f[14..];
    let udp = &ip[(ip[0] & 15) as usize * 4..];
    let be = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
    let mac = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":");
    let tests = [
        format!("frame.len == {orig}"),
        format!("frame.cap_len == {}", f.len()),
        format!("eth.src == {}", mac(&f[6..12])),
        format!("eth.dst == {}", mac(&f[0..6])),
        format!("eth.type == 0x{:04x}", be(&f[12..])),
        format!("ip.version == {}", ip[0] >> 4),
        format!("ip.hdr_len == {}", (ip[0] & 15) * 4),
        format!("ip.len == {}", be(&ip[2..])),
        format!("ip.id == {}", be(&ip[4..])),
        format!("ip.flags.df == {}", ip[6] >> 6 & 1),
        format!("ip.flags.mf == {}", ip[6] >> 5 & 1),
        format!("ip.ttl == {}", ip[8]),
        format!("ip.proto == {}", ip[9]),
        format!("ip.checksum == {}", be(&ip[10..])),
        format!("ip.dsfield.dscp == {}", ip[1] >> 2),
        format!("udp.srcport == {}", be(udp)),
        format!("udp.length == {}", be(&udp[4..])),
        format!("udp.checksum == {}", be(&udp[6..])),
        "eth && ip && udp && !ipv6 && !vlan".to_string(),
    ];
    for t in &tests {
        let lines = brief(capture, &format!("frame.number == 5 && {t}"));
        assert_eq!(lines.len(), 1, "{t} should select frame 5");
        // Word operators, as Wireshark's.
        let words = t.replace(" == ", " eq ").replace(" && ", " and ");
        assert_eq!(
            count(capture, &format!("frame.number eq 5 and {words}")),
            1,
            "{words}"
        );
    }
}

/// `frame.len` against every frame's original length; `ip.ttl` and `ip.flags.df` over
/// the whole capture (gen writes TTL 64 and, in mtu-df, DF on every datagram).
#[test]
fn frame_len_and_ip_fields_over_a_capture() {
    let capture = "captures/mtu-df.pcap";
    let all = count(capture, "");
    let over_300 = frames(capture).iter().filter(|(orig, _)| *orig > 300).count();
    let lines = brief(capture, "frame.len > 300 && !reassembled");
    assert!(
        over_300 > 0 && lines.len() <= over_300,
        "{} of {over_300}",
        lines.len()
    );
    assert_eq!(count(capture, "ip.ttl == 64"), all);
    assert_eq!(count(capture, "ip.ttl != 64"), 0);
    assert_eq!(count(capture, "ip.flags.df == 1"), all);
    assert_eq!(count(capture, "ip.ttl ge 64 && ip.ttl le 64"), all);
}

#[test]
fn sets_word_operators_and_matches() {
    let capture = "captures/clean.pcap";
    let either = count(capture, "udp.port == 40000 || udp.port == 50001");
    assert!(either > 0);
    assert_eq!(count(capture, "udp.port in {40000 50001}"), either);
    assert_eq!(count(capture, "udp.port in {40000, 50001}"), either);
    assert_eq!(
        count(capture, "!(udp.port in {40000 50001})"),
        count(capture, "") - either
    );
    let range = count(capture, "seq >= 7000 && seq <= 8000");
    assert!(range > 0);
    assert_eq!(count(capture, "seq in {7000..8000}"), range);
    assert_eq!(
        count(capture, "type in {scene A}"),
        count(capture, "type == scene || type == A")
    );
    assert_eq!(
        count(capture, "ip.src in {10.0.0.1 10.0.1.2}"),
        count(capture, "ip.src == 10.0.0.1 or ip.src == 10.0.1.2")
    );
    for (word, sym) in [
        ("gt", ">"),
        ("ge", ">="),
        ("lt", "<"),
        ("le", "<="),
        ("ne", "!="),
        ("eq", "=="),
    ] {
        assert_eq!(
            count(capture, &format!("size {word} 40 and not frag")),
            count(capture, &format!("size {sym} 40 && !frag")),
            "{word}"
        );
    }
    // matches: a regular expression over text (case-insensitive, as Wireshark's), the
    // same packets as the names read from the JSON.
    let (_, json, _) = gpcap_run(&["dissect", capture, "-d", DEF, "--jsonl", "--filter", "misc.name"]);
    let names: Vec<String> = json
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let name = v["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["path"] == "name")
                .unwrap();
            name["value"].as_str().unwrap().to_string()
        })
        .collect();
    let want = names
        .iter()
        .filter(|n| n.starts_with('q') || n.ends_with("vb"))
        .count();
    assert!(want > 0);
    assert_eq!(count(capture, r#"misc.name matches "^q|vb$""#), want);
    assert_eq!(count(capture, r#"misc.name matches "^Q|VB$""#), want);
    let (code, _, err) = gpcap_run(&[
        "dissect",
        capture,
        "-d",
        DEF,
        "--filter",
        r#"misc.name matches "(""#,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("regular expression"), "{err}");
}

/// tshark's `-r FILE` and `-Y FILTER` (clap answered "to pass '-r' as a value, use '-- -r'").
#[test]
fn dissect_takes_r_and_y() {
    let (code, out, err) = gpcap_run(&[
        "dissect",
        "-r",
        "captures/clean.pcap",
        "-d",
        DEF,
        "--brief",
        "-Y",
        "type == scene",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), count("captures/clean.pcap", "type == scene"));
    assert!(out.lines().count() > 0);
}

/// tshark's `-t` formats: r (since the first packet), d (since the previous packet
/// captured), dd (since the previous shown), e (epoch), u/ud (UTC), a/ad (local).
#[test]
fn time_formats_as_tshark() {
    let time = |fmt: &str, filter: &str| -> Vec<String> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("TZ", "UTC")
            .args([
                "dissect",
                "captures/mtu-df.pcap",
                "-d",
                DEF,
                "--brief",
                "-t",
                fmt,
                "-c",
                "3",
            ])
            .args(["--filter", filter])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').nth(1).unwrap().to_string())
            .collect()
    };
    // To the microsecond, rounded (the capture holds nanoseconds: 1700000000.033728133,
    // .050291499, .050394799).
    assert_eq!(
        time("e", ""),
        ["1700000000.033728", "1700000000.050291", "1700000000.050395"]
    );
    assert_eq!(time("r", ""), ["0.000000", "0.016563", "0.016667"]);
    assert_eq!(time("d", ""), ["0.000000", "0.016563", "0.000103"]);
    assert_eq!(
        time("u", ""),
        ["22:13:20.033728", "22:13:20.050291", "22:13:20.050395"]
    );
    // `ud` and `ad` carry the date, then a space and the time (as tshark): the brief
    // line's second word is the date.
    assert_eq!(time("ud", ""), ["2023-11-14", "2023-11-14", "2023-11-14"]);
    assert_eq!(time("ad", ""), ["2023-11-14", "2023-11-14", "2023-11-14"]);
    assert_eq!(
        time("a", ""),
        ["22:13:20.033728", "22:13:20.050291", "22:13:20.050395"]
    );
    // d counts from the previous packet captured, dd from the previous one shown.
    let shown = time("dd", "type == C");
    let captured = time("d", "type == C");
    assert_eq!(shown[0], "0.000000");
    assert_ne!(shown[1..], captured[1..]);
    let (code, _, err) = gpcap_run(&["dissect", "captures/mtu-df.pcap", "-t", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("ad") && err.contains("dd"), "{err}");
}

/// The field tree has the frame, Ethernet, IPv4 and UDP as its first layers, with the
/// frame's real length (it said `Frame 5: 169 bytes` of a 211-byte frame: the payload).
#[test]
fn the_tree_starts_with_the_frame_and_its_headers() {
    let (code, out, err) = gpcap_run(&["dissect", "captures/mtu-df.pcap", "-d", DEF, "--frame", "5"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("Frame 5: 211 bytes on wire (1688 bits), 211 bytes captured (1688 bits)"),
        "{out}"
    );
    assert!(
        out.contains("\nEthernet II, Src: 02:00:00:00:00:01, Dst: 02:00:00:00:00:02\n"),
        "{out}"
    );
    assert!(
        out.contains("\nInternet Protocol Version 4, Src: 10.0.1.1, Dst: 10.0.0.1\n"),
        "{out}"
    );
    assert!(out.contains("= Time to Live: 64"), "{out}");
    assert!(out.contains("= Don't fragment: Set"), "{out}");
    assert!(
        out.contains("\nUser Datagram Protocol, Src Port: 50000, Dst Port: 40000\n"),
        "{out}"
    );
    assert!(out.contains("Length: 177"), "{out}");
    assert!(
        out.contains("article type 2 (B), sequence 65513, crc_ok, 169 bytes"),
        "{out}"
    );
}

/// "Did you mean" answers with a name of the same kind that is near: a packet type for
/// `scen` (not the field `seq`), nothing far-fetched (`t` for `eth`, which exists now).
#[test]
fn suggestions_make_sense() {
    let err = |filter: &str| gpcap_run(&["dissect", "captures/clean.pcap", "-d", DEF, "--filter", filter]).2;
    let e = err("scen");
    assert!(e.contains("did you mean `scene`?"), "{e}");
    let e = err("sceen.objects");
    assert!(
        e.contains("did you mean `scene.objects`?") || e.contains("`scene`"),
        "{e}"
    );
    let e = err("etj");
    assert!(e.contains("did you mean `eth`?"), "{e}");
    let e = err("xq");
    assert!(!e.contains("did you mean `t`"), "{e}");
    let e = err("ip.tll > 3");
    assert!(e.contains("did you mean `ip.ttl`?"), "{e}");
    let (code, _, _) = gpcap_run(&["dissect", "captures/clean.pcap", "-d", DEF, "--filter", "eth"]);
    assert_eq!(code, 0);
}
