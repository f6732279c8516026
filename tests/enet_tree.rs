//! Every message of an ENet datagram in the field tree (`dissect` and the TUI): each
//! `messages[i]` with its header and body fields, and the bits of a field read most
//! significant bit first shown where they are (ENet's peer id is the low 12 bits of a
//! big-endian word). TUI screens drawn into ratatui's TestBackend at two sizes.

mod common;

use common::gpcap_ok as gpcap;
use gpcap::analysis::Config;
use gpcap::dissect;
use gpcap_tui::{App, Index, load};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Modifier;
use std::path::Path;
use std::sync::Arc;

const CAPTURE: &str = "tests/fixtures/enet/capture.pcap";
const DEF: &str = "dissectors/enet.kdl";

fn app(definition: &Path) -> App {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = Arc::new(dissect::load(&root.join(definition)).unwrap());
    let path = root.join(CAPTURE);
    let (tx, rx) = std::sync::mpsc::channel();
    load(&path, Config::from_program(p.clone()), tx);
    let mut index = Index::new(&path);
    index.name = "enet/capture.pcap".into();
    let mut a = App::new(index, rx, Config::from_program(p));
    a.color = false;
    a.tick();
    a
}

/// Key names, `text:…` typed (`~` for a space); each key then ticks until the screen has caught up.
fn keys(a: &mut App, script: &str) {
    for word in script.split_whitespace() {
        let code = match word {
            "Down" => KeyCode::Down,
            "Enter" => KeyCode::Enter,
            w if w.starts_with("text:") => {
                for c in w[5..].replace('~', " ").chars() {
                    a.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
                }
                continue;
            }
            w => KeyCode::Char(w.chars().next().unwrap()),
        };
        a.key(KeyEvent::new(code, KeyModifiers::NONE));
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        a.tick();
        while !a.scan_finished() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(2));
            a.tick();
        }
    }
}

fn screen(a: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| gpcap_tui::draw(f, a)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The bytes the hex pane highlights, by offset: `true` for a byte the field covers
/// whole, `false` for one it covers in part (underlined).
/// Where the UDP payload starts in the frames of the capture (Ethernet, IPv4, UDP).
const UDP: usize = 42;

fn highlighted(a: &mut App, w: u16, h: u16) -> Vec<(usize, bool)> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| gpcap_tui::draw(f, a)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut out = Vec::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        // A hex line: `│0010 00 03 …`, in the Bytes pane on the right (offsets in the
        // frame).
        let Some(at) = line
            .char_indices()
            .filter(|&(_, c)| c == '│')
            .map(|(i, _)| i)
            .nth(2)
        else {
            continue;
        };
        let col = line[..at].chars().count() as u16 + 1;
        let head: String = (col..col + 5).map(|x| buf[(x, y)].symbol().to_string()).collect();
        let Some(base) = head
            .strip_suffix(' ')
            .and_then(|o| usize::from_str_radix(o, 16).ok())
        else {
            continue;
        };
        for k in 0..16u16 {
            let x = col + 5 + 3 * k;
            if x >= w || buf[(x, y)].symbol() == " " {
                break;
            }
            let m = buf[(x, y)].modifier;
            if m.contains(Modifier::REVERSED) {
                out.push((base + k as usize, !m.contains(Modifier::UNDERLINED)));
            }
        }
    }
    out
}

