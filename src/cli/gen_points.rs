//! `gpcap gen … --second-point B.pcap`: one session seen at two capture points (A beside
//! the clients, written to `-o`; B beside the server), with the truth of every datagram
//! in `OUT.truth.jsonl`; `--check` runs `diff` on both and compares its figures.

use super::args::GenArgs;
use super::gen_cmd::Staged;
use super::{Result, load_program};
use crate::cli::Error;
use clap::Args;
use gpcap::generate::points::{PointEmit, PointsConfig, PointsTruth, simulate_points};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Clone, Default)]
pub struct PointsArgs {
    /// Write the session as seen at a second capture point (B, beside the server) to this
    /// file; `-o` is then the first point (A, beside the clients). --loss, --burst,
    /// --dup, --reorder, --jitter and --corrupt act between the points.
    #[arg(long = "second-point", value_name = "B.pcap")]
    pub second_point: Option<PathBuf>,
    /// B's clock minus A's, in seconds (-864000 to 864000).
    #[arg(long = "clock-offset", default_value_t = 0.0, requires = "second_point", value_parser = offset)]
    pub clock_offset: f64,
    /// How much faster B's clock runs than A's, in parts per million (-5000 to 5000).
    #[arg(long, default_value_t = 0.0, requires = "second_point", value_parser = skew)]
    pub skew: f64,
    /// B sees the clients through a NAT: another address and port for each.
    #[arg(long, requires = "second_point")]
    pub nat: bool,
    /// Chance that a datagram is lost before the first point it passes.
    #[arg(long = "loss-before", default_value_t = 0.0, requires = "second_point", value_parser = probability)]
    pub loss_before: f64,
    /// The fixed delay between the points, in milliseconds (0 to 60000).
    #[arg(long, default_value_t = 20.0, requires = "second_point", value_parser = delay)]
    pub delay: f64,
}

fn within(s: &str, lo: f64, hi: f64) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number ({lo} to {hi})"))?;
    if !(lo..=hi).contains(&v) {
        return Err(format!("`{s}` is outside {lo} to {hi}"));
    }
    Ok(v)
}

fn offset(s: &str) -> std::result::Result<f64, String> {
    within(s, -864_000.0, 864_000.0)
}

fn skew(s: &str) -> std::result::Result<f64, String> {
    within(s, -5000.0, 5000.0)
}

fn delay(s: &str) -> std::result::Result<f64, String> {
    within(s, 0.0, 60_000.0)
}

fn probability(s: &str) -> std::result::Result<f64, String> {
    within(s, 0.0, 1.0).map_err(|_| format!("`{s}` is not a probability (a number from 0 to 1)"))
}

/// The flags of a single-point capture that two points do not take.
fn refuse(a: &GenArgs) -> Result<()> {
    let single = [
        (a.attacks, "--attacks"),
        (a.malformed > 0.0, "--malformed"),
        (a.encrypt, "--encrypt"),
        (a.df, "--df"),
        (a.foreign > 0.0, "--foreign"),
    ];
    if let Some((_, flag)) = single.iter().find(|(on, _)| *on) {
        return Err(Error::Usage(format!("{flag} is not written with --second-point")));
    }
    if a.vlan.is_some() && a.linktype != "ethernet" {
        return Err(Error::Usage("--vlan needs --linktype ethernet".into()));
    }
    Ok(())
}

fn config(a: &GenArgs, p: &PointsArgs) -> PointsConfig {
    use gpcap::generate::Link;
    PointsConfig {
        seed: a.seed,
        duration_s: a.duration,
        packets: a.packets,
        rate_hz: a.rate,
        clients: a.clients,
        big: a.big,
        no_fragment: a.no_fragment,
        link_mtu: a.link_mtu,
        ipv6: a.ipv6,
        link: match a.linktype.as_str() {
            "sll2" => Link::Sll2,
            "raw" => Link::Raw,
            _ => Link::Ethernet { vlan: a.vlan },
        },
        loss: a.loss,
        burst: a
            .burst
            .map(|[enter, exit, loss]| gpcap::generate::sim::Burst { enter, exit, loss }),
        dup: a.dup,
        reorder: a.reorder,
        corrupt: a.corrupt,
        delay_ms: p.delay,
        jitter_ms: a.jitter,
        loss_before: p.loss_before,
        offset_s: p.clock_offset,
        skew_ppm: p.skew,
        nat: p.nat,
    }
}

