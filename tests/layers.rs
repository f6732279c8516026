//! Protocols inside protocols, against the libraries' own truth: netcode.io carrying
//! reliable.io carrying a game's messages (tests/fixtures/netcode-reliable: the unmodified
//! libraries, 3 clients, ~3% loss, messages up to 8 KB fragmented inside the encryption),
//! decrypted with the server's private key and analyzed layer by layer.

mod common;

use common::gpcap_ok;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

const DIR: &str = "tests/fixtures/netcode-reliable";

fn json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn meta() -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/truth_keys.jsonl")).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

fn analyze() -> Value {
    let a = stack_args("analyze", &["--json"]);
    let out = gpcap_ok(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    serde_json::from_str(&out).unwrap()
}

fn runs(v: &Value) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_u64().unwrap() - r[0].as_u64().unwrap() + 1)
        .sum()
}

/// A layer's flows by "src->dst".
fn flows(layer: &Value) -> HashMap<String, &Value> {
    layer["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                format!("{}->{}", f["src"].as_str().unwrap(), f["dst"].as_str().unwrap()),
                f,
            )
        })
        .collect()
}

/// The flow a reliable.io endpoint sends on.
fn endpoint_flow(name: &str, e: &Value) -> String {
    let port = 41000 + e["client"].as_u64().unwrap();
    if name.starts_with("client") {
        format!("127.0.0.1:{port}->127.0.0.1:40000")
    } else {
        format!("127.0.0.1:40000->127.0.0.1:{port}")
    }
}