#[test]
fn dissect_shows_msb_fields_bits_where_they_are() {
    let text = gpcap(&["dissect", "-d", DEF, CAPTURE, "--frame", "117"]);
    for want in [
        "    0... .... = sent_time_flag: False  [bit 0, 1 bit]",
        "    ..00 .... = session: 0  [bit 2, 2 bits]",
        "    .... 0000 0000 0000 = peer_id: 0  [bit 4, 12 bits]",
        "            0... .... = acknowledge: False  [bit 304, 1 bit]",
        "            .... 0001 = command: acknowledge (1)  [bit 308, 4 bits]",
        "            0000 0000 0000 0110 = reliable_sequence: 6  [bit 320, 16 bits]",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // A client's datagram to the server: peer id 1 in the low 12 bits.
    let text = gpcap(&["dissect", "-d", DEF, CAPTURE, "--frame", "20"]);
    assert!(
        text.contains("    .... 0000 0000 0001 = peer_id: 1  [bit 4, 12 bits]"),
        "{text}"
    );
    assert!(
        text.contains("            .... 1100 = command: send_unreliable_fragment (12)"),
        "{text}"
    );
}

/// Frame 117: the server acknowledges five reliable commands in one datagram.
#[test]
fn the_tree_has_every_message_with_its_fields() {
    let mut a = app(Path::new(DEF));
    keys(&mut a, "g text:117 Enter");
    assert_eq!(a.selected_row().unwrap().frame, 117);
    let d = a.detail.as_ref().unwrap().dissection.clone().unwrap();
    let p = a.program.clone().unwrap();
    let paths: Vec<String> = (0..d.fields.len()).map(|i| dissect::path_of(&p, &d, i)).collect();
    assert_eq!(d.messages.len(), 5);
    for i in 0..5 {
        for f in [
            "command",
            "channel",
            "reliable_sequence",
            "received_reliable_sequence",
            "received_sent_time",
        ] {
            let path = format!("messages[{i}].{f}");
            assert!(paths.contains(&path), "{path} in {paths:?}");
        }
    }
    // t: the tree; the header's 5 fields, `messages`, `[0]` and its first 3 fields:
    // messages[0].command, read MSB first in the low nibble of byte 6.
    keys(&mut a, &format!("t {}", "Down ".repeat(10)));
    let f = d.fields[a.field];
    assert_eq!(paths[a.field], "messages[0].command");
    assert_eq!((f.bit_offset, f.bit_len), (52, 4));
    for (w, h) in [(80u16, 24u16), (200, 50)] {
        // The dump is the whole frame: the datagram from byte 42 (Ethernet, IPv4, UDP).
        assert_eq!(highlighted(&mut a, w, h), [(UDP + 6, false)], "{w}x{h}");
        insta::assert_snapshot!(format!("enet_messages_command_{w}x{h}"), screen(&mut a, w, h));
    }
    // messages[4].received_sent_time: bits 352..368, bytes 44 and 45.
    keys(&mut a, &"Down ".repeat(40));
    assert_eq!(paths[a.field], "messages[4].received_sent_time");
    for (w, h) in [(80u16, 24u16), (200, 50)] {
        assert_eq!(
            highlighted(&mut a, w, h),
            [(UDP + 44, true), (UDP + 45, true)],
            "{w}x{h}"
        );
        insta::assert_snapshot!(format!("enet_messages_last_field_{w}x{h}"), screen(&mut a, w, h));
    }
    // The header's peer id: the low nibble of byte 0 and byte 1.
    let mut a = app(Path::new(DEF));
    keys(&mut a, "g text:117 Enter t Down Down Down");
    assert_eq!(paths[a.field], "peer_id");
    assert_eq!(highlighted(&mut a, 80, 24), [(UDP, false), (UDP + 1, true)]);
}

/// A message put back from fragments inside messages is the application's bytes, not a
/// datagram: the tree says so (it once read the bytes as an ENet header and commands);
/// read as the type `reassembled-as` names, it shows that type's fields.
#[test]
fn a_reassembled_message_is_its_type_or_bytes_never_a_datagram() {
    let mut a = app(Path::new(DEF));
    keys(&mut a, "/ text:reassembled Enter");
    assert_eq!(a.view.len(), 119);
    let d = a.detail.as_ref().unwrap();
    assert_eq!(d.payload().len(), 2431);
    assert!(
        d.dissection.is_none(),
        "{:?}",
        d.dissection.as_ref().map(|x| x.fields.len())
    );
    assert!(
        d.note
            .as_deref()
            .unwrap_or("")
            .starts_with("reassembled from 2 fragments (frames 19, 20)")
    );

    let enet = std::fs::read_to_string(DEF).unwrap();
    let data = r#"bytes data "data_length" role=fragment-data"#;
    let typed = enet.replace(data, &format!(r#"{data} reassembled-as="app_message""#))
        + "message 13 \"app_message\" {\n    bits id 32\n    bits sender 8\n    bits kind 8\n    bits receiver 8\n    bits magic 8\n    rest filler\n}\n";
    let path = std::env::temp_dir().join(format!("gpcap-enet-tree-{}.kdl", std::process::id()));
    std::fs::write(&path, typed).unwrap();
    let mut a = app(&path);
    keys(&mut a, "/ text:app_message.id~==~5 Enter");
    assert_eq!(a.view.len(), 1);
    let d = a
        .detail
        .as_ref()
        .unwrap()
        .dissection
        .clone()
        .expect("read as app_message");
    assert_eq!((d.packet_type, d.fault.is_none()), (Some(13), true));
    let p = a.program.clone().unwrap();
    let paths: Vec<String> = (0..d.fields.len()).map(|i| dissect::path_of(&p, &d, i)).collect();
    assert_eq!(paths, ["id", "sender", "kind", "receiver", "magic", "filler"]);
    keys(&mut a, "t Down Down");
    assert_eq!(highlighted(&mut a, 80, 24), [(5, true)]);
    insta::assert_snapshot!("enet_reassembled_as_80x24", screen(&mut a, 80, 24));
}
