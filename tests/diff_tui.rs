//! `gpcap diff --tui` drawn into ratatui's TestBackend at the sizes tests/tui.rs uses
//! (60×20, 80×24, 200×50), over a session gen wrote at two points: both directions'
//! timelines with the lost, late and reordered datagrams marked, and the list moved by
//! keys.

use gpcap::generate::points::{PointEmit, PointsConfig, simulate_points};
use gpcap::sinks::diff::{ClockMode, DiffReport, Options};
use gpcap_tui::diff::{DiffView, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A session at two points through a NAT, clocks an hour and 50 ppm apart, lossy,
/// duplicating and reordering, and diff's report of it.
fn report() -> DiffReport {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("gpcap-diff-tui-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = gpcap::load_definition("dissectors/article.kdl").unwrap();
    let cfg = PointsConfig {
        seed: 7,
        duration_s: 10.0,
        loss: 0.04,
        dup: 0.03,
        reorder: 0.04,
        jitter_ms: 5.0,
        loss_before: 0.02,
        offset_s: 3600.0,
        skew_ppm: 50.0,
        nat: true,
        big: 0.3,
        ..PointsConfig::default()
    };
    let paths = [dir.join("a.pcap"), dir.join("b.pcap")];
    let mut w: Vec<_> = paths
        .iter()
        .map(|p| gpcap::capture::PcapWriter::new(std::fs::File::create(p).unwrap(), 1, 65535, true).unwrap())
        .collect();
    simulate_points(&program, &cfg, &mut |e| {
        if let PointEmit::Frame { point, t_ns, data } = e {
            w[point].write(t_ns, data, data.len() as u32).unwrap();
        }
    })
    .unwrap();
    drop(w);
    let mut r = gpcap::run::diff::diff(
        paths,
        gpcap::Config::from_program(program),
        Options::default(),
        ClockMode::Fit,
    )
    .unwrap()
    .report;
    let _ = std::fs::remove_dir_all(&dir);
    // Names in snapshots do not depend on where the files were.
    r.points[0].name = "client.pcap".into();
    r.points[1].name = "server.pcap".into();
    r
}

fn screen(v: &mut DiffView, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, v)).unwrap();
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn press(v: &mut DiffView, keys: &[KeyCode]) {
    for k in keys {
        v.key(KeyEvent::new(*k, KeyModifiers::NONE));
    }
}

#[test]
fn diff_view_at_three_sizes() {
    let r = report();
    assert_eq!(r.directions.len(), 2);
    for (w, h) in [(60, 20), (80, 24), (200, 50)] {
        let mut v = DiffView::new(r.clone());
        v.color = false;
        insta::assert_snapshot!(format!("first_direction_{w}x{h}"), screen(&mut v, w, h));
        press(
            &mut v,
            &[KeyCode::Right, KeyCode::Down, KeyCode::Down, KeyCode::Down],
        );
        insta::assert_snapshot!(format!("second_direction_moved_{w}x{h}"), screen(&mut v, w, h));
        press(&mut v, &[KeyCode::End]);
        insta::assert_snapshot!(format!("second_direction_end_{w}x{h}"), screen(&mut v, w, h));
    }
}

/// Every lost datagram of a direction is in its list, and marked on its upstream lane.
#[test]
fn lost_datagrams_are_listed_and_marked() {
    let r = report();
    for (k, d) in r.directions.iter().enumerate() {
        let mut v = DiffView::new(r.clone());
        v.direction = k;
        let lost = v
            .rows()
            .iter()
            .filter(|x| x.marks.contains(&gpcap_tui::diff::Mark::Lost))
            .count() as u64;
        assert_eq!(lost, d.lost.min(1000));
        let up = if d.upstream == "A" { 0 } else { 1 };
        let marked: u64 = d
            .timeline
            .iter()
            .map(|b| b[gpcap::sinks::diff::timeline::ONLY + up] as u64)
            .sum();
        assert_eq!(marked, d.lost, "{}", d.a);
        let late: u64 = d
            .timeline
            .iter()
            .map(|b| b[gpcap::sinks::diff::timeline::LATE + 1 - up] as u64)
            .sum();
        assert_eq!(late, d.delay.as_ref().map_or(0, |x| x.late));
    }
    // Q quits; keys past either end stay in the list.
    let mut v = DiffView::new(r);
    press(&mut v, &[KeyCode::Up, KeyCode::PageUp, KeyCode::Left]);
    assert_eq!((v.direction, v.selected), (1, 0));
    press(&mut v, &[KeyCode::Char('q')]);
    assert!(v.quit);
}

/// Nothing to compare is said, not drawn as empty lanes.
#[test]
fn nothing_to_compare_is_said() {
    let mut r = report();
    r.directions.clear();
    r.verdict = gpcap::sinks::diff::Verdict::NoCommonFlow;
    let mut v = DiffView::new(r);
    let s = screen(&mut v, 80, 24);
    assert!(s.starts_with("Nothing to compare (NoCommonFlow)"), "{s}");
}
