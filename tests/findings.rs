//! An attacker's findings, each held by a test that failed before its fix: inputs that
//! made gpcap swell, hang or print a confident wrong figure. Every input is made here.

mod common;

use common::{gpcap_run, udp_capture};
use gpcap::dissect::{self, Dissector};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A fresh directory of the test's own (removed by the caller).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-findings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Runs gpcap with at most 1 GiB of address space, its standard input `stdin`, killed
/// after `secs`: the exit code (`None`: killed), standard output and error.
fn gpcap_bounded(args: &[&str], stdin: &[u8], secs: u64) -> (Option<i32>, String, String) {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"));
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = feeder.join();
    let out = child.wait_with_output().unwrap();
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

// ── 03: a message of zero bits ─────────────────────────────────────────────────────

const ZERO_BITS: &str = "protocol \"z\" { checksum \"none\"; ports 40000; }\nheader { bits h 8; }\nmessages { int t 0 0 role=type; }\nmessage 0 \"e\" { }\n";

/// `check` refuses a message header and a body that can both read nothing: the
/// messages loop could never advance (every datagram was read as 65,535 messages).
#[test]
fn a_message_that_can_read_no_bits_is_refused() {
    let Err(e) = dissect::compile("z.kdl", ZERO_BITS) else {
        panic!("a zero-bit message accepted")
    };
    let text = dissect::render(&e, false);
    assert!(text.contains("can read no bits"), "{text}");
    // A message that always reads a bit is fine.
    let ok = ZERO_BITS.replace("message 0 \"e\" { }", "message 0 \"e\" { bool b; }");
    dissect::compile("z.kdl", &ok).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)));
}

