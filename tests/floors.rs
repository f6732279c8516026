//! The floors of docs/architecture.md, enforced: every `crate::…` path in the library
//! (`crates/gpcap/src/`, outside `#[cfg(test)]` modules and comments) names a room on
//! its own floor or below, and the rooms of one floor import each other without a
//! circle. What still breaks a rule is in [`ALLOWED`], each with its reason; an entry no
//! longer needed fails too, so the list only shrinks. The wire, dissect, decrypt,
//! generate, engine and TUI crates and the command line keep their own boundary (an
//! import up out of them does not compile); inside the library and the wire crate this
//! test keeps the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first: a room may import its own floor and those below.
const FLOORS: &[&[&str]] = &[
    &["bits"],
    &["capture", "decode"],
    &["validate", "dissect"],
    &["decrypt", "generate"],
    &["identify"],
    &["engine", "pool"],
    &["filter"],
    &["print"],
    &[
        "sinks",
        "sinks/analysis",
        "sinks/bandwidth",
        "sinks/diff",
        "sinks/export",
        "sinks/index",
        "sinks/ordered",
        "sinks/printer",
        "sinks/replay",
        "sinks/select",
        "sinks/writer",
    ],
    &["run"],
    &["present"],
    &["api", "lib", "error", "live", "wireshark"],
];

/// Imports that break a rule today, each with why it stays (`from`, `to`, reason).
const ALLOWED: &[(&str, &str, &str)] = &[];

/// What the crate root re-exports, by the room that defines it.
fn root_item(name: &str) -> Option<&'static str> {
    Some(match name {
        "analysis" | "Report" | "Statistics" => "sinks/analysis",
        "resolve" | "layers" | "reassembly" | "limits" | "Config" | "Engine" | "FileEnd" | "Flow"
        | "FlowEnd" | "Kind" | "Needs" | "PacketEvent" | "Sink" | "Status" | "Summary" => "engine",
        "Error" => "error",
        "Thread" => "sinks/ordered",
        "Filter" | "FilterError" => "filter",
        "FileOutcome" | "Merge" | "Mode" | "run_threads" => "run",
        "CaptureError" => "capture",
        "analyze"
        | "analyze_with_progress"
        | "compile_definition"
        | "dissect_payload"
        | "load_definition" => "api",
        "DefinitionError" | "Dissection" | "Dissector" | "Fault" | "FaultKind" | "Field" | "Label"
        | "Program" | "Value" | "label_name" => "dissect",
        _ => return None,
    })
}

fn floor(room: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&room))
}

/// The room a file belongs to: its top module, a sink's submodule for the sinks.
fn room_of(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    match parts.as_slice() {
        [s, sub, ..] if s == "sinks" && sub != "mod" => format!("sinks/{sub}"),
        [top, ..] => top.clone(),
        [] => String::new(),
    }
}

/// The room a path after `crate::` names.
fn target(path: &str) -> Result<String, String> {
    let mut segs = path.split("::").map(str::trim);
    let first = segs.next().unwrap_or_default();
    if first == "sinks" {
        return Ok(match segs.next() {
            Some(s) if s.starts_with(|c: char| c.is_ascii_lowercase()) => format!("sinks/{s}"),
            _ => "sinks".to_string(),
        });
    }
    if floor(first).is_some() {
        return Ok(first.to_string());
    }
    root_item(first).map(str::to_string).ok_or_else(|| {
        format!("`crate::{path}`: the root item `{first}` is in no room (add it to `root_item`)")
    })
}

