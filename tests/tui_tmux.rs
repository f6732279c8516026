//! End to end: the real binary in tmux (send-keys, capture-pane) over a bundled capture,
//! navigating to a malformed packet. Skipped with a message where tmux is absent (CI
//! installs it).

mod common;
use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wait_for(session: &str, text: &str) -> String {
    let start = Instant::now();
    loop {
        let screen = tmux(&["capture-pane", "-p", "-t", session]);
        if screen.contains(text) || start.elapsed() > Duration::from_secs(20) {
            return screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn navigate_to_a_malformed_packet() {
    if Command::new("tmux").arg("-V").output().is_err() {
        common::skipped(module_path!(), "tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let root = env!("CARGO_MANIFEST_DIR");
    let session = format!("gpcap-e2e-{}", std::process::id());
    let cmd = format!("cd {root} && {bin} tui captures/malformed.pcap -d dissectors/article.kdl");
    tmux(&["new-session", "-d", "-s", &session, "-x", "120", "-y", "40", &cmd]);
    let first = wait_for(&session, "malformed.pcap ·");
    assert!(first.contains("Packets ("), "first screen:\n{first}");
    tmux(&["send-keys", "-t", &session, "/", "malformed", "Enter"]);
    let list = wait_for(&session, "filter: malformed");
    tmux(&["send-keys", "-t", &session, "t"]);
    let detail = wait_for(&session, "Malformed: past_end");
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-session", "-t", &session]);
    assert!(list.contains("MALFORMED"), "list:\n{list}");
    assert!(detail.contains("Malformed: past_end at bit"), "detail:\n{detail}");
    assert!(detail.contains("end_check"), "detail:\n{detail}");
}
