//! `gpcap analyze CAPTURE...`: the report.

use super::args::AnalyzeArgs;
use super::resolve;
use super::{Result, json_or_text, progress_bar};
use crate::outln;
use gpcap::Config;
use gpcap::analysis::gates::Gate;
use gpcap::analysis::{Conversations, Report};
use gpcap::present;
use gpcap::resolve::Resolved;
use gpcap::run::sample_files;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(a: &AnalyzeArgs) -> Result<ExitCode> {
    super::set_wide(a.wide);
    let gates = a
        .fail_on
        .iter()
        .map(|g| Gate::parse(g))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut choice = a.protocol.choice()?;
    choice.mtu_budget = a.mtu;
    choice.link_mtu = Some(a.link_mtu);
    let resolved = resolve(&choice, |i| sample_files(&a.captures, i))?;
    let bits = a.bits.then(|| gpcap::sinks::bandwidth::Options {
        what_if: a.what_if.clone(),
        ..Default::default()
    });
    if let Some(o) = &bits {
        gpcap::run::bandwidth::check_what_if(&resolved.cfg, o).map_err(crate::cli::Error::Usage)?;
    }
    if resolved.cfg.protocol_id.is_none() && resolved.cfg.checksum.is_crc32() {
        return conversations(a, resolved);
    }
    if !a.json
        && let Some(note) = gpcap::present::notes::identified(&resolved)
    {
        outln!("{note}\n");
    }
    // Several captures of the same time, interleaved by timestamp into one trace.
    let merged = if a.merge && a.captures.len() > 1 {
        Some(Merged::new(&a.captures)?)
    } else {
        None
    };
    let groups = groups(a, merged.as_ref());
    let mut reports = Vec::new();
    for files in groups {
        reports.push(analyze_group(
            files,
            &resolved,
            bits.as_ref(),
            merged.as_ref(),
            a.threads,
        )?);
    }
    // Said once the trace was accepted (captures that overlap in time are refused).
    if merged.is_none() && !a.per_file && a.captures.len() > 1 {
        eprintln!(
            "gpcap: note: {} captures analyzed as one trace in the order given: a flow continues from one file into the next (--per-file reports each alone)",
            a.captures.len()
        );
    }
    print_reports(a, &reports)?;
    // A crossed gate (3) before nothing to gate and unreadable input (2).
    if !gates.is_empty() {
        // A gate passed on traffic the protocol never saw would pass a wrong definition.
        let (empty, judged): (Vec<&Report>, Vec<&Report>) =
            reports.iter().partition(|r| r.validation.examined == 0);
        for r in &empty {
            let why =
                (r.fit.rests_on.first()).map_or("no datagram was judged".to_string(), |s| s.to_string());
            eprintln!("gpcap: nothing to gate: {}{why}", per_file_name(a, r));
        }
        if !gates_pass(a, &gates, &judged) {
            return Ok(ExitCode::from(3));
        }
        if !empty.is_empty() {
            return Ok(ExitCode::from(2));
        }
    }
    // A capture not read to its end (corrupt, cut inside a record) fails the run, as in
    // tcpdump and tshark, after the report of what was read.
    let unreadable = reports
        .iter()
        .flat_map(|r| &r.capture.files)
        .any(|f| f.error.is_some() || f.truncated_tail.is_some());
    Ok(if unreadable {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// `FILE: ` naming a report's capture with `--per-file`, else nothing.
fn per_file_name(a: &AnalyzeArgs, r: &Report) -> String {
    match r.capture.files.first() {
        Some(f) if a.per_file => format!("{}: ", f.name),
        _ => String::new(),
    }
}

/// One trace of every capture (or of the merged one), or one report per capture.
fn groups<'a>(a: &'a AnalyzeArgs, merged: Option<&'a Merged>) -> Vec<&'a [PathBuf]> {
    if let Some(m) = merged {
        vec![std::slice::from_ref(&m.path)]
    } else if a.per_file {
        a.captures.chunks(1).collect()
    } else {
        vec![&a.captures[..]]
    }
}

/// One report: the files analyzed as one trace (with `--bits`, profiled), the fit's
/// first failure located, and a hint when another protocol id would fit.
fn analyze_group(
    files: &[PathBuf],
    resolved: &Resolved,
    bits: Option<&gpcap::sinks::bandwidth::Options>,
    merged: Option<&Merged>,
    threads: Option<u32>,
) -> Result<Report> {
    let mut report = match bits {
        Some(o) => bits_files(files, resolved.cfg.clone(), o.clone(), threads)?,
        None => analyze_files(files, resolved.cfg.clone(), threads)?,
    };
    refuse_overlap(&report)?;
    if let (Some(m), Some(f)) = (merged, report.capture.files.first_mut()) {
        f.name = m.name.clone();
    }
    report.identification = resolved.identification.clone();
    let judged = report.fit.verdict != gpcap::analysis::fit::Verdict::NothingJudged;
    if !report.fit.is_good()
        && judged
        && let Some(first) = report.fit.first_failure.as_mut()
    {
        // Names the field and bit (the counters keep only the frame and cause).
        let _ = gpcap::run::scans::locate(files, &resolved.cfg, first);
    }
    if let Some(hint) = other_protocol_id(files, &report).or_else(|| request_protocol_id(files, &report)) {
        eprintln!("gpcap: hint: {hint}");
    }
    Ok(report)
}

/// The reports as text (a heading per capture with `--per-file`) or JSON.
fn print_reports(a: &AnalyzeArgs, reports: &[Report]) -> Result<()> {
    if a.per_file && a.json {
        json_or_text(true, &reports, String::new)?;
    } else {
        for (i, report) in reports.iter().enumerate() {
            let heading = a.per_file.then(|| {
                report
                    .capture
                    .files
                    .first()
                    .map(|f| f.name.clone())
                    .unwrap_or_default()
            });
            json_or_text(a.json, report, || match &heading {
                Some(name) => format!(
                    "{}== {name}\n\n{}",
                    if i > 0 { "\n" } else { "" },
                    present::tables::render(report) + &bits_table(report, a.bits_top)
                ),
                None => present::tables::render(report) + &bits_table(report, a.bits_top),
            })?;
        }
    }
    Ok(())
}

/// Whether every report passes the `--fail-on` gates; each one crossed is said.
fn gates_pass(a: &AnalyzeArgs, gates: &[Gate], reports: &[&Report]) -> bool {
    let failed: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            gates.iter().filter_map(move |g| {
                Some(format!(
                    "{}{}",
                    per_file_name(a, r),
                    gpcap::present::notes::crossed(g, r)?
                ))
            })
        })
        .collect();
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("gpcap: gate failed: {f}");
        }
        return false;
    }
    true
}