/// The source without comments and without what follows `#[cfg(test)]` at the start of a
/// line (the house keeps test modules last in a file).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start() == "#[cfg(test)]" && !line.starts_with(' ') {
            break;
        }
        let code = line.find("//").map_or(line, |i| &line[..i]);
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every path after `crate::` in `code`, a `{…}` group split into its members.
fn crate_paths(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut rest = code;
    let mut offset = 0;
    while let Some(i) = rest.find("crate::") {
        let at = offset + i;
        let line = code[..at].matches('\n').count() + 1;
        let after = &code[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let (mut depth, mut end, mut start) = (1, 0, 0);
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        found.push((group[start..j].trim().to_string(), line));
                        start = j + 1;
                    }
                    _ => {}
                }
                if depth == 0 {
                    end = j;
                    break;
                }
            }
            found.push((group[start..end].trim().to_string(), line));
        } else {
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(after.len());
            found.push((after[..end].to_string(), line));
        }
        offset = at + "crate::".len();
        rest = &code[offset..];
    }
    found.retain(|(p, _)| !p.is_empty());
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("a source tree is readable")
        .flatten()
    {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The source trees whose `crate::` paths name rooms: the library's and the wire
/// crate's (whose bits, capture, decode and validate keep their floors inside it). The
/// dissect, decrypt, generate and engine crates see only the crates below them, which
/// their manifests enforce.
const TREES: &[&str] = &["crates/gpcap/src", "crates/wire/src"];

/// Every import between rooms of the library and the wire crate: (from, to) → the first
/// place it is made.
fn imports() -> BTreeMap<(String, String), String> {
    let mut edges = BTreeMap::new();
    let mut unknown = Vec::new();
    for tree in TREES {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(tree);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let rel = file.strip_prefix(&src).expect("under the tree").to_path_buf();
            let from = room_of(&rel);
            if from == "lib" && *tree != "crates/gpcap/src" {
                continue;
            }
            assert!(
                floor(&from).is_some(),
                "{tree}/{}: the room `{from}` is on no floor (add it to FLOORS)",
                rel.display()
            );
            let text = std::fs::read_to_string(&file).expect("a source file is readable");
            for (path, line) in crate_paths(&code_of(&text)) {
                let at = format!("{tree}/{}:{line}", rel.display());
                match target(&path) {
                    Ok(to) if to != from && to != "self" => {
                        edges.entry((from.clone(), to)).or_insert(at);
                    }
                    Ok(_) => {}
                    Err(e) => unknown.push(format!("{at}: {e}")),
                }
            }
        }
    }
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    edges
}

fn allowed(from: &str, to: &str) -> bool {
    ALLOWED.iter().any(|&(f, t, _)| f == from && t == to)
}

#[test]
fn no_import_goes_back_up_a_floor() {
    let edges = imports();
    let up: Vec<String> = (edges.iter())
        .filter(|((f, t), _)| floor(t) > floor(f) && !allowed(f, t))
        .map(|((f, t), at)| format!("{f} → {t} at {at}"))
        .collect();
    assert!(
        up.is_empty(),
        "imports back up a layer (docs/architecture.md, §Layers):\n{}",
        up.join("\n")
    );
}

#[test]
fn no_circle_within_a_floor() {
    let edges = imports();
    let same: Vec<(&str, &str)> = (edges.keys())
        .filter(|(f, t)| floor(f) == floor(t) && !allowed(f, t))
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    // A room reaches itself through same-floor imports: a circle.
    for &(start, _) in &same {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start];
        while let Some(r) = todo.pop() {
            for &(f, t) in &same {
                if f == r && seen.insert(t) {
                    assert_ne!(t, start, "a circle through `{start}` on its floor: {same:?}");
                    todo.push(t);
                }
            }
        }
    }
}

#[test]
fn every_allowed_import_is_still_made() {
    let edges = imports();
    let stale: Vec<String> = (ALLOWED.iter())
        .filter(|(f, t, _)| !edges.contains_key(&(f.to_string(), t.to_string())))
        .map(|(f, t, _)| format!("{f} → {t}"))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer imported, remove from ALLOWED: {}",
        stale.join(", ")
    );
}

#[test]
fn the_reader_sees_grouped_and_inline_paths() {
    let code = code_of(
        "use crate::{a::B, c::{d, e}};\nfn f() { crate::g::h(); } // crate::x\n#[cfg(test)]\nmod tests { use crate::z; }\n",
    );
    let paths: Vec<String> = crate_paths(&code).into_iter().map(|p| p.0).collect();
    assert_eq!(paths, ["a::B", "c::{d, e}", "g::h"]);
    assert_eq!(target("sinks::analysis::Report").as_deref(), Ok("sinks/analysis"));
    assert_eq!(target("Report").as_deref(), Ok("sinks/analysis"));
    assert!(target("Nowhere").is_err());
}
