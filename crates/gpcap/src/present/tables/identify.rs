//! `gpcap identify`'s table: which known protocol each flow looks like, and why.

use super::*;

/// What `gpcap identify` found.
pub fn render_identification(id: &gpcap_engine::identify::Identification) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Sampled {} datagrams in {} UDP flows; {} explained by no protocol, {} one-off candidates ignored.",
        id.sampled, id.flows, id.unexplained, id.singletons
    );
    if id.candidates.is_empty() {
        let _ = writeln!(out, "No protocol id is shared by two or more datagrams.");
        return out;
    }
    let mut t = table(&["protocol id", "datagrams", "flows", "ports", "sequence steps"]);
    for c in &id.candidates {
        t.add_row(vec![
            c.protocol_id.to_string(),
            c.datagrams.to_string(),
            c.flows.len().to_string(),
            c.ports
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            c.sequence_increments.map(pct).unwrap_or_else(|| "-".into()),
        ]);
    }
    let _ = writeln!(out, "{}", shown(t, &[4]));
    for c in &id.candidates {
        let mut t = table(&["flow", "sampled", "valid", "share"]);
        for f in &c.flows {
            t.add_row(vec![
                f.flow.to_string(),
                f.sampled.to_string(),
                f.valid.to_string(),
                pct(f.valid as f64 / f.sampled.max(1) as f64),
            ]);
        }
        right(&mut t, 1);
        let _ = writeln!(out, "Flows validated by {}\n{}", c.protocol_id, shown(t, &[1]));
    }
    out
}
