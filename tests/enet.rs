//! Real ENet traffic (tests/fixtures/enet: the unmodified library over UDP sockets on
//! loopback, CRC32 on, ~3% loss, with its own verifier's figures) analyzed with
//! dissectors/enet.kdl: several commands per datagram, big-endian fields, and ENet's
//! checksum with the connection's connectID standing in its field.

mod common;

use common::gpcap_ok as gpcap;
use gpcap::dissect::{self, Dissector, Program, Value as FieldValue};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;

const CAPTURE: &str = "tests/fixtures/enet/capture.pcap";
const DEF: &str = "dissectors/enet.kdl";

fn truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string("tests/fixtures/enet/truth_summary.json").unwrap()).unwrap()
}

fn report(capture: &str) -> Value {
    serde_json::from_str(&gpcap(&["analyze", "-d", DEF, capture, "--json"])).unwrap()
}

fn program() -> Arc<Program> {
    Arc::new(
        dissect::load(std::path::Path::new(DEF)).unwrap_or_else(|e| panic!("{}", dissect::render(&e, false))),
    )
}

#[test]
fn every_checksum_validates_and_every_command_is_read() {
    let (t, r) = (truth(), report(CAPTURE));
    let v = &r["validation"];
    assert_eq!(v["crc_ok"], t["checksum"]["ok"]);
    assert_eq!(v["crc_mismatch"], 0);
    assert_eq!(v["header_errors"], serde_json::json!({}));
    assert_eq!(r["malformed"]["total"], 0);
    let m = &r["messages"];
    assert_eq!(m["total"], t["commands_total"]);
    let counts = t["command_counts"].as_object().unwrap();
    assert_eq!(m["by_type"].as_object().unwrap().len(), counts.len());
    for (name, n) in counts {
        assert_eq!(m["by_type"][name.to_lowercase()], *n, "{name}");
    }
    assert_eq!(m["per_datagram"], t["commands_per_datagram"]);
    let several: u64 = m["per_datagram"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.as_str() != "1")
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(several, t["datagrams_with_several_commands"].as_u64().unwrap());
}

#[test]
fn datagrams_per_direction_are_the_truths() {
    let (t, r) = (truth(), report(CAPTURE));
    let (mut to_server, mut to_client) = (0, 0);
    for f in r["flows"].as_array().unwrap() {
        let n = f["datagrams"].as_u64().unwrap();
        if f["dst"].as_str().unwrap().ends_with(":7777") {
            to_server += n;
        } else {
            to_client += n;
        }
    }
    assert_eq!(
        to_server,
        t["datagrams_by_direction"]["client_to_server"].as_u64().unwrap()
    );
    assert_eq!(
        to_client,
        t["datagrams_by_direction"]["server_to_client"].as_u64().unwrap()
    );
}

/// A flipped byte anywhere fails the checksum: it is really computed, stand-in and all.
#[test]
fn a_flipped_byte_fails_its_checksum() {
    let mut pcap = std::fs::read(CAPTURE).unwrap();
    let (mut off, mut n) = (24usize, 0);
    while off + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[off + 8..off + 12].try_into().unwrap()) as usize;
        n += 1;
        if n == 100 || n == 4000 {
            pcap[off + 16 + incl - 1] ^= 0x20;
        }
        off += 16 + incl;
    }
    let dir = std::env::temp_dir().join(format!("gpcap-enet-flip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flipped.pcap");
    std::fs::write(&path, pcap).unwrap();
    let r = report(path.to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(r["validation"]["crc_mismatch"], 2);
    assert_eq!(r["validation"]["crc_ok"], 5541);
}

/// The field at `path` in a `dissect --json` tree (fields nest in `fields`).
fn field<'a>(fields: &'a [Value], path: &str) -> Option<&'a Value> {
    fields.iter().find_map(|f| {
        if f["path"] == path {
            return Some(f);
        }
        field(f["fields"].as_array().map_or(&[][..], |c| c.as_slice()), path)
    })
}

