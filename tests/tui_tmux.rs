//! End to end: the real binary in tmux (send-keys, capture-pane) over bundled captures:
//! navigating to a malformed packet, and filtering on a dissected field then writing
//! the result with `w`; a stream on stdin that has not sent its header yet. Skipped with a message where tmux is absent (CI installs it).

mod common;
use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wait_for(session: &str, text: &str) -> String {
    wait_until(session, |screen| screen.contains(text))
}

/// Waits until `text` has left the screen: a key sent right after Escape, before the
/// application has read it, arrives with it as one Alt chord.
fn wait_gone(session: &str, text: &str) -> String {
    wait_until(session, |screen| !screen.contains(text))
}

fn wait_until(session: &str, done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let screen = tmux(&["capture-pane", "-p", "-t", session]);
        if done(&screen) || start.elapsed() > Duration::from_secs(20) {
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
    tmux(&["send-keys", "-t", &session, "t", "End"]);
    let detail = wait_for(&session, "[Malformed: past_end");
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-session", "-t", &session]);
    assert!(list.contains(" malformed "), "list:\n{list}");
    assert!(
        detail.contains("[Malformed: past_end at bit"),
        "detail:\n{detail}"
    );
    assert!(
        detail.contains("past_end at bit 336 (payload byte 42, frame byte 84)"),
        "detail:\n{detail}"
    );
}

#[test]
fn filter_on_a_dissected_field_and_write_it() {
    if Command::new("tmux").arg("-V").output().is_err() {
        common::skipped(module_path!(), "tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = std::env::temp_dir().join(format!("gpcap-e2e-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("resting.pcapng");
    let session = format!("gpcap-e2e-w-{}", std::process::id());
    let cmd = format!("cd {root} && {bin} tui captures/lossy-bursts.pcap -d dissectors/article.kdl");
    tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "45", &cmd]);
    wait_for(&session, "lossy-bursts.pcap ·");
    // Typed as a person would, literally (-l), then Enter.
    tmux(&["send-keys", "-t", &session, "/"]);
    tmux(&[
        "send-keys",
        "-t",
        &session,
        "-l",
        "scene.objects.at_rest == true && reassembled",
    ]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let list = wait_for(&session, "89 packets match");
    // w offers a file name: replace it (Ctrl-U) with ours.
    tmux(&["send-keys", "-t", &session, "w", "C-u"]);
    tmux(&["send-keys", "-t", &session, "-l", out.to_str().unwrap()]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let written = wait_for(&session, "wrote 462 frames");
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-session", "-t", &session]);
    assert!(list.contains("89 packets match"), "list:\n{list}");
    assert!(
        written.contains("wrote 462 frames of 89 packets shown"),
        "after w:\n{written}"
    );
    // The written capture, analyzed: the same 89 packets reassemble from it.
    let report = Command::new(bin)
        .current_dir(root)
        .args(["analyze", "-d", "dissectors/article.kdl", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(r["capture"]["frames"], 462);
    assert_eq!(r["reassembly"]["completed"], 89);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new user's trial: `/ sizee > 100` Enter showed nothing (the error was made but the
/// status line drew only the prompt), the find prompt hid its error the same way, and
/// `w`'s prompt came pre-filled so that typing appended (`gpcap-marked.pcapngmarked…`).
/// Now the reason is under the prompt, and the offered name is replaced by typing.
#[test]
fn prompts_show_their_errors_and_typing_replaces_the_offered_name() {
    if Command::new("tmux").arg("-V").output().is_err() {
        common::skipped(module_path!(), "tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let root = env!("CARGO_MANIFEST_DIR");
    let session = format!("gpcap-e2e-p-{}", std::process::id());
    let cmd = format!("cd {root} && {bin} tui captures/clean.pcap -d dissectors/article.kdl");
    tmux(&["new-session", "-d", "-s", &session, "-x", "80", "-y", "24", &cmd]);
    wait_for(&session, "1558 frames");
    tmux(&["send-keys", "-t", &session, "/"]);
    tmux(&["send-keys", "-t", &session, "-l", "sizee > 100"]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let refused = wait_for(&session, "did you mean");
    tmux(&["send-keys", "-t", &session, "Escape"]);
    wait_gone(&session, "did you mean");
    tmux(&["send-keys", "-t", &session, "F"]);
    tmux(&["send-keys", "-t", &session, "-l", "late && ("]);
    tmux(&["send-keys", "-t", &session, "Enter"]);
    let find = wait_for(&session, "find: column");
    tmux(&["send-keys", "-t", &session, "Escape"]);
    wait_gone(&session, "find: column");
    tmux(&["send-keys", "-t", &session, "m", "w"]);
    let offered = wait_for(&session, "is written in");
    tmux(&["send-keys", "-t", &session, "-l", "x.pcapng"]);
    let typed = wait_for(&session, "write pcapng to: x.pcapng");
    tmux(&["send-keys", "-t", &session, "Escape", "q"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = tmux(&["kill-session", "-t", &session]);
    assert!(
        refused.contains("filter: sizee > 100")
            && refused.contains("unknown field `sizee`; did you mean `size`?"),
        "after a refused filter:\n{refused}"
    );
    assert!(find.contains("find: column"), "after a refused find:\n{find}");
    assert!(
        offered.contains("write pcapng to: gpcap-marked.pcapng")
            && offered.contains(&format!("a name without a directory is written in {root}")),
        "w:\n{offered}"
    );
    assert!(
        typed.contains("write pcapng to: x.pcapng") && !typed.contains("pcapngx.pcapng"),
        "typed over the offered name:\n{typed}"
    );
}

/// `analyze` on an 80-column terminal fits its tables to it (the width is the tty's), and
/// piped it prints them whole, as tshark's output to a pipe is never folded.
#[test]
fn analyze_fits_the_terminal_and_not_a_pipe() {
    if Command::new("tmux").arg("-V").output().is_err() {
        common::skipped(module_path!(), "tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let root = env!("CARGO_MANIFEST_DIR");
    let session = format!("gpcap-e2e-width-{}", std::process::id());
    let cmd = format!(
        "cd {root} && {bin} analyze captures/mtu-df.pcap -d dissectors/article.kdl; echo DONE; sleep 30"
    );
    tmux(&["new-session", "-d", "-s", &session, "-x", "80", "-y", "200", &cmd]);
    let screen = wait_for(&session, "DONE");
    let history = tmux(&["capture-pane", "-p", "-J", "-S", "-1000", "-t", &session]);
    let _ = tmux(&["kill-session", "-t", &session]);
    assert!(screen.contains("DONE"), "{screen}");
    assert!(
        history.contains("(left out for 80 columns: secs, kbit/s"),
        "{history}"
    );
    for line in history.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    let piped = Command::new(bin)
        .current_dir(root)
        .args(["analyze", "captures/mtu-df.pcap", "-d", "dissectors/article.kdl"])
        .output()
        .unwrap();
    let piped = String::from_utf8_lossy(&piped.stdout);
    assert!(!piped.contains("left out for"), "{piped}");
    assert!(piped.lines().any(|l| l.chars().count() > 120));
}

/// `sleep 30 | gpcap tui -`: before the stream's header came the terminal stayed blank
/// and `q` did nothing until the pipe ended. Now a screen says what it waits for, and
/// `q` leaves at once.
#[test]
fn a_stream_without_its_header_yet_shows_so_and_quits_on_q() {
    if Command::new("tmux").arg("-V").output().is_err() {
        common::skipped(module_path!(), "tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_gpcap");
    let root = env!("CARGO_MANIFEST_DIR");
    let session = format!("gpcap-e2e-header-{}", std::process::id());
    // The pipe's writer is not waited for (a shell's pipeline would wait for it).
    let cmd = format!(
        "bash -c 'cd {root} && {bin} tui - -d dissectors/article.kdl < <(sleep 60); echo EXIT=$?; sleep 30'"
    );
    tmux(&["new-session", "-d", "-s", &session, "-x", "120", "-y", "30", &cmd]);
    let waiting = wait_for(&session, "Waiting for the capture header");
    tmux(&["send-keys", "-t", &session, "q"]);
    let after = wait_for(&session, "EXIT=");
    let _ = tmux(&["kill-session", "-t", &session]);
    assert!(
        waiting.contains("Waiting for the capture header (pcap or pcapng) on stdin"),
        "{waiting}"
    );
    assert!(after.contains("EXIT=0"), "{after}");
}
