//! The dataset's names: a capture's or a value's Hive partition, and what is refused
//! before anything is written (names the engines would misread, directories too long).

use super::packets::Packets;
use super::rows::Rows;
use super::{ExportError, report};
use gpcap_dissect::Program;
use std::path::Path;
use std::sync::Arc;

/// Longest directory name written (file systems take 255 bytes).
pub(super) const MAX_NAME: usize = 255;

/// Refuses, before anything is written, partitions and names the dataset could not
/// hold or the engines would misread: a key given twice (`day=1/day=2`) or named like a
/// column, a value `.`, `..` or the Hive engines' null (`__HIVE_DEFAULT_PARTITION__`),
/// and directory names past [`MAX_NAME`] bytes once encoded (a long value, capture or
/// packet type name).
pub(super) fn check_names(
    dir: &Path,
    keys: &[(String, String)],
    capture: &str,
    program: Option<&Arc<Program>>,
) -> Result<(), ExportError> {
    let refuse = |reason: String| ExportError {
        path: dir.display().to_string(),
        reason,
    };
    let mut columns: std::collections::HashSet<String> =
        ["frame", "reassembled", "capture", "header", "fragment_header"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    columns.extend(
        Packets::schema(true)
            .fields()
            .iter()
            .map(|f| f.name().to_lowercase()),
    );
    for (_, schema, _) in report::tables(&crate::sinks::analysis::Report::default()) {
        columns.extend(schema.fields().iter().map(|f| f.name().to_lowercase()));
    }
    let mut seen = std::collections::HashSet::new();
    for (k, v) in keys {
        if !seen.insert(k.to_lowercase()) {
            return Err(refuse(format!(
                "--partition {k}={v}: the key `{k}` is given twice"
            )));
        }
        // A list's table has `index` and `LIST_index` key columns.
        let list_key = k.eq_ignore_ascii_case("index") || k.to_lowercase().ends_with("_index");
        if columns.contains(&k.to_lowercase()) || list_key {
            return Err(refuse(format!(
                "--partition {k}={v}: `{k}` is a column of the dataset's tables; choose another key"
            )));
        }
        if matches!(v.as_str(), "." | "..") || v.eq_ignore_ascii_case("__HIVE_DEFAULT_PARTITION__") {
            return Err(refuse(format!(
                "--partition {k}={v}: `{v}` is not a value the engines read back as written"
            )));
        }
        let name = format!("{}={}", partition_value(k), partition_value(v));
        if name.len() > MAX_NAME {
            return Err(refuse(format!(
                "--partition {k}=…: the value is {} bytes as a directory name, over {MAX_NAME}",
                name.len()
            )));
        }
    }
    let name = format!("capture={}", partition_value(capture));
    if name.len() > MAX_NAME {
        return Err(refuse(format!(
            "the capture's name is {} bytes as a directory name, over {MAX_NAME}: rename it",
            name.len()
        )));
    }
    for d in program.iter().flat_map(|p| &p.packets) {
        let name = format!("type_{}", partition_value(&d.name));
        if name.len() > MAX_NAME {
            return Err(refuse(format!(
                "packet type {} is named in {} bytes as a table directory, over {MAX_NAME}: shorten its name",
                d.type_id,
                name.len()
            )));
        }
    }
    if let Some(p) = program
        && let Some((line, reason)) = Rows::new(Some(p.clone()), keys).refusal()
    {
        return Err(refuse(format!(
            "definition {}, line {line}: {reason}",
            p.params.name
        )));
    }
    Ok(())
}

/// A Hive partition value: the capture's file name, with what a path or the engines
/// would misread percent-encoded.
pub fn partition_value(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || "-_.+@".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out
}