/// The captures interleaved by timestamp into a temporary pcapng (removed on drop).
struct Merged {
    path: PathBuf,
    /// What the report calls the trace.
    name: String,
}

impl Merged {
    fn new(captures: &[PathBuf]) -> Result<Merged> {
        let path = std::env::temp_dir().join(format!("gpcap-merged-{}.pcapng", std::process::id()));
        let m = Merged {
            name: format!(
                "{} (merged by timestamp)",
                captures
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" + ")
            ),
            path,
        };
        let done = gpcap::capture::merge_files(captures, &m.path)?;
        for e in &done.errors {
            eprintln!("gpcap: {e}");
        }
        Ok(m)
    }
}

impl Drop for Merged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Captures given as one trace whose times overlap would be stitched flow into flow
/// (false loss and lateness): refused, naming both and the ways out.
fn refuse_overlap(r: &Report) -> Result<()> {
    let files = &r.capture.files;
    let Some((a, b)) = gpcap::analysis::overlapping(r) else {
        return Ok(());
    };
    let (fa, fb) = (&files[a], &files[b]);
    let by = fa.last_ns.unwrap_or(0).saturating_sub(fb.first_ns.unwrap_or(0)) as f64 / 1e9;
    Err(crate::cli::Error::Usage(format!(
        "{} and {} overlap in time ({} starts {by:.3} s before {} ends) and share flows: read as one trace their flows would be stitched together; pass --merge to interleave them by timestamp into one trace, or --per-file for one report each",
        fa.name, fb.name, fb.name, fa.name
    )))
}

/// When every datagram fails the CRC, the id given is likely not the traffic's; when
/// none is on the protocol's ports, the ports (or the whole definition) are: the id and
/// ports the traffic validates with, if the identifier finds them.
fn other_protocol_id(captures: &[PathBuf], r: &Report) -> Option<String> {
    let v = &r.validation;
    let given = r.protocol.protocol_id?;
    let off_ports = v.examined == 0 && r.capture.other_udp > 0;
    if !off_ports && (v.crc_ok > 0 || v.crc_mismatch == 0) {
        return None;
    }
    let mut ident = gpcap::identify::Identifier::default();
    sample_files(captures, &mut ident).ok()?;
    let id = ident.finish();
    let best = id.best().filter(|b| off_ports || b.protocol_id != given)?;
    let ports = best.ports.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let (n, of, found) = (best.datagrams, id.sampled, best.protocol_id);
    let shown = match ports.len() {
        0..=8 => ports.join(" "),
        all => format!("{} … ({all} in all)", ports[..8].join(" ")),
    };
    Some(if !off_ports {
        format!(
            "no datagram passed the CRC with protocol id {given}, but {n} of {of} sampled datagrams validate with {found} (ports {shown}): check the definition's `id`, or pass --protocol-id {found}"
        )
    } else if found == given {
        let flags = match ports.len() {
            0..=8 => format!("--port {}", ports.join(" --port ")),
            _ => "--any-port".to_string(),
        };
        format!(
            "no datagram on the definition's ports, but {n} of {of} sampled datagrams validate with its id {given} on ports {shown}: check the definition's `ports`, or pass {flags}"
        )
    } else {
        format!(
            "no datagram on the definition's ports, and {n} of {of} sampled datagrams validate with another protocol id, {found} (ports {shown}): this capture is likely another protocol's; pass its definition, or --protocol-id {found} --any-port"
        )
    })
}

