//! A packet type's `info=` template as the runtime fills it: text, `{path}` (the first
//! occurrence's value) and `{#path}` (how many), split once here as gpcap's Info column
//! splits it (`crates/gpcap/src/print/info.rs`).

use super::lua;
use crate::filter::FieldPath;
use gpcap_dissect::Program;
use gpcap_dissect::paths::{catalog, info_path};
use gpcap_dissect::program::PacketDef;

/// The template's pieces as a Lua list: `{ "text", T }`, `{ "value", PLAIN, FULL, TYPE }`,
/// `{ "count", … }`, `{ "unknown" }`; FULL is the path with its indices when it names
/// one element, TYPE the packet type a leading type name requires.
pub fn pieces(p: &Program, d: &PacketDef, template: &str) -> String {
    let paths = catalog(p);
    let mut out: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push(format!("{{ \"text\", {} }}", lua::string(&rest[..open])));
        let Some(close) = rest[open..].find('}') else {
            rest = &rest[open..];
            break;
        };
        let name = rest[open + 1..open + close].trim();
        let (what, path) = match name.strip_prefix('#') {
            Some(p) => ("count", p),
            None => ("value", name),
        };
        // A message type's template names the message's own fields, as gpcap's.
        let path = info_path(p, d, path);
        out.push(match FieldPath::parse(p, &paths, &path) {
            Ok(_) => placeholder(p, &paths, what, &path),
            Err(_) => "{ \"unknown\" }".into(),
        });
        rest = &rest[open + close + 1..];
    }
    out.push(format!("{{ \"text\", {} }}", lua::string(rest)));
    format!("{{ {} }}", out.join(", "))
}

fn strip_indices(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

fn placeholder(p: &Program, paths: &[gpcap_dissect::PathInfo], what: &str, path: &str) -> String {
    let mut path = path;
    let mut ty = "nil".to_string();
    if !paths.iter().any(|e| e.path == strip_indices(path))
        && let Some((head, tail)) = path.split_once('.')
        && let Some(d) = p.packets.iter().find(|d| d.name == head)
    {
        ty = d.type_id.to_string();
        path = tail;
    }
    let full = if path.contains('[') {
        lua::string(path)
    } else {
        "nil".into()
    };
    format!(
        "{{ \"{what}\", {}, {full}, {ty} }}",
        lua::string(&strip_indices(path))
    )
}