/// What `check` cannot prove (a count computed from what is left) stops at run time, at
/// the first message that read nothing, which is not counted as a message.
#[test]
fn the_reader_stops_at_a_message_that_read_nothing() {
    let def = ZERO_BITS.replace(
        "message 0 \"e\" { }",
        "message 0 \"e\" { bytes x \"remaining_bits / 800\"; }",
    );
    let p = dissect::compile("z.kdl", &def).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)));
    let mut d = Dissector::new(Arc::new(p));
    let x = d.dissect(&[1, 2]);
    let f = x.fault.expect("a fault");
    assert_eq!((f.kind.code(), f.field.as_str()), ("limit", "messages[0]"));
    assert!(f.reason.contains("read no bits"), "{}", f.reason);
    assert_eq!(x.messages.len(), 0);
    // Through analyze: one datagram, no message counted, nothing near 65,535.
    let dir = scratch("zero");
    let d = write(&dir, "z.kdl", &def);
    let cap = dir.join("z.pcap");
    udp_capture(
        &cap,
        (0..10).map(|_| (addr("10.0.0.1:5000"), addr("10.0.0.2:40000"), vec![1, 2])),
    );
    let (code, out, err) = gpcap_run(&["analyze", "-d", &d, cap.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["messages"]["total"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

// ── 02: fragments inside messages at a far offset ──────────────────────────────────

/// An ENet datagram (no sent time, peer 0xfff: the checksum over zeros standing in).
fn enet(commands: &[Vec<u8>]) -> Vec<u8> {
    let mut d = vec![0x0f, 0xff, 0, 0, 0, 0];
    d.extend(commands.concat());
    let crc = crc32fast::hash(&d);
    d[2..6].copy_from_slice(&crc.to_be_bytes());
    d
}

/// SEND_UNRELIABLE_FRAGMENT: channel 1, its start sequence, count, number, total length,
/// offset, data.
fn unreliable_fragment(start: u16, count: u32, number: u32, total: u32, offset: u32, data: &[u8]) -> Vec<u8> {
    let mut c = vec![12, 1, 0, 1];
    c.extend(start.to_be_bytes());
    c.extend((data.len() as u16).to_be_bytes());
    for v in [count, number, total, offset] {
        c.extend(v.to_be_bytes());
    }
    c.extend_from_slice(data);
    c
}

fn enet_report(dir: &Path, def: &str, datagrams: Vec<Vec<u8>>) -> serde_json::Value {
    let cap = dir.join("e.pcap");
    udp_capture(
        &cap,
        datagrams
            .into_iter()
            .map(|d| (addr("10.0.0.1:50000"), addr("10.0.0.2:7777"), d)),
    );
    let (code, out, err) = gpcap_run(&["analyze", "-d", def, cap.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    json(&out)["reassembly"].clone()
}

/// One byte at offset 2^26-1 of a message that may be 64 MiB cost the whole message (a
/// memset of 64 MiB a fragment, twice the budget); now it costs the byte, and the peak
/// says so.
#[test]
fn a_fragment_far_into_its_message_costs_its_own_bytes() {
    let dir = scratch("msgfrag-far");
    let def = std::fs::read_to_string("dissectors/enet.kdl")
        .unwrap()
        .replace("max-message-size 1048576", "max-message-size 67108864");
    let def = write(&dir, "enet_big.kdl", &def);
    let datagrams = (0..20u16)
        .map(|i| enet(&[unreliable_fragment(i + 1, 2, 1, 1 << 26, (1 << 26) - 1, b"Z")]))
        .collect();
    let r = enet_report(&dir, &def, datagrams);
    assert_eq!(r["completed"], 0);
    let peak = r["peak_bytes"].as_u64().unwrap();
    assert!(
        peak < 64 << 10,
        "peak reassembly memory {peak} bytes for 20 one-byte fragments"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A single fragment declaring a 1 MiB message and carrying one byte was "reassembled,
/// dissected ok" as a megabyte of zeros; a message whose fragments leave holes is given
/// up and counted so.
#[test]
fn a_message_with_holes_is_not_reassembled() {
    let dir = scratch("msgfrag-holes");
    let datagrams = (0..4u16)
        .map(|i| enet(&[unreliable_fragment(i + 1, 1, 0, 1 << 20, 0, b"Z")]))
        .chain([enet(&[
            unreliable_fragment(9, 2, 0, 4, 0, b"ab"),
            unreliable_fragment(9, 2, 1, 4, 2, b"cd"),
        ])])
        .collect();
    let r = enet_report(&dir, "dissectors/enet.kdl", datagrams);
    assert_eq!(r["completed"], 1, "{r}");
    assert_eq!(r["attacks"]["with_holes"], 4, "{r}");
    assert!(r["peak_bytes"].as_u64().unwrap() < 64 << 10, "{r}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ── 01 and F3: a definition read twice, or without bound ───────────────────────────

/// `cat def | gpcap check /dev/stdin` and `analyze -d /dev/stdin` read the pipe once (the
/// second read found it empty: "no `header` block").
#[test]
fn a_definition_on_a_pipe_is_read_once() {
    let def = std::fs::read("dissectors/article.kdl").unwrap();
    let (code, out, err) = gpcap_bounded(&["check", "/dev/stdin"], &def, 20);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = gpcap_bounded(
        &["analyze", "-d", "/dev/stdin", "captures/article.pcap", "--json"],
        &def,
        60,
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json(&out)["capture"]["frames"], 1245);
}

/// A named FIFO is opened once (the second open waited for a writer forever).
#[test]
fn a_definition_in_a_fifo_is_read_once() {
    let dir = scratch("fifo");
    let fifo = dir.join("def.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let def = std::fs::read("dissectors/article.kdl").unwrap();
        // Opening for writing waits for the reader.
        let _ = std::fs::write(&path, def);
    });
    let (code, out, err) = gpcap_bounded(&["check", fifo.to_str().unwrap()], b"", 20);
    let _ = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags_nonblock()
        .open(&fifo);
    writer.join().unwrap();
    assert_eq!(code, Some(0), "{out}{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `check /dev/zero` grew to the address-space limit: a device is read to the size
/// limit like a file.
#[test]
fn an_endless_definition_stops_at_the_limit() {
    let (code, out, err) = gpcap_bounded(&["check", "/dev/zero"], b"", 20);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("larger than 1024 KiB"), "{err}");
}

/// Opening a FIFO without waiting for a writer (to unblock a writer left waiting).
trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

// ── 09: a checksum field off a byte boundary ───────────────────────────────────────

/// `checksum "crc32" field=…` on a field at bit 3 passed `check`, then every datagram was
/// "too short for a CRC": no value could ever validate.
#[test]
fn a_checksum_field_off_a_byte_boundary_is_refused() {
    let def = |pad: u32| {
        format!(
            "protocol \"c\" {{ ports 40000; checksum \"crc32\" field=\"checksum\"; }}\nheader {{ bits pad {pad}; bits checksum 32 role=crc; bits sequence 16 role=sequence; }}\npacket 0 \"p\" {{ rest x; }}\n"
        )
    };
    let Err(e) = dissect::compile("c.kdl", &def(3)) else {
        panic!("an unaligned checksum field accepted")
    };
    let text = dissect::render(&e, false);
    assert!(text.contains("starts at bit 3"), "{text}");
    dissect::compile("c.kdl", &def(8)).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false)));
}

// ── 06: a --what-if resolution too fine for 64 bits ────────────────────────────────

/// `--what-if objects.position.x=1e-20` fell back silently to the declared resolution
/// (0.001), and 1e-16 gave a range from the values that fit only; now the row says that
/// its values need more than 62 bits and withholds the figures.
#[test]
fn a_what_if_too_fine_for_64_bits_is_said_not_replaced() {
    for res in ["1e-20", "1e-16"] {
        let what_if = format!("objects.position.x={res}");
        let (code, out, err) = gpcap_run(&[
            "analyze",
            "-d",
            "dissectors/article.kdl",
            "captures/article.pcap",
            "--bits",
            "--what-if",
            &what_if,
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let a = json(&out);
        let rows = a["bandwidth"]["rows"].as_array().unwrap();
        let row = rows.iter().find(|r| r["path"] == "objects.position.x").unwrap();
        let e = &row["estimate"];
        assert_eq!(e["resolution_source"], "what-if", "{res}: {e}");
        assert!(e["past_range"].as_u64().unwrap() > 0, "{res}: {e}");
        assert_eq!(e["range_bits"], serde_json::Value::Null, "{res}: {e}");
    }
}

// ── 08, 11: time that is missing or goes back ──────────────────────────────────────

/// The first `n` frames of the bundled article capture.
fn article_frames(n: usize) -> Vec<Vec<u8>> {
    let mut r = gpcap::capture::CaptureReader::open(Path::new("captures/article.pcap")).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push(f.data.to_vec());
        if out.len() == n {
            break;
        }
    }
    out
}

/// A little-endian pcapng block: type, body padded to 4 bytes, lengths around it.
fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    b.resize(body.len().div_ceil(4) * 4, 0);
    let len = (b.len() + 12) as u32;
    [
        kind.to_le_bytes().to_vec(),
        len.to_le_bytes().to_vec(),
        b,
        len.to_le_bytes().to_vec(),
    ]
    .concat()
}

/// A pcapng of Ethernet frames, nanosecond times; `None`: a Simple Packet Block (no time).
fn pcapng(frames: &[(Option<i64>, Vec<u8>)]) -> Vec<u8> {
    let shb = [
        &0x1A2B_3C4Du32.to_le_bytes()[..],
        &[1, 0, 0, 0],
        &(-1i64).to_le_bytes(),
    ]
    .concat();
    // Link type 1, snaplen 65535, if_tsresol 9 (nanoseconds), end of options.
    let idb = [
        &[1u8, 0, 0, 0][..],
        &65535u32.to_le_bytes(),
        &[9, 0, 1, 0, 9, 0, 0, 0],
        &[0; 4],
    ]
    .concat();
    let mut out = [ng_block(0x0A0D_0D0A, &shb), ng_block(1, &idb)].concat();
    for (ts, data) in frames {
        let len = (data.len() as u32).to_le_bytes();
        out.extend(match ts {
            Some(t) => {
                let t = *t as u64;
                let head = [0u32, (t >> 32) as u32, t as u32].map(u32::to_le_bytes).concat();
                ng_block(6, &[&head[..], &len, &len, data].concat())
            }
            None => ng_block(3, &[&len[..], data].concat()),
        });
    }
    out
}

const T0: i64 = 1_700_000_000_000_000_000;

fn analyze_json(path: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "analyze",
        "-d",
        "dissectors/article.kdl",
        path.to_str().unwrap(),
        "--json",
    ];
    all.extend_from_slice(args);
    let (code, out, err) = gpcap_run(&all);
    assert_eq!(code, 0, "{err}");
    json(&out)
}

/// A Simple Packet Block has no time: it was given time 0, and a capture of a few
/// milliseconds lasted 53 years. It carries the previous frame's time.
#[test]
fn a_frame_without_a_time_does_not_start_the_capture() {
    let dir = scratch("spb");
    let f = article_frames(4);
    let frames = vec![
        (Some(T0), f[0].clone()),
        (Some(T0 + 1_000_000), f[1].clone()),
        (None, f[2].clone()),
        (Some(T0 + 6_000_000), f[3].clone()),
    ];
    let path = dir.join("spb.pcapng");
    std::fs::write(&path, pcapng(&frames)).unwrap();
    let c = &analyze_json(&path, &[])["capture"];
    assert_eq!((&c["frames"], &c["first_ns"]), (&4.into(), &T0.into()), "{c}");
    assert_eq!(c["duration_s"], 0.006);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A clock stepping back 10 s after the first frames gave the flow a negative span
/// (rate 0) and left every later frame out of the per-second timeline, unsaid. Flows
/// are timed from their earliest to their latest datagram, the timeline starts at the
/// earliest second, the step is counted, and one core or two say the same.
#[test]
fn a_clock_stepping_back_is_said_and_timed_by_extremes() {
    let dir = scratch("stepback");
    let f = article_frames(60);
    let frames: Vec<_> = f
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let ts = T0 + i as i64 * 10_000_000 + if i < 5 { 10_000_000_000 } else { 0 };
            (Some(ts), d.clone())
        })
        .collect();
    let path = dir.join("back.pcapng");
    std::fs::write(&path, pcapng(&frames)).unwrap();
    let in_order = dir.join("ordered.pcapng");
    let ordered: Vec<_> = f
        .iter()
        .enumerate()
        .map(|(i, d)| (Some(T0 + i as i64 * 10_000_000), d.clone()))
        .collect();
    std::fs::write(&in_order, pcapng(&ordered)).unwrap();
    let a = analyze_json(&path, &[]);
    let b = analyze_json(&in_order, &[]);
    let went_back = a["capture"]["time_went_back"].as_u64().unwrap_or(0);
    assert!(went_back > 0, "{}", a["capture"]);
    for fl in a["flows"].as_array().unwrap() {
        assert!(fl["first_ns"].as_i64() <= fl["last_ns"].as_i64(), "{fl}");
        if fl["datagrams"].as_u64().unwrap() > 1 {
            assert!(fl["packets_per_s"].as_f64().unwrap() > 0.0, "{fl}");
        }
    }
    let seconds = |r: &serde_json::Value| -> u64 {
        r["timeline"]["seconds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["datagrams"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(seconds(&a), seconds(&b));
    assert_eq!(a["timeline"]["start_ns"], T0);
    // Sharded by address pair, through the library: the same timeline and counts.
    let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl").unwrap());
    let serial = gpcap::run::analyze(
        std::slice::from_ref(&path),
        cfg.clone(),
        gpcap::Mode::Serial,
        &mut |_, _| {},
    )
    .unwrap();
    let shards = common::sharded(std::slice::from_ref(&path), cfg, 2, &mut |_, _| {}).unwrap();
    let j = |r: &gpcap::Report| serde_json::to_value(r).unwrap();
    assert_eq!(j(&serial)["timeline"], j(&shards)["timeline"]);
    assert_eq!(j(&serial)["capture"], j(&shards)["capture"]);
    let _ = std::fs::remove_dir_all(&dir);
}

// ── 10: the message-stream cap, on any core count ──────────────────────────────────

/// SEND_UNRELIABLE on channel 1: reliable sequence `rseq`, unreliable sequence `useq`.
fn unreliable(rseq: u16, useq: u16, data: &[u8]) -> Vec<u8> {
    let mut c = vec![7, 1];
    c.extend(rseq.to_be_bytes());
    c.extend(useq.to_be_bytes());
    c.extend((data.len() as u16).to_be_bytes());
    c.extend_from_slice(data);
    c
}

/// Every report of `path` on one core and on 2 and 3 shards, as JSON.
fn on_every_core_count(path: &Path, cfg: &gpcap::Config) -> Vec<serde_json::Value> {
    let paths = [path.to_path_buf()];
    let mut all =
        vec![gpcap::run::analyze(&paths, cfg.clone(), gpcap::Mode::Serial, &mut |_, _| {}).unwrap()];
    for n in [2, 3] {
        all.push(common::sharded(&paths, cfg.clone(), n, &mut |_, _| {}).unwrap());
    }
    all.iter().map(|r| serde_json::to_value(r).unwrap()).collect()
}

/// The stream cap was counted per shard: one core listed 65,536 streams and counted the
/// rest untracked, two cores listed them all. A shard past its share now reads the
/// capture again on one core, as for the flow table.
#[test]
fn the_stream_cap_is_one_cap_on_any_core_count() {
    let dir = scratch("streams");
    let cap = dir.join("streams.pcap");
    // 700 flows of 100 datagrams, each a stream of its own: 70,000 streams, past the cap.
    let datagrams = (0..700u16).flat_map(|flow| {
        (0..100u16).map(move |k| {
            let src = addr(&format!(
                "10.1.{}.{}:{}",
                flow / 200,
                flow % 200 + 1,
                20000 + flow
            ));
            (src, addr("10.0.0.2:7777"), enet(&[unreliable(k + 1, 1, b"xy")]))
        })
    });
    udp_capture(&cap, datagrams);
    let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/enet.kdl").unwrap());
    let reports = on_every_core_count(&cap, &cfg);
    let untracked = &reports[0]["messages"]["streams_not_tracked"];
    assert!(untracked.as_u64().unwrap() > 0, "{untracked}");
    for r in &reports[1..] {
        assert_eq!(r, &reports[0]);
    }
    // 12 (1): the text report says what the cap left out (only the JSON did).
    let (code, out, err) = gpcap_run(&["analyze", "-d", "dissectors/enet.kdl", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("{untracked} messages of streams past the first 65536")),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ── 04, 05, 12: key logs ───────────────────────────────────────────────────────────

const NETCODE_ID: u64 = 0x1122_3344_5566_7788;

/// A netcode keep-alive of sequence `seq` (one byte) sealed under `key`.
fn keep_alive(key: u8, seq: u8) -> Vec<u8> {
    let mut body = [0u8, 0, 0, 0, 4, 0, 0, 0].to_vec();
    gpcap::decrypt::netcode::PacketCipher::new(&[key; 32]).seal(NETCODE_ID, seq as u64, 0x14, &mut body);
    [vec![0x14, seq], body].concat()
}

fn keylog_line(client: &str, up: u8, down: u8) -> String {
    format!(
        "NETCODE {client} {} {}\n",
        format!("{up:02x}").repeat(32),
        format!("{down:02x}").repeat(32)
    )
}

/// A client connects, exchanges keep-alives, connects again from the same address and
/// port with new keys: a key log naming the address twice kept the last line only and
/// called every packet of the first connection a MAC failure. Each connection's keys
/// are kept, in the log's order, on one core and in the pipeline alike.
#[test]
fn a_key_log_naming_a_client_twice_keeps_both_connections() {
    let dir = scratch("reconnect");
    let (client, server) = (addr("10.0.0.5:41000"), addr("10.0.0.1:40000"));
    let mut datagrams = Vec::new();
    for (up, down) in [(1u8, 2u8), (3, 4)] {
        for seq in 1..=20u8 {
            datagrams.push((client, server, keep_alive(up, seq)));
            datagrams.push((server, client, keep_alive(down, seq)));
        }
    }
    let cap = dir.join("reconnect.pcap");
    udp_capture(&cap, datagrams);
    let log = write(
        &dir,
        "both.keylog",
        &[
            keylog_line("10.0.0.5:41000", 1, 2),
            keylog_line("10.0.0.5:41000", 3, 4),
        ]
        .concat(),
    );
    let (code, out, err) = gpcap_run(&[
        "analyze",
        "-d",
        "dissectors/netcode.kdl",
        "--keylog",
        &log,
        cap.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let d = &json(&out)["decryption"];
    assert_eq!(
        (&d["decrypted"], &d["mac_failures"]),
        (&80.into(), &0.into()),
        "{d}"
    );
    // The pipeline's workers open ahead of the ordered stage: the same verdicts.
    let mut secrets = gpcap::decrypt::keys::Secrets::default();
    gpcap::decrypt::keys::keylog(Path::new(&log), &mut secrets).unwrap();
    let choice = gpcap::resolve::Choice {
        program: Some(gpcap::load_definition("dissectors/netcode.kdl").unwrap()),
        stack: Some(Arc::new(gpcap::layers::Stack {
            secrets: Some(Arc::new(secrets)),
            show_keys: false,
            layers: Vec::new(),
        })),
        ..Default::default()
    };
    let cfg = gpcap::resolve::resolve(&choice, |_| Ok(())).unwrap().cfg;
    let paths = [cap.clone()];
    let piped = gpcap::run::analyze(&paths, cfg, gpcap::Mode::Pipelined(2), &mut |_, _| {}).unwrap();
    assert_eq!(&serde_json::to_value(&piped).unwrap()["decryption"], d);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key log held ~1.5 KB a line (two ciphers per connection, on every shard): 145 MB
/// for 100,000 lines. Its connections are now kept in 83 bytes each and the log is read
/// a line at a time.
#[test]
fn a_key_log_costs_little_memory_a_line() {
    let dir = scratch("keylog-rss");
    let mut text = String::with_capacity(100_000 * 150);
    for i in 0..100_000u32 {
        text.push_str(&keylog_line(
            &format!(
                "10.{}.{}.{}:{}",
                i >> 16 & 255,
                i >> 8 & 255,
                i & 255,
                1024 + i % 60000
            ),
            0xab,
            0xcd,
        ));
    }
    let log = write(&dir, "big.keylog", &text);
    let cap = dir.join("one.pcap");
    udp_capture(
        &cap,
        [(addr("10.0.0.5:41000"), addr("10.0.0.1:40000"), keep_alive(1, 1))],
    );
    // Waited for below with wait4, which reports the child's peak memory.
    #[allow(clippy::zombie_processes)]
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args([
            "analyze",
            "-d",
            "dissectors/netcode.kdl",
            "--keylog",
            &log,
            cap.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: waits for our own child, with valid pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let peak_mb = usage.ru_maxrss / 1024;
    assert!(peak_mb < 60, "peak {peak_mb} MB for a key log of 100,000 lines");
    let _ = std::fs::remove_dir_all(&dir);
}

/// 12 (3, 4): a key log with no key was taken silently (no decryption, no word); a key
/// file of 32 raw bytes that happen to be text was read as hex and refused.
#[test]
fn a_key_log_without_keys_is_refused_and_raw_keys_are_read() {
    let dir = scratch("keys-small");
    let empty = write(&dir, "empty.keylog", "# nothing yet\n\n");
    let (code, _, err) = gpcap_run(&[
        "analyze",
        "-d",
        "dissectors/netcode.kdl",
        "--keylog",
        &empty,
        "tests/fixtures/netcode/capture.pcap",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("holds no key"), "{err}");
    let raw = dir.join("raw.key");
    std::fs::write(&raw, [b'A'; 32]).unwrap();
    assert_eq!(gpcap::decrypt::keys::key_file(&raw), Ok([b'A'; 32]));
    std::fs::write(&raw, [1u8; 32]).unwrap();
    assert_eq!(gpcap::decrypt::keys::key_file(&raw), Ok([1; 32]));
    let _ = std::fs::remove_dir_all(&dir);
}

// ── 15: --write over its own input ─────────────────────────────────────────────────

/// `dissect a.pcap --write a.pcap` replaced the capture with the selection, silently;
/// a `.gz` name got an uncompressed pcapng. Both are refused, the capture untouched.
#[test]
fn write_refuses_its_own_input_and_a_gz_name() {
    let dir = scratch("write-over");
    let a = dir.join("a.pcap");
    std::fs::copy("captures/article.pcap", &a).unwrap();
    let before = std::fs::read(&a).unwrap();
    let link = dir.join("link.pcap");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    for to in [&a, &link] {
        let (code, _, err) = gpcap_run(&[
            "dissect",
            "-d",
            "dissectors/article.kdl",
            a.to_str().unwrap(),
            "--filter",
            "type == scene",
            "--write",
            to.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("the capture being read"), "{err}");
    }
    assert_eq!(std::fs::read(&a).unwrap(), before);
    let gz = dir.join("out.pcap.gz");
    let (code, _, err) = gpcap_run(&[
        "dissect",
        "-d",
        "dissectors/article.kdl",
        a.to_str().unwrap(),
        "-c",
        "5",
        "--write",
        gz.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!gz.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

// ── 12: small ones in the display filter ───────────────────────────────────────────

/// `all seq > 1` said "unknown field `seq`; did you mean `seq`?"; `and or` was reported
/// as "`||`"; 31 November and 29 February 2023 were accepted as dates.
#[test]
fn filter_mistakes_are_said_as_written() {
    let p = gpcap::load_definition("dissectors/article.kdl").unwrap();
    let err = |text: &str| {
        gpcap::Filter::parse(text, Some(&p))
            .err()
            .unwrap_or_else(|| panic!("`{text}` accepted"))
            .to_string()
    };
    let e = err("all seq > 1");
    assert!(
        e.contains("`all` applies to dissected fields") && !e.contains("did you mean `seq`"),
        "{e}"
    );
    let e = err("seq > 1 and or seq < 3");
    assert!(e.contains("the operator `or`"), "{e}");
    for date in [
        "2023-11-31T00:00:00",
        "2023-02-29T00:00:00",
        "2100-02-29T00:00:00",
    ] {
        let e = err(&format!("time <= {date}"));
        assert!(e.contains("is not a time"), "{e}");
    }
    assert!(gpcap::Filter::parse("time <= 2024-02-29T00:00:00", Some(&p)).is_ok());
}

// ── One truth past every cap, on 1, 2 and 3 cores ──────────────────────────────────

mod caps {
    use super::*;
    use proptest::prelude::*;

    /// A flow's datagrams: (new stream, fragment (start, count, number, total, offset,
    /// length)) each.
    type Flow = Vec<(bool, Option<(u16, u32, u32, u32, u32, u16)>)>;

    fn flow() -> impl Strategy<Value = Flow> {
        let fragment = (1u16..40, 1u32..6, 0u32..6, 1u32..5000, 0u32..5000, 1u16..1200);
        proptest::collection::vec((any::<bool>(), proptest::option::weighted(0.7, fragment)), 1..30)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

        /// ENet traffic past the flow table, the message streams and the reassembly
        /// memory (small caps): the report is the same on one core and on 2 and 3 shards.
        #[test]
        fn the_report_is_one_on_any_core_count(
            flows in proptest::collection::vec(flow(), 1..40),
            max_flows in 4usize..24,
            max_streams in 8usize..120,
        ) {
            let dir = scratch(&format!("caps-{}", flows.len()));
            let cap = dir.join("caps.pcap");
            let mut datagrams = Vec::new();
            for (i, f) in flows.iter().enumerate() {
                let src = addr(&format!("10.2.{}.{}:{}", i / 200, i % 200 + 1, 30000 + i));
                for (k, (fresh, frag)) in f.iter().enumerate() {
                    let rseq = if *fresh { k as u16 + 1 } else { 1 };
                    let mut cmds = vec![unreliable(rseq, k as u16, b"ab")];
                    if let Some((start, count, number, total, offset, len)) = *frag {
                        let data = vec![b'z'; len as usize];
                        cmds.push(unreliable_fragment(start, count, number, total, offset, &data));
                    }
                    datagrams.push((src, addr("10.0.0.2:7777"), enet(&cmds)));
                }
            }
            // Interleaved by flow, as traffic is.
            datagrams.sort_by_key(|(s, _, d)| (d.len() % 7, s.port()));
            udp_capture(&cap, datagrams);
            let mut cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/enet.kdl").unwrap());
            cfg.max_flows = max_flows;
            cfg.max_streams = max_streams;
            cfg.reassembly_budget = 1 << 20;
            let reports = on_every_core_count(&cap, &cfg);
            let _ = std::fs::remove_dir_all(&dir);
            for r in &reports[1..] {
                prop_assert_eq!(r, &reports[0]);
            }
        }
    }
}