#[test]
fn every_layer_agrees_with_the_libraries() {
    let truth = json(&format!("{DIR}/truth_summary.json"));
    let r = analyze();
    // netcode: every frame decrypted; each flow's datagrams and losses.
    // Every sealed packet opened; the 3 connection requests are not sealed: their
    // tokens are counted apart.
    assert_eq!(r["decryption"]["decrypted"], 3538 - 3);
    assert_eq!(r["decryption"]["tokens_opened"], 3);
    assert_eq!(r["decryption"]["mac_failures"], 0);
    assert_eq!(r["malformed"]["total"], 0);
    let netcode = flows(&r);
    for t in truth["flows"].as_array().unwrap() {
        let f = netcode[t["flow"].as_str().unwrap()];
        assert_eq!(f["datagrams"], t["datagrams_in_capture"], "{}", t["flow"]);
        let own = t["netcode_sequence_spaces"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| *k != "server_global")
            .unwrap()
            .1;
        assert_eq!(
            f["seq"]["lost"].as_u64().unwrap(),
            runs(&own["never_seen_dropped"]),
            "{}",
            t["flow"]
        );
    }
    let layers = r["layers"].as_array().unwrap();
    let names: Vec<&str> = layers.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reliable", "game"]);
    // reliable.io: per endpoint (one direction of a connection), the sequences never
    // seen, what the peer acked and the round trips timed from those acks.
    let reliable = &layers[0];
    assert_eq!(reliable["malformed"]["total"], 0);
    assert_eq!(reliable["validation"]["packets"], 2195);
    assert_eq!(reliable["validation"]["fragments"], 1288);
    let rf = flows(reliable);
    let acks = json(&format!("{DIR}/truth_acks.json"));
    let not_read: Vec<_> = (acks.as_object().unwrap().iter())
        .flat_map(|(name, a)| {
            let n = a["acked_in_capture_not_read"].as_array().unwrap();
            n.iter()
                .map(move |x| (name.as_str(), x["sequence"].as_u64(), x["frame"].as_u64()))
        })
        .collect();
    assert_eq!(not_read, [("server.slot2", Some(301), Some(3538))]);
    for (name, e) in truth["reliable"]["per_endpoint"].as_object().unwrap() {
        let f = rf[&endpoint_flow(name, &truth["endpoints"][name])];
        assert_eq!(f["seq"]["lost"], e["sequences_never_seen"], "{name}");
        // Exactly what the peer's captured acks say (truth_acks.json, from every
        // captured datagram's ack and ack_bits), which is reliable.io's own counter
        // plus the acks it never read: server.slot2's packet 301 is acked only by
        // client 2's packet 453 (frame 3538), sent after the server had stopped.
        let a = &acks[name];
        let not_read = a["acked_in_capture_not_read"].as_array().unwrap();
        assert_eq!(f["acks"]["acked"], a["acked_in_capture"], "{name}");
        assert_eq!(
            f["acks"]["acked"].as_u64(),
            Some(a["packets_acked"].as_u64().unwrap() + not_read.len() as u64),
            "{name}"
        );
        assert_eq!(
            a["packets_acked"],
            truth["endpoints"][name]["counters"]["packets_acked"]
        );
        for n in not_read {
            assert_eq!(n["peer_packet_delivered"], false, "{name}: {n}");
        }
        assert_eq!(f["acks"]["rtt_ms"]["samples"], f["acks"]["acked"], "{name}");
    }
    // Fragmented packets by fragment count: seen and completed.
    let rows: BTreeMap<String, (u64, u64)> = reliable["reassembly"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["fragments"].to_string(),
                (x["seen"].as_u64().unwrap(), x["completed"].as_u64().unwrap()),
            )
        })
        .collect();
    let theirs: BTreeMap<String, (u64, u64)> = truth["reliable"]["fragments_by_count"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (
                    v["packets_seen"].as_u64().unwrap(),
                    v["packets_completed"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(rows, theirs);
    // Game messages by type: those of every whole and reassembled reliable.io packet —
    // what reliable.io delivered, and the one input message of the packet it did not.
    let game = &layers[1];
    assert_eq!(game["malformed"]["total"], 0);
    let mut delivered: BTreeMap<String, u64> = BTreeMap::new();
    for dir in ["c2s", "s2c"] {
        for (name, m) in truth["messages"]["per_direction"][dir]["per_type"]
            .as_object()
            .unwrap()
        {
            *delivered.entry(name.clone()).or_default() += m["delivered"].as_u64().unwrap();
        }
    }
    *delivered.get_mut("input").unwrap() += 1;
    let ours: BTreeMap<String, u64> = game["messages"]["by_type"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(ours, delivered);
    assert_eq!(game["messages"]["total"], 3359 + 496);
}

#[test]
fn the_text_report_names_each_layer() {
    let key = meta()["private_key"].as_str().unwrap().to_string();
    let text = gpcap_ok(&[
        "analyze",
        "-d",
        "dissectors/netcode.kdl",
        "-d",
        "dissectors/yojimbo-messages.kdl",
        &format!("{DIR}/capture.pcap"),
        "--protocol-id",
        "0x3141592653589793",
        "--key",
        &key,
    ]);
    // `dissect-as="reliable"` finds reliable.kdl beside netcode.kdl; the next -d is
    // reliable's inner layer.
    assert!(text.contains("Layer reliable: inside netcode"), "{text}");
    assert!(text.contains("Layer game: inside reliable"), "{text}");
    assert!(text.contains("Messages: 3855"), "{text}");
}

/// Layers are per conversation: shards by address pair give the sequential report.
#[test]
fn sharded_layers_equal_sequential() {
    use gpcap::Config;
    use gpcap::analysis::Analyzer;
    use gpcap::layers::Stack;
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("gpcap-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("six.pcap");
    gpcap_ok(&[
        "gen",
        "-d",
        "dissectors/reliable.kdl",
        "-o",
        path.to_str().unwrap(),
        "--seed",
        "5",
        "--duration",
        "4",
        "--clients",
        "6",
        "--loss",
        "0.05",
    ]);
    let load = |p: &str| Arc::new(gpcap::dissect::load(std::path::Path::new(p)).unwrap());
    let mut cfg = Config::from_program(load("dissectors/reliable.kdl"));
    cfg.stack = Some(Arc::new(Stack {
        layers: vec![load("dissectors/yojimbo-messages.kdl")],
        ..Stack::default()
    }));
    assert!(!gpcap::run::pipelinable(&cfg));
    let mut a = Analyzer::new(cfg.clone());
    let mut reader = gpcap::capture::CaptureReader::open(&path).unwrap();
    a.begin_file(&path.display().to_string());
    while let Some(f) = reader.next_frame().unwrap() {
        a.frame(&f);
    }
    a.end_file(None, None);
    let seq = serde_json::to_value(a.finish()).unwrap();
    let par =
        serde_json::to_value(common::sharded(std::slice::from_ref(&path), cfg, 3, &mut |_, _| {}).unwrap())
            .unwrap();
    assert_eq!(seq["layers"], par["layers"]);
    assert!(seq["layers"][0]["validation"]["examined"].as_u64() > Some(1000));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression (a sibling of row 11): an inner layer's engine had a flow table and a flow
/// state budget of its own at their defaults, whatever the run's (a shard's share on
/// several cores: each shard's inner engine held a whole table). They are the run's.
#[test]
fn inner_layers_keep_to_the_runs_flow_table() {
    use gpcap::Config;
    use gpcap::analysis::Analyzer;
    use gpcap::layers::Stack;
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("gpcap-layers-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("six.pcap");
    let p = path.to_str().unwrap();
    gpcap_ok(&[
        "gen",
        "-d",
        "dissectors/reliable.kdl",
        "-o",
        p,
        "--duration",
        "2",
        "--clients",
        "6",
    ]);
    let load = |p: &str| Arc::new(gpcap::dissect::load(std::path::Path::new(p)).unwrap());
    let mut cfg = Config::from_program(load("dissectors/reliable.kdl"));
    cfg.max_flows = 4;
    cfg.stack = Some(Arc::new(Stack {
        layers: vec![load("dissectors/yojimbo-messages.kdl")],
        ..Stack::default()
    }));
    let mut a = Analyzer::new(cfg.clone());
    let mut reader = gpcap::capture::CaptureReader::open(&path).unwrap();
    a.begin_file(p);
    while let Some(f) = reader.next_frame().unwrap() {
        a.frame(&f);
    }
    a.end_file(None, None);
    let seq = a.finish();
    let inner = &seq.layers[0].report;
    assert!(inner.flows.len() <= 4, "{} inner flows", inner.flows.len());
    assert!(inner.capture.flows_not_tracked > 0);
    let par = common::sharded(std::slice::from_ref(&path), cfg, 2, &mut |_, _| {}).unwrap();
    assert_eq!(
        serde_json::to_value(&seq.layers).unwrap(),
        serde_json::to_value(&par.layers).unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Frames `dissect --filter FILTER` prints with the whole stack and the key, or the
/// exit code and error.
fn dissect_filtered(filter: &str) -> (i32, usize, String) {
    let (code, out, err) = dissect_brief(filter);
    (code, out.lines().count(), err)
}

/// `dissect --brief --filter FILTER` with the whole stack and the key.
fn dissect_brief(filter: &str) -> (i32, String, String) {
    let a = stack_args("dissect", &["--brief", "--filter", filter]);
    common::gpcap_run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>())
}

fn matching(filter: &str) -> u64 {
    let (code, n, err) = dissect_filtered(filter);
    assert_eq!(code, 0, "{filter}: {err}");
    n as u64
}

/// The frames `dissect --filter FILTER` prints.
fn matching_frames(filter: &str) -> BTreeSet<u64> {
    let (code, out, err) = dissect_brief(filter);
    assert_eq!(code, 0, "{filter}: {err}");
    out.lines()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// The frames that complete a reliable.io packet (whole, or its last fragment) whose
/// messages satisfy `test`, by the libraries' truth: each netcode payload carries one
/// reliable.io datagram, so a packet completes in the frame of its last fragment.
fn truth_frames(test: &dyn Fn(&[String]) -> bool) -> BTreeSet<u64> {
    let text = std::fs::read_to_string(format!("{DIR}/truth_packets.jsonl")).unwrap();
    let mut frames = BTreeSet::new();
    for line in text.lines() {
        let p: Value = serde_json::from_str(line).unwrap();
        let got: Option<Vec<u64>> = p["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_u64())
            .collect();
        let types: Vec<String> = (p["types"].as_array().unwrap().iter())
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        if let Some(got) = got
            && test(&types)
        {
            frames.insert(*got.iter().max().unwrap());
        }
    }
    frames
}

#[test]
fn filters_read_inner_layers_by_name() {
    let r = analyze();
    let reliable = &r["layers"][0];
    let game = &r["layers"][1];
    // One reliable.io datagram in each netcode payload: every one has a sequence.
    assert_eq!(
        matching("reliable.sequence >= 0"),
        reliable["fit"]["datagrams"].as_u64().unwrap()
    );
    assert_eq!(matching("reliable.sequence >= 0"), 3483);
    assert_eq!(
        matching("reliable.fragment_id >= 0"),
        reliable["validation"]["fragments"].as_u64().unwrap()
    );
    // Whole packets, and packets reassembled from fragments in the frame that completed
    // them: every game datagram.
    let packets = reliable["validation"]["packets"].as_u64().unwrap()
        + reliable["reassembly"]["completed"].as_u64().unwrap();
    assert_eq!(matching("reliable.message.sequence >= 0"), packets);
    assert_eq!(matching("game.messages.type >= 0"), packets);
    assert_eq!(game["fit"]["datagrams"].as_u64().unwrap(), packets);
    assert_eq!(packets, 2444);
    assert_eq!(matching("reliable.sequence > 10"), 3383);
    assert_eq!(
        matching("game.messages.type == chat || !game.messages.type == chat"),
        3538
    );
}

#[test]
fn filters_see_packets_an_inner_layer_reassembled() {
    // Every blob (over 2 KB) went in fragments: only reassembled packets carry one.
    let truth = json(&format!("{DIR}/truth_summary.json"));
    let mut whole = 0;
    for d in ["c2s", "s2c"] {
        let blob = &truth["messages"]["per_direction"][d]["per_type"]["blob"];
        assert_eq!(blob["in_fragmented_packets"], blob["sent"], "{d}");
        whole += blob["whole_in_capture"].as_u64().unwrap();
    }
    let blobs = matching_frames("game.messages.type == blob");
    assert_eq!(blobs.len() as u64, whole);
    assert_eq!(whole, 179);
    let r = analyze();
    assert_eq!(r["layers"][1]["messages"]["by_type"]["blob"], whole);
    // Frame by frame, as the libraries sent them.
    let has = |t: &'static str| move |types: &[String]| types.iter().any(|x| x == t);
    assert_eq!(blobs, truth_frames(&has("blob")));
    let chat = matching_frames("game.messages.type == chat");
    assert_eq!(chat, truth_frames(&has("chat")));
    assert_eq!(chat.len(), 344);
    let inputs = matching_frames("all game.messages.type == input");
    assert_eq!(inputs, truth_frames(&|t| t.iter().all(|x| x == "input")));
    assert_eq!(inputs.len(), 592);
    assert_eq!(
        matching_frames("game.messages.type >= 0"),
        truth_frames(&|_| true)
    );
}

/// `command` on the fixture with the whole stack and the key, and `more` arguments.
fn stack_args(command: &str, more: &[&str]) -> Vec<String> {
    let key = meta()["private_key"].as_str().unwrap().to_string();
    let mut a: Vec<String> = [
        command,
        "-d",
        "dissectors/netcode.kdl",
        "-d",
        "dissectors/reliable.kdl",
        "-d",
        "dissectors/yojimbo-messages.kdl",
        &format!("{DIR}/capture.pcap"),
        "--protocol-id",
        "0x3141592653589793",
        "--key",
        &key,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(more.iter().map(|s| s.to_string()));
    a
}

fn stack_dissect(more: &[&str]) -> String {
    let a = stack_args("dissect", more);
    gpcap_ok(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>())
}

#[test]
fn dissect_nests_inner_layers_in_the_tree() {
    let text = stack_dissect(&["--frame", "29"]);
    // The fragment reliable.io read in netcode's payload, at the payload's bits, then the
    // packet its last fragment completed, and the game's messages inside it.
    let expect = [
        "    payload: 0101000808155bce639f67dd27b7514f8e4d02d53679cb07a1af689df63d9d5b… (62 bytes)  [bit 16, 496 bits]",
        "        reliable type 1 (fragment), sequence 1, ok, fragment 8 of 9  [bit 16, 496 bits]",
        "            0000 1000 = fragment_id: 8  [bit 40, 8 bits]",
        "        reliable type 0 (message), sequence 1, ok  [reassembled from 9 fragments in frames 21, 22, 23, 24, 25, 26, 27, 28, 29; bits counted from its start]",
        "            0000 0001 0000 0000 = sequence: 1  [bit 8, 16 bits]",
        "                game type 256 (datagram), ok  [bit 64 of the reassembled packet, 65992 bits]",
        "                            0000 0101 = type: blob (5)  [bit 64, 8 bits]",
    ];
    let mut at = 0;
    for line in expect {
        let found = text[at..]
            .find(line)
            .unwrap_or_else(|| panic!("{line}\nnot in order in\n{text}"));
        at += found + line.len();
    }
    let text = stack_dissect(&["--frame", "20"]);
    assert!(text.contains("        reliable type 0 (message), sequence 3, ok  [bit 16, 1376 bits]\n"));
    assert!(text.contains("                game type 256 (datagram), ok  [bit 80, 1312 bits]\n"));
    assert!(text.contains("                            0000 0100 = type: chat (4)  [bit 80, 8 bits]\n"));
}

/// Checks that each byte-aligned integer field of `packet`'s tree (and of what it
/// carries) reads its raw value from the captured datagram's plaintext at its bit offset
/// (`plain`: the outermost carrier's bytes, starting at bit `start`); counts packets by
/// layer and whether they lie in the datagram.
fn check_carried(
    fields: &Value,
    plain: &[u8],
    start: u64,
    counts: &mut BTreeMap<(String, bool), u64>,
) -> u64 {
    let mut checked = 0;
    for f in fields.as_array().unwrap() {
        for (layer, packets) in f["carried"].as_object().into_iter().flatten() {
            for p in packets.as_array().unwrap() {
                let in_datagram = !p["at_bit"].is_null();
                *counts.entry((layer.clone(), in_datagram)).or_default() += 1;
                if in_datagram {
                    checked += read_back(&p["fields"], plain, start);
                }
                checked += check_carried(&p["fields"], plain, start, counts);
            }
        }
        if f["fields"].is_array() {
            checked += check_carried(&f["fields"], plain, start, counts);
        }
    }
    checked
}

/// Reads every whole-byte integer field of `fields` (and their children) back from `plain`.
fn read_back(fields: &Value, plain: &[u8], start: u64) -> u64 {
    let mut n = 0;
    for f in fields.as_array().unwrap() {
        let (at, len) = (f["bit_offset"].as_u64().unwrap(), f["bit_len"].as_u64().unwrap());
        if let Some(raw) = f["raw"].as_u64()
            && f["value"].is_number()
            && f["kind"] != "derived"
            && at % 8 == 0
            && len % 8 == 0
            && (8..=64).contains(&len)
        {
            let from = ((at - start) / 8) as usize;
            let bytes = &plain[from..from + (len / 8) as usize];
            let v = bytes.iter().rev().fold(0u64, |v, b| v << 8 | *b as u64);
            assert_eq!(v, raw, "{} at bit {at}", f["path"]);
            n += 1;
        }
        if f["fields"].is_array() {
            n += read_back(&f["fields"], plain, start);
        }
    }
    n
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn dissect_json_places_inner_fields_in_the_captured_datagram() {
    let r = analyze();
    let out = stack_dissect(&["--jsonl", "--show-keys"]);
    let mut counts = BTreeMap::new();
    let mut checked = 0;
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        for f in v["fields"].as_array().unwrap() {
            if f["carried"].is_null() {
                continue;
            }
            // netcode's payload: its value is the decrypted bytes at its own offset.
            let plain = hex(f["value"].as_str().unwrap());
            let start = f["bit_offset"].as_u64().unwrap();
            checked += check_carried(&Value::Array(vec![f.clone()]), &plain, start, &mut counts);
        }
    }
    let n = |layer: &str, inside: bool| counts.get(&(layer.to_string(), inside)).copied().unwrap_or(0);
    let reliable = &r["layers"][0];
    // Every reliable.io datagram, in the datagram; every packet it reassembled, apart.
    assert_eq!(
        n("reliable", true),
        reliable["fit"]["datagrams"].as_u64().unwrap()
    );
    assert_eq!(
        n("reliable", false),
        reliable["reassembly"]["completed"].as_u64().unwrap()
    );
    // Every game datagram: inside whole reliable.io packets, or inside reassembled ones.
    assert_eq!(
        n("game", true),
        reliable["validation"]["packets"].as_u64().unwrap()
    );
    assert_eq!(
        n("game", true) + n("game", false),
        r["layers"][1]["fit"]["datagrams"].as_u64().unwrap()
    );
    assert!(checked > 20_000, "{checked} fields read back");
    // On several cores, the same bytes.
    assert_eq!(stack_dissect(&["--jsonl", "--show-keys", "--threads", "3"]), out);
}

#[test]
fn an_unknown_layer_field_is_refused_with_the_nearest() {
    let (code, _, err) = dissect_filtered("reliable.sequnce > 10");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("layer reliable has no field `sequnce`; did you mean `reliable.sequence`?"),
        "{err}"
    );
    let (code, _, err) = dissect_filtered("game.type == chat");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean `game.messages.type`?"), "{err}");
    let (code, _, err) = dissect_filtered("game.messages.type == chatt");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`chatt` is not a value of messages.type"), "{err}");
    // An unknown layer is an unknown field of the outer definition, as before.
    let (code, _, err) = dissect_filtered("reliabel.sequence > 10");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown field `reliabel.sequence`"), "{err}");
}

/// `dissect --brief` ends each line with the Info the TUI shows: with the key and the
/// stack, what the plaintext and every inner layer read (not the ciphertext).
#[test]
fn brief_lines_say_what_inner_layers_read() {
    let (code, out, err) = dissect_brief("frame == 6 || frame == 8 || frame == 29");
    assert_eq!(code, 0, "{err}");
    let info: Vec<&str> = out.lines().map(|l| l.split_once(" — ").unwrap().1).collect();
    assert_eq!(
        info,
        [
            "client_index=0 (0x00000000) max_clients=4 (0x00000004)",
            "payload seq 2 · reliable seq 0 ack 65535 · snapshot",
            "payload seq 11 · reliable seq 1 fragment 8 of 9 · reliable seq 1 ack 1 reassembled from 9 · blob input",
        ]
    );
}

/// The private key without `--protocol-id`: the capture's requests carry another id than
/// netcode.kdl's (0x1122334455667788). The requests' id is taken, said once on stderr and
/// in the report, and everything reads as with the right id given; an id given by flag
/// is kept, and when nothing opens under it the run says which id the requests carry.
#[test]
fn the_connection_requests_protocol_id_is_taken() {
    let key = meta()["private_key"].as_str().unwrap().to_string();
    let capture = format!("{DIR}/capture.pcap");
    let stack = |more: &[&str]| {
        let mut a = vec![
            "analyze",
            "-d",
            "dissectors/netcode.kdl",
            "-d",
            "dissectors/reliable.kdl",
            "-d",
            "dissectors/yojimbo-messages.kdl",
            "--key",
            &key,
            &capture,
            "--json",
        ];
        a.extend_from_slice(more);
        common::gpcap_run(&a.iter().map(|s| &**s).collect::<Vec<_>>())
    };
    let (code, out, err) = stack(&[]);
    assert_eq!(code, 0, "{err}");
    let said = "the connection requests carry protocol id 0x3141592653589793, not the definition's 0x1122334455667788: read with theirs";
    assert_eq!(err.matches(said).count(), 1, "{err}");
    assert!(!err.contains("hint"), "{err}");
    let mut taken: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        taken["decryption"]["protocol_id_from_requests"],
        serde_json::json!({"definition": "0x1122334455667788", "requests": "0x3141592653589793"})
    );
    assert_eq!(taken["protocol"]["source"], "connection requests");
    let given = analyze();
    assert!(given["decryption"].get("protocol_id_from_requests").is_none());
    // Apart from saying where the id came from, the same report.
    taken["decryption"]
        .as_object_mut()
        .unwrap()
        .remove("protocol_id_from_requests");
    taken["protocol"]["source"] = "flag".into();
    assert_eq!(taken, given);
    // A wrong id given by flag is the user's: nothing opens, and the hint names theirs.
    let (code, _, err) = stack(&["--protocol-id", "0x1122334455667788"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains(said), "{err}");
    assert!(
        err.contains(
            "nothing decrypted: the connection requests carry protocol id 0x3141592653589793, not --protocol-id's 0x1122334455667788; pass --protocol-id 0x3141592653589793"
        ),
        "{err}"
    );
}

/// `live` on a stream says so too, as the file commands do: it called the library's
/// resolve directly and took the requests' id without a word.
#[test]
fn live_says_the_connection_requests_protocol_id_was_taken() {
    let capture = std::fs::File::open(format!("{DIR}/capture.pcap")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["live", "-", "--no-tui", "--json", "-d", "dissectors/netcode.kdl"])
        .stdin(capture)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said = "the connection requests carry protocol id 0x3141592653589793, not the definition's 0x1122334455667788: read with theirs";
    assert_eq!(err.matches(said).count(), 1, "{err}");
}
