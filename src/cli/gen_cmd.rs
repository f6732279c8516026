//! `gpcap gen -d DEF -o OUT`: simulated game traffic and its ground truth.

use super::args::GenArgs;
use super::{Result, load_program};
use crate::cli::Error;
use gpcap::Config;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(a: &GenArgs) -> Result<ExitCode> {
    use gpcap::generate::sim::{Emit, simulate_into};
    if let Some(second) = &a.points.second_point {
        return super::gen_points::run(a, second);
    }
    if a.vlan.is_some() && a.linktype != "ethernet" {
        return Err(Error::Usage(format!(
            "--vlan needs --linktype ethernet (a VLAN tag is part of the Ethernet header, not of {})",
            a.linktype
        )));
    }
    let program = load_program(&a.dissector)?;
    let cfg = sim_config(a);
    // A definition gen cannot write traffic for is refused before any file is made.
    gpcap::generate::sim::preflight(&program)
        .map_err(|e| Error::Usage(format!("{}: {e}", a.dissector.display())))?;
    // Both files are written beside their names and renamed when complete: a failed run
    // (a full disk) leaves neither a partial capture nor an empty truth file behind.
    let (capture, file) = Staged::create(&a.output)?;
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let truth_path = PathBuf::from(format!("{}.truth.jsonl", a.output.display()));
    let (truth_file, file) = Staged::create(&truth_path)?;
    let mut tout = std::io::BufWriter::with_capacity(1 << 20, file);
    let ng = a.output.extension().is_some_and(|e| e == "pcapng");
    let mut pcap = None;
    let mut pcapng = None;
    if ng {
        let mut w = gpcap::capture::PcapNgWriter::new(out).map_err(|e| Error::io(a.output.display(), e))?;
        w.interface(cfg.link.linktype() as u16, 65535, true)
            .map_err(|e| Error::io(a.output.display(), e))?;
        pcapng = Some(w);
    } else {
        pcap = Some(
            gpcap::capture::PcapWriter::new(out, cfg.link.linktype(), 65535, true)
                .map_err(|e| Error::io(a.output.display(), e))?,
        );
    }
    let mut io_error: Option<std::io::Error> = None;
    let mut truth_error: Option<std::io::Error> = None;
    let truth = simulate_into(&program, &cfg, &mut |e| {
        let (r, slot) = match e {
            Emit::Frame { t_ns, data } => (
                match (&mut pcap, &mut pcapng) {
                    (Some(w), _) => w.write(t_ns, data, data.len() as u32),
                    (_, Some(w)) => w.packet(0, t_ns as u64, data, data.len() as u32),
                    _ => Ok(()),
                },
                &mut io_error,
            ),
            Emit::Event(_) if a.summary_only => (Ok(()), &mut truth_error),
            Emit::Event(ev) => (
                serde_json::to_writer(&mut tout, ev)
                    .map_err(std::io::Error::other)
                    .and_then(|_| tout.write_all(b"\n")),
                &mut truth_error,
            ),
        };
        if let Err(e) = r {
            slot.get_or_insert(e);
        }
    })
    .map_err(|e| Error::Usage(format!("{}: {e}", a.dissector.display())))?;
    if let Some(e) = io_error {
        return Err(Error::io(a.output.display(), e));
    }
    if let Some(e) = truth_error {
        return Err(Error::io(truth_path.display(), e));
    }
    let flushed = match (pcap, pcapng) {
        (Some(w), _) => w.into_inner().flush(),
        (_, Some(w)) => w.into_inner().flush(),
        _ => Ok(()),
    };
    flushed.map_err(|e| Error::io(a.output.display(), e))?;
    serde_json::to_writer(&mut tout, &truth)
        .map_err(|e| Error::io(truth_path.display(), std::io::Error::other(e)))?;
    tout.write_all(b"\n")
        .and_then(|_| tout.flush())
        .map_err(|e| Error::io(truth_path.display(), e))?;
    drop(tout);
    capture.commit()?;
    truth_file.commit()?;
    let keylog = write_keylog(a, &truth)?;
    eprintln!(
        "gpcap: wrote {} ({}, {} lost, {} duplicated, {} corrupted) to {} and its truth to {}",
        gpcap::present::count(truth.frames, "frame"),
        gpcap::present::count(truth.datagrams_sent, "game datagram"),
        truth.lost,
        truth.duplicated,
        truth.corrupted,
        a.output.display(),
        truth_path.display()
    );
    if a.check {
        return check(a, program, &truth, keylog.as_deref());
    }
    Ok(ExitCode::SUCCESS)
}

