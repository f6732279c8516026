//! Regression (wave 4, 07): a re-export killed inside its commit left the capture's
//! partition mixing the new export's tables with the old one's, all under final names,
//! so an engine read a dataset that looked complete. The commit is now one directory
//! swap: a process killed at any rename leaves the old export or the new one, whole.
//! strace's fault injection delivers SIGKILL at the Nth rename, for every N the export
//! makes.
#![cfg(all(feature = "export", target_os = "linux"))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn gpcap(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpcap"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The files an engine is told to read (no hidden component), with their bytes.
fn committed(ds: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(d: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                let name = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(name, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(ds, ds, &mut out);
    out
}

fn export(capture: &Path, ds: &Path) {
    let out = gpcap(&["export", "-d", "dissectors/article.kdl", s(capture), "-o", s(ds)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_reexport_killed_at_any_rename_leaves_one_whole_export() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: strace is not installed (.ci/run installs it)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("gpcap-export-commit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (v1, v2) = (dir.join("v1/match.pcap"), dir.join("v2/match.pcap"));
    for (path, clients, seed) in [(&v1, "2", "1"), (&v2, "3", "7")] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let args = [
            "gen",
            "-d",
            "dissectors/article.kdl",
            "-o",
            s(path),
            "--duration",
            "2",
        ];
        let out = gpcap(
            &[
                &args[..],
                &["--clients", clients, "--seed", seed, "--summary-only"],
            ]
            .concat(),
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (old, new) = (dir.join("old"), dir.join("new"));
    export(&v1, &old);
    export(&v2, &new);
    let (old, new) = (committed(&old), committed(&new));
    assert_ne!(old, new);
    let ds: PathBuf = dir.join("ds");
    let mut killed = 0;
    for n in 1..500 {
        let _ = std::fs::remove_dir_all(&ds);
        export(&v1, &ds);
        let out = Command::new("strace")
            .args([
                "-f",
                "-o",
                "/dev/null",
                "-e",
                "trace=rename,renameat,renameat2",
                "-e",
            ])
            .arg(format!(
                "inject=rename,renameat,renameat2:signal=SIGKILL:when={n}"
            ))
            .arg(env!("CARGO_BIN_EXE_gpcap"))
            .args(["export", "-d", "dissectors/article.kdl", s(&v2), "-o", s(&ds)])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let now = committed(&ds);
        assert!(
            now == old || now == new,
            "killed at rename {n}: the dataset mixes two exports: {:?}",
            now.keys().collect::<Vec<_>>()
        );
        if out.status.success() {
            assert_eq!(now, new);
            break;
        }
        killed += 1;
    }
    assert!(killed > 3, "the export made only {killed} renames");
    // What the killed export left under hidden names goes with the next export.
    export(&v2, &ds);
    assert_eq!(committed(&ds), new);
    let hidden: Vec<_> = std::fs::read_dir(&ds)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