/// Nothing decrypted and no connection request opened: when the requests carry another
/// protocol id than the definition's, they failed its check before their token was
/// tried (and the additional data of every packet holds the id). Says which id they carry.
fn request_protocol_id(captures: &[PathBuf], r: &Report) -> Option<String> {
    let d = r.decryption.as_ref()?;
    let given = r.protocol.protocol_id?;
    if d.total.decrypted > 0 || d.tokens_opened > 0 {
        return None;
    }
    let carried = first_request_protocol_id(captures)?;
    (carried != given.value).then(|| {
        let carried = gpcap::validate::ProtocolId { value: carried, width: 8 };
        let whose = match r.protocol.source.as_str() {
            "flag" => "--protocol-id's",
            _ => "the definition's",
        };
        format!(
            "nothing decrypted: the connection requests carry protocol id {carried}, not {whose} {given}; pass --protocol-id {carried}"
        )
    })
}

/// The protocol id of the first netcode connection request in the first million frames.
fn first_request_protocol_id(captures: &[PathBuf]) -> Option<u64> {
    for path in captures {
        let mut r = gpcap::capture::CaptureReader::open(path).ok()?;
        for _ in 0..1 << 20 {
            let Ok(Some(f)) = r.next_frame() else { break };
            if let gpcap::decode::Decoded::Udp {
                payload,
                truncated: false,
                ..
            } = gpcap::decode::decode(f.linktype, f.data)
                && let Some(id) = gpcap::decrypt::netcode::request_protocol_id(payload)
            {
                return Some(id);
            }
        }
    }
    None
}

/// No game protocol in the traffic: what the capture holds instead — its summary and UDP
/// conversations — and how to name a protocol. Gates are not checked (nothing to gate).
fn conversations(a: &AnalyzeArgs, resolved: Resolved) -> Result<ExitCode> {
    let (sampled, flows) = resolved
        .identification
        .as_ref()
        .map_or((0, 0), |i| (i.sampled, i.flows));
    let mut cfg = resolved.cfg;
    cfg.any_port = true;
    let mut report = analyze_files(&a.captures, cfg, a.threads)?;
    report.identification = resolved.identification;
    let note = format!(
        "No game protocol found: none of {} in {} share a protocol id (a CRC32 whose id is prefixed but never sent). Give -d DISSECTOR or --protocol-id HEX to analyze one; `gpcap identify` shows what was tried.",
        gpcap::present::count(sampled, "sampled datagram"),
        gpcap::present::count(flows, "flow")
    );
    let summary = Conversations::from_report(report, note);
    json_or_text(a.json, &summary, || {
        present::tables::render_conversations(&summary)
    })?;
    if !a.fail_on.is_empty() {
        eprintln!("gpcap: gates not checked: no game protocol was found");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// "Bandwidth by field", when the report has a profile.
fn bits_table(r: &Report, top: u32) -> String {
    r.bandwidth
        .as_ref()
        .map(|b| format!("\n{}", present::bandwidth::render(b, top as usize)))
        .unwrap_or_default()
}

/// The report with its bandwidth profile (`--bits`): every datagram dissected, sharded
/// over the cores as `analyze` is when the traffic spreads.
fn bits_files(
    captures: &[PathBuf],
    cfg: Config,
    opts: gpcap::sinks::bandwidth::Options,
    threads: Option<u32>,
) -> Result<Report> {
    let sizes: Vec<u64> = captures
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .collect();
    let total: u64 = sizes.iter().sum();
    let bar = progress_bar(total, "");
    let mut progress = |file: usize, offset: u64| {
        if let Some(b) = &bar {
            let before: u64 = sizes[..file.min(sizes.len())].iter().sum();
            b.set_position((before + offset).min(total));
        }
    };
    let shards = gpcap::run_threads(captures, threads);
    let report = gpcap::run::bandwidth::analyze_sharded(captures, cfg, opts, shards, &mut progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for f in &report.capture.files {
        if let Some(e) = &f.error {
            eprintln!("gpcap: {e}");
        }
    }
    Ok(report)
}

/// Reads every capture through the engine into the statistics. Large inputs are sharded
/// over the cores by IP address pair (the same report: tests/parallel.rs). A file that
/// cannot be opened is an error; one that breaks midway keeps what was read and says
/// where it stopped.
/// `threads`: analyzers to run (None: one per core, and one shard more than cores so
/// the reader never waits).
pub fn analyze_files(captures: &[PathBuf], cfg: Config, threads: Option<u32>) -> Result<Report> {
    let sizes: Vec<u64> = captures
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .collect();
    let total: u64 = sizes.iter().sum();
    let bar = progress_bar(total, "");
    let mut progress = |file: usize, offset: u64| {
        if let Some(b) = &bar {
            let before: u64 = sizes[..file].iter().sum();
            b.set_position((before + offset).min(total));
        }
    };
    let report = gpcap::analyze_with_progress(captures, cfg, threads, &mut progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for f in &report.capture.files {
        if let Some(e) = &f.error {
            eprintln!("gpcap: {e}");
        }
        if let Some(t) = &f.truncated_tail {
            eprintln!("gpcap: {t}");
        }
    }
    Ok(report)
}
