//! Decryption and the protocols inside the outermost, after the outermost's report.

use super::tables::{right, shown, table};
use crate::sinks::analysis::Report;
use std::fmt::Write;

/// The decryption table and each inner layer's report, outermost first.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    if let Some(d) = &r.decryption {
        let _ = writeln!(out, "Decryption: {}", d.summary());
        let mut t = table(&["flow", "decrypted", "replayed", "mac_failures", "no_key"]);
        for f in &d.flows {
            t.add_row(vec![
                format!("{} → {}", f.src, f.dst),
                f.counts.decrypted.to_string(),
                f.counts.replayed.to_string(),
                f.counts.mac_failures.to_string(),
                f.counts.no_key.to_string(),
            ]);
        }
        right(&mut t, 1);
        let _ = writeln!(out, "{}\n", shown(t, &[]));
    }
    let mut outer = r.protocol.name.clone().unwrap_or_default();
    for l in &r.layers {
        let _ = writeln!(out, "══ Layer {}: inside {outer} ══\n", l.name);
        out.push_str(&inner_sections(&super::tables::render(&l.report)));
        outer = l.name.clone();
    }
    out
}

/// A layer's report without what belongs to the capture (its frames, the MTU and
/// payload sizes: an inner layer's datagrams are not on the wire as such).
fn inner_sections(text: &str) -> String {
    const DROPPED: [&str; 3] = ["Capture", "MTU diagnosis", "Payload sizes per flow"];
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        let heading = line.starts_with(|c: char| c.is_ascii_uppercase());
        if heading {
            skipping = DROPPED.iter().any(|d| line.starts_with(d));
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