/// The simulation the flags describe.
fn sim_config(a: &GenArgs) -> gpcap::generate::sim::SimConfig {
    use gpcap::generate::Link;
    use gpcap::generate::sim::{Burst, SimConfig};
    let burst = a.burst.map(|[enter, exit, loss]| Burst { enter, exit, loss });
    SimConfig {
        seed: a.seed,
        duration_s: a.duration,
        packets: a.packets,
        rate_hz: a.rate,
        clients: a.clients,
        loss: a.loss,
        burst,
        dup: a.dup,
        reorder: a.reorder,
        jitter_ms: a.jitter,
        corrupt: a.corrupt,
        link_mtu: a.link_mtu,
        df: a.df,
        no_fragment: a.no_fragment,
        foreign: a.foreign,
        ipv6: a.ipv6,
        link: match a.linktype.as_str() {
            "sll2" => Link::Sll2,
            "raw" => Link::Raw,
            _ => Link::Ethernet { vlan: a.vlan },
        },
        big: a.big,
        attacks: a.attacks,
        malformed: a.malformed,
        encrypt: a.encrypt,
    }
}

/// Sealed traffic: the connections' keys written beside the capture (`OUT.keylog`).
fn write_keylog(a: &GenArgs, truth: &gpcap::generate::sim::Truth) -> Result<Option<PathBuf>> {
    let keylog = (!truth.keys.is_empty()).then(|| PathBuf::from(format!("{}.keylog", a.output.display())));
    if let Some(path) = &keylog {
        let mut text =
            String::from("# NETCODE <client ip:port> <client_to_server_key> <server_to_client_key>\n");
        for k in &truth.keys {
            text.push_str(&format!(
                "NETCODE {} {} {}\n",
                k.client, k.client_to_server_key, k.server_to_client_key
            ));
        }
        std::fs::write(path, text).map_err(|e| Error::io(path.display(), e))?;
        eprintln!(
            "gpcap: sealed every packet; the connections' keys are in {}",
            path.display()
        );
    }
    Ok(keylog)
}

/// `--check`: the written capture analyzed and compared with its ground truth (exit 4
/// on a mismatch).
fn check(
    a: &GenArgs,
    program: std::sync::Arc<gpcap::dissect::Program>,
    truth: &gpcap::generate::sim::Truth,
    keylog: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let mut cfg = Config::from_program(program);
    if let Some(path) = keylog {
        // Sealed traffic is checked decrypted: every packet must open.
        let mut secrets = gpcap::decrypt::keys::Secrets::default();
        gpcap::decrypt::keys::keylog(path, &mut secrets).map_err(Error::Usage)?;
        cfg.stack = Some(std::sync::Arc::new(gpcap::layers::Stack {
            secrets: Some(std::sync::Arc::new(secrets)),
            ..Default::default()
        }));
    }
    let report = super::analyze::analyze_files(std::slice::from_ref(&a.output), cfg, None)?;
    let mut diffs = gpcap::run::truth::compare(truth, &report);
    if let Some(d) = report
        .decryption
        .as_ref()
        .filter(|d| d.total.mac_failures + d.total.no_key > 0)
    {
        diffs.push(format!(
            "decryption: {} MAC failures and {} packets without a key",
            d.total.mac_failures, d.total.no_key
        ));
    }
    // A check over nothing cannot fail: it is a failure of its own.
    if truth.datagrams_sent == 0 || truth.flows.is_empty() {
        diffs.push(format!(
            "nothing to compare: {} written, {} with a ground truth",
            gpcap::present::count(truth.frames, "frame"),
            gpcap::present::count(truth.flows.len() as u64, "flow")
        ));
    }
    if !diffs.is_empty() {
        for d in &diffs {
            eprintln!("gpcap: truth mismatch: {d}");
        }
        return Ok(ExitCode::from(4));
    }
    eprintln!("gpcap: analyze agrees with the ground truth");
    Ok(ExitCode::SUCCESS)
}

/// A file written under a temporary name beside its own and renamed into place by
/// `commit`; dropped uncommitted, the temporary file is removed. Paths that are not
/// regular files (`/dev/stdout`, a pipe) are written directly.
pub(super) struct Staged {
    path: PathBuf,
    temp: Option<PathBuf>,
}

impl Staged {
    pub(super) fn create(path: &std::path::Path) -> Result<(Staged, std::fs::File)> {
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
        let temp = (!special).then(|| {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(".partial");
            path.with_file_name(name)
        });
        let target = temp.as_deref().unwrap_or(path);
        let file = std::fs::File::create(target).map_err(|e| Error::io(target.display(), e))?;
        let staged = Staged {
            path: path.to_path_buf(),
            temp,
        };
        Ok((staged, file))
    }

    pub(super) fn commit(mut self) -> Result<()> {
        if let Some(temp) = self.temp.take() {
            std::fs::rename(&temp, &self.path).map_err(|e| {
                let _ = std::fs::remove_file(&temp);
                Error::io(self.path.display(), e)
            })?;
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_file(temp);
        }
    }
}
