//! The terminal UI drawn into ratatui's TestBackend at 80×24 and 160×48, every tab,
//! driven by scripted key presses over bundled captures.

use gpcap::analysis::Config;
use gpcap::dissect;
use gpcap::tui::{App, Index, load};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::Path;
use std::sync::Arc;

fn app(capture: &str, definition: &str) -> App {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = Arc::new(dissect::load(&root.join("dissectors").join(definition)).unwrap());
    // A bare name is a bundled capture; a path is relative to the repository.
    let path = if capture.contains('/') {
        root.join(capture)
    } else {
        root.join("captures").join(capture)
    };
    let (tx, rx) = std::sync::mpsc::channel();
    load(&path, Config::from_program(p.clone()), tx);
    let mut index = Index::new(&path);
    // Names in snapshots do not depend on where the repository is.
    index.name = capture.to_string();
    let mut a = App::new(index, rx, Config::from_program(p));
    a.color = false;
    a.tick();
    a
}

fn keys(a: &mut App, script: &str) {
    for word in script.split_whitespace() {
        let code = match word {
            "Down" => KeyCode::Down,
            "Up" => KeyCode::Up,
            "PageDown" => KeyCode::PageDown,
            "End" => KeyCode::End,
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Tab" => KeyCode::Tab,
            "Right" => KeyCode::Right,
            "Left" => KeyCode::Left,
            "Space" => KeyCode::Char(' '),
            w if w.starts_with("text:") => {
                for c in w[5..].replace('_', " ").chars() {
                    a.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
                }
                continue;
            }
            w => KeyCode::Char(w.chars().next().unwrap()),
        };
        a.key(KeyEvent::new(code, KeyModifiers::NONE));
    }
}

fn screen(a: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| gpcap::tui::ui::draw(f, a)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

macro_rules! snap {
    ($name:ident, $capture:expr, $def:expr, $script:expr) => {
        #[test]
        fn $name() {
            for (w, h) in [(80u16, 24u16), (160, 48)] {
                let mut a = app($capture, $def);
                keys(&mut a, $script);
                insta::assert_snapshot!(
                    format!("{}_{w}x{h}", stringify!($name)),
                    screen(&mut a, w, h)
                );
            }
        }
    };
}

snap!(
    packets_fields_and_bits,
    "clean.pcap",
    "article.kdl",
    "Down Down t Down Down Down Down"
);
snap!(
    packets_filtered,
    "vlan-corrupt.pcap",
    "example-shooter.kdl",
    "/ text:crc.fail Enter"
);
snap!(flows, "lossy-bursts.pcap", "article.kdl", "2");
snap!(reassembly, "attacks.pcap", "article.kdl", "3");
snap!(loss, "lossy-bursts.pcap", "article.kdl", "4");
snap!(mtu, "mtu-df.pcap", "article.kdl", "5");
snap!(help, "clean.pcap", "article.kdl", "?");
// reliable.io: derived fields in brackets (fragment 0 carries the header), and the
// ack columns of the flows tab.
snap!(
    reliable_fragment_header,
    "tests/fixtures/reliable/capture.pcap",
    "reliable.kdl",
    "t End"
);
snap!(
    reliable_flows_with_acks,
    "tests/fixtures/reliable/capture.pcap",
    "reliable.kdl",
    "2"
);

#[test]
fn filter_errors_are_shown_not_applied() {
    let mut a = app("clean.pcap", "article.kdl");
    let all = a.view.len();
    keys(&mut a, "/ text:type_==_bogus Enter");
    assert_eq!(a.view.len(), all);
    let (msg, err) = a.message.clone().unwrap();
    assert!(err && msg.contains("no packet type is named `bogus`"), "{msg}");
}

#[test]
fn goto_follow_and_fold() {
    let mut a = app("clean.pcap", "article.kdl");
    keys(&mut a, "g text:100 Enter");
    assert_eq!(a.selected_row().unwrap().frame, 100);
    keys(&mut a, "f");
    assert!(a.filter.text.starts_with("flow "), "{}", a.filter.text);
    assert_eq!(a.selected_row().unwrap().frame, 100);
    let before = a.view.len();
    assert!(before > 0);
    keys(&mut a, "t Down Down Down");
    let shown = a.visible_fields().len();
    keys(&mut a, "Space");
    assert!(a.visible_fields().len() <= shown);
}

#[test]
fn ip_reassembled_datagrams_show_their_fields() {
    let mut a = app("article.pcap", "article.kdl");
    keys(&mut a, "/ text:ipfrag Enter");
    assert_eq!(a.view.len(), 21);
    let d = a.detail.as_ref().unwrap();
    let dissection = d.dissection.as_ref().expect("the rebuilt datagram is dissected");
    assert!(dissection.fault.is_none());
    assert_eq!(dissection.packet_type, Some(4));
    assert_eq!(d.payload().len(), 1842);
}

/// Regression: the TUI froze on large captures (the screen held the index's read lock
/// while asking for it again, behind the loader waiting to write). Now the loader sends
/// updates and the screen owns its copy; this drives both at once, drawing and paging
/// while a large capture is indexed, and must finish.
#[test]
fn loader_and_screen_run_together_on_a_large_capture() {
    use gpcap::capture::writer::PcapWriter;
    use gpcap::generate::sim::{Emit, SimConfig, simulate_into};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = Arc::new(dissect::load(&root.join("dissectors/article.kdl")).unwrap());
    let dir = std::env::temp_dir().join(format!("gpcap-tui-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("large.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap(), 1, 65535, true).unwrap();
    let cfg = SimConfig {
        seed: 5,
        duration_s: 30.0,
        clients: 24,
        loss: 0.01,
        ..SimConfig::default()
    };
    simulate_into(&p, &cfg, &mut |e| {
        if let Emit::Frame { t_ns, data } = e {
            w.write(t_ns, data, data.len() as u32).unwrap();
        }
    })
    .unwrap();
    drop(w);
    let (tx, rx) = std::sync::mpsc::channel();
    let loader = {
        let (path, cfg) = (path.clone(), Config::from_program(p.clone()));
        std::thread::spawn(move || load(&path, cfg, tx))
    };
    let mut a = App::new(Index::new(&path), rx, Config::from_program(p));
    a.color = false;
    let mut t = Terminal::new(TestBackend::new(100, 30)).unwrap();
    let start = std::time::Instant::now();
    let mut frames_drawn = 0;
    while !a.index.done {
        assert!(
            start.elapsed().as_secs() < 300,
            "the screen did not finish with the loader"
        );
        a.tick();
        t.draw(|f| gpcap::tui::ui::draw(f, &mut a)).unwrap();
        a.key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
        frames_drawn += 1;
    }
    loader.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(a.index.rows.len() > 60_000, "only {} rows", a.index.rows.len());
    assert!(a.index.report.is_some());
    assert!(frames_drawn > 1);
}