#[test]
fn a_connect_reads_its_big_endian_fields_and_raw_connect_id() {
    // The first frame of the capture: client1's CONNECT.
    let frames = gpcap(&["dissect", "-d", DEF, CAPTURE, "--frame", "1", "--json"]);
    let v: Value = serde_json::from_str(&frames).unwrap();
    let fields = v[0]["fields"].as_array().unwrap();
    let get = |path: &str| field(fields, path).unwrap_or_else(|| panic!("{path}: {frames}"));
    assert_eq!(get("peer_id")["value"], 0xfff);
    assert_eq!(get("messages[0].command")["value"], 2);
    assert_eq!(get("messages[0].mtu")["value"], 1400);
    // connectID is copied raw from host memory: the wire bytes 1e 6c 43 2d, as ENet's API says.
    assert_eq!(get("messages[0].connect_id")["value"], 0x2d43_6c1e_u64);
    assert_eq!(get("checksum")["bit_offset"], 32);
}

/// A datagram that needs a connectID its conversation never sent is neither valid
/// nor corrupt: counted apart, and the dissection says why at the checksum.
#[test]
fn a_checksum_before_its_connect_id_is_learnt_is_unverified() {
    let (client, server): (SocketAddr, SocketAddr) =
        ("10.0.0.2:5000".parse().unwrap(), "10.0.0.1:7777".parse().unwrap());
    let connect_id = [0x11u8, 0x22, 0x33, 0x44];
    // CONNECT: peer 0xfff (zeros stand in), then a PING whose checksum uses connect_id.
    let mut connect = vec![0x8f, 0xff, 0x00, 0x01, 0, 0, 0, 0, 0x82, 0xff, 0x00, 0x01];
    connect.extend([0u8; 36]);
    connect.extend(connect_id);
    connect.extend([0u8; 4]);
    let c = crc32fast::hash(&connect);
    connect[4..8].copy_from_slice(&c.to_be_bytes());
    let mut ping = vec![0x00, 0x00, 0, 0, 0, 0, 0x85, 0xff, 0x00, 0x02];
    ping[2..6].copy_from_slice(&connect_id);
    let c = crc32fast::hash(&ping);
    ping[2..6].copy_from_slice(&c.to_be_bytes());
    let dir = std::env::temp_dir().join(format!("gpcap-enet-learn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let both = dir.join("both.pcap");
    common::udp_capture(
        &both,
        [(client, server, connect.clone()), (server, client, ping.clone())],
    );
    let only = dir.join("only.pcap");
    common::udp_capture(&only, [(server, client, ping.clone())]);
    let r = report(both.to_str().unwrap());
    assert_eq!(
        (
            r["validation"]["crc_ok"].as_u64(),
            r["validation"]["crc_unverified"].as_u64()
        ),
        (Some(2), None)
    );
    let r = report(only.to_str().unwrap());
    assert_eq!(r["validation"]["crc_ok"], 0);
    assert_eq!(r["validation"]["crc_mismatch"], 0);
    assert_eq!(r["validation"]["crc_unverified"], 1);
    let text = gpcap(&["analyze", "-d", DEF, only.to_str().unwrap()]);
    assert!(text.contains("crc_unverified"), "{text}");
    let shown = gpcap(&["dissect", "-d", DEF, only.to_str().unwrap()]);
    assert!(shown.contains("connect_id"), "{shown}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A command whose data runs past the datagram is a located fault; the commands before
/// it are kept.
#[test]
fn a_command_overrunning_the_datagram_is_located() {
    let p = program();
    let mut d = Dissector::new(p.clone());
    // peer 0, no sent time, checksum (not checked here), PING, then SEND_RELIABLE of 200 bytes with 3.
    let data = [
        0x00, 0x00, 0, 0, 0, 0, 0x85, 0xff, 0, 1, 0x86, 0x00, 0, 2, 0x00, 200, 1, 2, 3,
    ];
    let x = d.dissect(&data);
    let f = x.fault.expect("a fault");
    assert_eq!(
        (f.kind.code(), f.field.as_str(), f.bit),
        ("past_end", "messages[1].data", 16 * 8)
    );
    assert_eq!(x.messages.len(), 2);
    assert_eq!(x.messages[0].type_id, Some(5));
    assert_eq!(x.messages[1].type_id, Some(6));
    let ping = x.fields.iter().find(|f| f.kind == "message").unwrap();
    assert_eq!(
        (ping.bit_offset, ping.bit_len, ping.value),
        (48, 32, FieldValue::None)
    );
    // An undefined command is unknown_type at the command's own place.
    let x = d.dissect(&[0x00, 0x00, 0, 0, 0, 0, 0x8f, 0xff, 0, 1]);
    let f = x.fault.unwrap();
    assert_eq!(
        (f.kind.code(), f.field.as_str()),
        ("unknown_type", "messages[0].type")
    );
}

/// Sharded by address pair, each shard learns its own conversations' connectIDs and
/// counts its own messages: the report is the sequential one, number for number.
#[test]
fn sharded_equals_sequential() {
    use gpcap::analysis::{Analyzer, Config};
    let cfg = Config::from_program(program());
    let path = std::path::PathBuf::from(CAPTURE);
    let mut a = Analyzer::new(cfg.clone());
    let mut r = gpcap::capture::CaptureReader::open(&path).unwrap();
    a.begin_file(CAPTURE);
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    a.end_file(None, None);
    let seq = serde_json::to_value(a.finish()).unwrap();
    assert_eq!(seq["messages"]["total"], 6528);
    for shards in [2, 3] {
        let par = common::sharded(std::slice::from_ref(&path), cfg.clone(), shards, &mut |_, _| {}).unwrap();
        assert_eq!(serde_json::to_value(par).unwrap(), seq, "{shards} shards");
    }
    assert!(!gpcap::run::pipelinable(&cfg));
}

fn refusal(text: &str) -> String {
    match dissect::compile("bad.kdl", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => dissect::render(&e, false),
    }
}

/// What cannot be meant is refused with the field and a way out.
#[test]
fn check_refuses_checksums_and_messages_that_cannot_work() {
    // The articles' CRC is the first 4 bytes: a role=crc field elsewhere was ignored.
    let e =
        refusal("protocol \"p\" { id 1; }\nheader { bits sequence 16 role=sequence; bits crc 32 role=crc; }");
    assert!(
        e.contains("is not the header's first field") && e.contains("field=\"crc\""),
        "{e}"
    );
    let e = refusal(
        "protocol \"p\" { checksum \"crc32\" field=\"sum\"; }\nheader { bits sequence 16 role=sequence; bits crc 32 role=crc; }",
    );
    assert!(e.contains("the checksum field is `crc`"), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"crc32\" field=\"crc\" stand-in=\"conect_id\"; }\nheader { bits crc 32 role=crc; bits sequence 16 role=sequence; bits connect_id 32 remember=\"connect_id\"; }",
    );
    assert!(
        e.contains("no field remembers `conect_id`") && e.contains("did you mean `connect_id`?"),
        "{e}"
    );
    let e = refusal("protocol \"p\" { checksum \"md5\"; }\nheader { bits sequence 16 role=sequence; }");
    assert!(e.contains("\"crc32c\""), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits sequence 16 role=sequence; bits x 3 remember=\"x\"; }",
    );
    assert!(e.contains("1 to 8 whole bytes"), "{e}");
    // Messages need their block; fragments and per-message roles are not there yet.
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits sequence 16 role=sequence; }\nmessage 1 \"m\" { }",
    );
    assert!(e.contains("need a `messages` block"), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits h 8; }\nmessages { bits kind 8 role=type; bits seq 16 role=sequence; }\nmessage 1 \"m\" { }",
    );
    assert!(e.contains("needs `stream=\"NAME\"`"), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits h 8; }\nmessages { bits kind 8 role=type; bits seq 16 role=sequence stream=\"s\" key=\"kinf\"; }\nmessage 1 \"m\" { }",
    );
    assert!(
        e.contains("the key field `kinf`") && e.contains("did you mean `kind`?"),
        "{e}"
    );
    let e =
        refusal("protocol \"p\" { checksum \"none\"; }\nheader { bits seq 16 role=sequence stream=\"s\"; }");
    assert!(e.contains("streams are per message"), "{e}");
    let e = refusal(
        "protocol \"p\" { checksum \"none\"; }\nheader { bits h 8 role=type; }\nmessages { bits kind 8 role=type; }\nmessage 1 \"m\" { }",
    );
    // A header type beside messages makes datagram kinds: some kind must read them.
    assert!(e.contains("and no `packet` does"), "{e}");
}

/// gen refuses what it cannot write yet, naming it, instead of writing nothing.
#[test]
fn gen_refuses_messages_by_name() {
    let dir = std::env::temp_dir().join(format!("gpcap-enet-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(["gen", "-d", DEF, "-o"])
        .arg(dir.join("x.pcap"))
        .args(["--duration", "1"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("messages"), "{err}");
}

/// Reliable commands counted per flow and channel, unreliable ones per flow, channel and
/// reliable sequence: every stream's figures are the verifier's.
#[test]
fn message_streams_are_the_truths() {
    let (t, r) = (truth(), report(CAPTURE));
    let mut reliable = Vec::new();
    let mut unreliable_lost = 0;
    for f in r["flows"].as_array().unwrap() {
        let port = |a: &Value| {
            a.as_str()
                .unwrap()
                .rsplit(':')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };
        let (sport, dport) = (port(&f["src"]), port(&f["dst"]));
        for s in f["streams"].as_array().unwrap() {
            match s["name"].as_str().unwrap() {
                "reliable" => {
                    let channel: u64 = s["key"]
                        .as_str()
                        .unwrap()
                        .strip_prefix("channel=")
                        .unwrap()
                        .parse()
                        .unwrap();
                    reliable.push((sport, dport, channel, s["seq"].clone()));
                }
                _ => unreliable_lost += s["seq"]["lost"].as_u64().unwrap(),
            }
        }
    }
    let streams = t["reliable_streams"].as_array().unwrap();
    assert_eq!(reliable.len(), streams.len());
    for ts in streams {
        let key = (
            ts["src_port"].as_u64().unwrap(),
            ts["dst_port"].as_u64().unwrap(),
            ts["channel"].as_u64().unwrap(),
        );
        let (_, _, _, seq) = reliable.iter().find(|(a, b, c, _)| (*a, *b, *c) == key).unwrap();
        assert_eq!(seq["received"], ts["distinct"], "{key:?}");
        assert_eq!(seq["duplicates"], ts["retransmitted_copies"], "{key:?}");
        assert_eq!(
            seq["lost"].as_u64().unwrap() as usize,
            ts["gaps"].as_array().unwrap().len(),
            "{key:?}"
        );
        assert_eq!(seq["first"], ts["first"], "{key:?}");
        assert_eq!(seq["last"], ts["last"], "{key:?}");
    }
    assert_eq!(
        unreliable_lost,
        t["unreliable_sequenced"]["sequence_gaps"].as_u64().unwrap()
    );
}

/// Filters name a message's fields under `messages`: every SEND_FRAGMENT (one a
/// datagram here) selects its datagram, and the connect ids are in the 6 handshakes.
#[test]
fn filters_see_every_message() {
    let count = |f: &str| {
        gpcap(&["dissect", "-d", DEF, CAPTURE, "--filter", f, "--brief"])
            .lines()
            .count()
    };
    let t = truth();
    assert_eq!(
        count("messages.command == send_fragment"),
        t["command_counts"]["SEND_FRAGMENT"].as_u64().unwrap() as usize
    );
    assert_eq!(count("messages.connect_id"), 6);
}

/// Regression: a datagram whose header cannot be read never had its checksum checked,
/// and was counted "crc ok" (74 of 3,000 random datagrams).
#[test]
fn an_unreadable_header_is_not_a_valid_checksum() {
    let (client, server): (SocketAddr, SocketAddr) =
        ("10.0.0.2:5000".parse().unwrap(), "10.0.0.1:7777".parse().unwrap());
    let dir = std::env::temp_dir().join(format!("gpcap-enet-short-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("short.pcap");
    common::udp_capture(&path, [(client, server, vec![0x00, 0x00, 0x01])]);
    let r = report(path.to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(r["validation"]["crc_ok"], 0);
    assert_eq!(r["validation"]["header_errors"]["past_end"], 1);
}