/// A pcap writer on a staged file.
fn writer(
    path: &Path,
    link: u32,
) -> Result<(
    Staged,
    gpcap::capture::PcapWriter<std::io::BufWriter<std::fs::File>>,
)> {
    let (staged, file) = Staged::create(path)?;
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let w =
        gpcap::capture::PcapWriter::new(out, link, 65535, true).map_err(|e| Error::io(path.display(), e))?;
    Ok((staged, w))
}

pub fn run(a: &GenArgs, second: &Path) -> Result<ExitCode> {
    refuse(a)?;
    if a.output.extension().is_some_and(|e| e == "pcapng")
        || second.extension().is_some_and(|e| e == "pcapng")
    {
        return Err(Error::Usage(
            "--second-point writes pcap: name both files .pcap".into(),
        ));
    }
    let program = load_program(&a.dissector)?;
    let cfg = config(a, &a.points);
    let paths = [a.output.clone(), second.to_path_buf()];
    let link = cfg.link.linktype();
    let (sa, wa) = writer(&paths[0], link)?;
    let (sb, wb) = writer(&paths[1], link)?;
    let mut writers = [wa, wb];
    let truth_path = PathBuf::from(format!("{}.truth.jsonl", a.output.display()));
    let (st, file) = Staged::create(&truth_path)?;
    let mut tout = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut errors: [Option<std::io::Error>; 3] = Default::default();
    let truth = simulate_points(&program, &cfg, &mut |e| match e {
        PointEmit::Frame { point, t_ns, data } => {
            if let Err(e) = writers[point].write(t_ns, data, data.len() as u32) {
                errors[point].get_or_insert(e);
            }
        }
        PointEmit::Passage(_) if a.summary_only => {}
        PointEmit::Passage(p) => {
            let r = serde_json::to_writer(&mut tout, p)
                .map_err(std::io::Error::other)
                .and_then(|_| tout.write_all(b"\n"));
            if let Err(e) = r {
                errors[2].get_or_insert(e);
            }
        }
    })
    .map_err(|e| Error::Usage(format!("{}: {e}", a.dissector.display())))?;
    let [wa, wb] = writers;
    for (k, w) in [wa, wb].into_iter().enumerate() {
        let r = w.into_inner().flush();
        if let Some(e) = errors[k].take().or(r.err()) {
            return Err(Error::io(paths[k].display(), e));
        }
    }
    let r = serde_json::to_writer(&mut tout, &truth)
        .map_err(std::io::Error::other)
        .and_then(|_| tout.write_all(b"\n"))
        .and_then(|_| tout.flush());
    if let Some(e) = errors[2].take().or(r.err()) {
        return Err(Error::io(truth_path.display(), e));
    }
    drop(tout);
    for s in [sa, sb, st] {
        s.commit()?;
    }
    let total =
        |f: fn(&gpcap::generate::points::DirectionTruth) -> u64| truth.directions.iter().map(f).sum::<u64>();
    eprintln!(
        "gpcap: wrote A {} and B {} ({}, {} lost before, {} lost between, {} duplicated, {} reordered) and the truth to {}",
        paths[0].display(),
        paths[1].display(),
        gpcap::present::count(truth.datagrams, "game datagram"),
        total(|d| d.lost_before),
        total(|d| d.lost_between),
        total(|d| d.duplicated),
        total(|d| d.reordered),
        truth_path.display()
    );
    if a.check {
        return check(a, program, &paths, &truth);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--check`: `diff` of both points compared with the truth (exit 4 on a mismatch).
fn check(
    a: &GenArgs,
    program: std::sync::Arc<gpcap::dissect::Program>,
    paths: &[PathBuf; 2],
    truth: &PointsTruth,
) -> Result<ExitCode> {
    use gpcap::sinks::diff::{ClockMode, Options};
    let cfg = gpcap::Config::from_program(program);
    let diffed = gpcap::run::diff::diff(paths.clone(), cfg, Options::default(), ClockMode::Fit)?;
    let mut diffs = gpcap::run::points_truth::compare(truth, &diffed.report);
    if truth.directions.is_empty() {
        diffs.push(format!(
            "nothing to compare: {} written",
            gpcap::present::count(truth.datagrams, "datagram")
        ));
    }
    if !diffs.is_empty() {
        for d in &diffs {
            eprintln!("gpcap: truth mismatch: {d}");
        }
        let _ = a;
        return Ok(ExitCode::from(4));
    }
    eprintln!("gpcap: diff agrees with the truth of both points");
    Ok(ExitCode::SUCCESS)
}
