//! The `gpcap` command line: parses arguments, runs the library, prints what it returns.

use clap::{Args, Parser, Subcommand};
use gpcap::analysis::{Analyzer, Config, Report};
use gpcap::capture::{CaptureReader, Decoded, decode};
use gpcap::dissect::{self, Dissector, Program};
use gpcap::present;
use gpcap::wire::{self, CrcStatus, ProtocolId};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Writes to stdout; a closed pipe (`gpcap analyze … | head`) ends the program quietly
/// instead of panicking as `print!` would.
fn write_stdout(args: std::fmt::Arguments) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("gpcap: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

macro_rules! out {
    ($($t:tt)*) => { write_stdout(format_args!($($t)*)) };
}

macro_rules! outln {
    () => { write_stdout(format_args!("\n")) };
    ($($t:tt)*) => { write_stdout(format_args!("{}\n", format_args!($($t)*))) };
}

#[derive(Parser)]
#[command(
    name = "gpcap",
    version,
    about = "Packet analyzer for the bitpacked UDP protocols of real-time games"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct ProtocolArgs {
    /// Dissector definition (dissectors/*.kdl): protocol id, ports, packet layouts.
    #[arg(short = 'd', long = "dissector")]
    dissector: Option<PathBuf>,
    /// Protocol id (hex like 0x55667788), overriding the definition's.
    #[arg(long = "protocol-id", value_parser = parse_protocol_id)]
    protocol_id: Option<ProtocolId>,
    /// UDP port of the protocol (repeatable), overriding the definition's.
    #[arg(long = "port")]
    port: Vec<u16>,
    /// Validate every UDP datagram, whatever its ports.
    #[arg(long = "any-port")]
    any_port: bool,
    /// Memory for game-level reassembly across all flows, in MiB; a flood beyond it is
    /// reported (packets evicted for memory), not suffered.
    #[arg(long = "reassembly-memory", default_value_t = 32)]
    reassembly_mb: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Validate, dissect, reassemble and report on captures.
    Analyze {
        /// pcap or pcapng files (gzip-compressed ones too).
        #[arg(required = true)]
        captures: Vec<PathBuf>,
        #[command(flatten)]
        protocol: ProtocolArgs,
        /// Print the report as JSON (schema in docs/json.md).
        #[arg(long)]
        json: bool,
        /// UDP payload budget in bytes (default: the definition's, else 1200).
        #[arg(long)]
        mtu: Option<u32>,
        /// Link MTU for "IP datagram over the link MTU".
        #[arg(long = "link-mtu", default_value_t = 1500)]
        link_mtu: u32,
        /// Exit with 3 when a gate is crossed: crc, mtu, malformed, frag-loss=RATE.
        #[arg(long = "fail-on", value_delimiter = ',')]
        fail_on: Vec<String>,
    },
    /// Print each game datagram's fields, down to the bit.
    Dissect {
        capture: PathBuf,
        #[command(flatten)]
        protocol: ProtocolArgs,
        /// Only this frame (1-based, as tshark numbers them).
        #[arg(long)]
        frame: Option<u64>,
        /// One JSON object per frame, in an array.
        #[arg(long)]
        json: bool,
        /// Show only packets matching this display filter (as in the TUI's `/`).
        #[arg(long)]
        filter: Option<String>,
    },
    /// Validate a definition: exit 0, or print diagnostics and exit 1.
    Check { dissector: PathBuf },
    /// Write a capture of simulated game traffic, and its ground truth beside it.
    Gen(GenArgs),
    /// Capture live from an interface (needs the `live` feature and libpcap).
    Live(LiveArgs),
    /// Send a generated game session over a real UDP socket (a test peer for `live`).
    Send(SendArgs),
    /// Browse a capture in the terminal: packets, fields and bits, flows, reassembly,
    /// loss and MTU.
    Tui {
        capture: PathBuf,
        #[command(flatten)]
        protocol: ProtocolArgs,
        /// Start with this display filter (as typed after `/`).
        #[arg(long)]
        filter: Option<String>,
    },
    /// Recover protocol ids and the game's flows from the traffic alone.
    Identify {
        #[arg(required = true)]
        captures: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct LiveArgs {
    /// Interface to capture on (see --list).
    iface: Option<String>,
    /// List the interfaces and exit.
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    protocol: ProtocolArgs,
    /// BPF capture filter, e.g. "udp port 40000".
    #[arg(long)]
    filter: Option<String>,
    /// Also write every captured frame to this pcapng file.
    #[arg(long)]
    write: Option<PathBuf>,
    #[arg(long, default_value_t = 65535)]
    snaplen: i32,
    /// Print reports instead of opening the terminal UI.
    #[arg(long = "no-tui")]
    no_tui: bool,
    /// With --no-tui: reports as JSON lines.
    #[arg(long)]
    json: bool,
    /// Stop after this many seconds (else Ctrl-C, or q in the UI).
    #[arg(long)]
    duration: Option<f64>,
    /// With --no-tui: seconds between reports.
    #[arg(long, default_value_t = 5.0)]
    interval: f64,
    /// Link MTU for "IP datagram over the link MTU".
    #[arg(long = "link-mtu", default_value_t = 1500)]
    link_mtu: u32,
    /// UDP payload budget in bytes (default: the definition's, else 1200).
    #[arg(long)]
    mtu: Option<u32>,
}

#[derive(Args)]
struct SendArgs {
    #[arg(short = 'd', long = "dissector")]
    dissector: PathBuf,
    /// Destination, e.g. 127.0.0.1:40000.
    #[arg(long)]
    to: std::net::SocketAddr,
    /// Local address to send from (default: any port).
    #[arg(long)]
    from: Option<std::net::SocketAddr>,
    #[arg(long, default_value_t = 100)]
    packets: u64,
    /// Packets per second (0: as fast as possible).
    #[arg(long, default_value_t = 60.0)]
    rate: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Chance that a packet is large.
    #[arg(long, default_value_t = 0.2)]
    big: f64,
    /// Send packets over the MTU budget whole (the kernel may IP-fragment them).
    #[arg(long = "no-fragment")]
    no_fragment: bool,
}

#[derive(Args)]
struct GenArgs {
    /// The definition whose packets to write.
    #[arg(short = 'd', long = "dissector")]
    dissector: PathBuf,
    /// Output capture: .pcap or .pcapng (OUT.truth.jsonl is written beside it).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds of traffic.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Stop after this many game packets (all flows).
    #[arg(long)]
    packets: Option<u64>,
    /// Server send rate in Hz (clients send at half of it).
    #[arg(long, default_value_t = 60.0)]
    rate: f64,
    #[arg(long, default_value_t = 1)]
    clients: u32,
    /// Independent loss probability per IP packet.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Gilbert–Elliott burst loss: ENTER,EXIT,LOSS (e.g. 0.01,0.3,0.8).
    #[arg(long)]
    burst: Option<String>,
    #[arg(long, default_value_t = 0.0)]
    dup: f64,
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Uniform extra delay up to this many milliseconds.
    #[arg(long, default_value_t = 0.0)]
    jitter: f64,
    /// Probability of one flipped bit per datagram.
    #[arg(long, default_value_t = 0.0)]
    corrupt: f64,
    #[arg(long = "link-mtu", default_value_t = 1500)]
    link_mtu: u32,
    /// Send with don't-fragment: datagrams over the link MTU are dropped and answered by
    /// ICMP (else they are IP-fragmented).
    #[arg(long)]
    df: bool,
    /// The sender ignores the MTU budget: no game-level fragmentation.
    #[arg(long = "no-fragment")]
    no_fragment: bool,
    /// Foreign datagrams (DNS-like, another protocol id) per game datagram.
    #[arg(long, default_value_t = 0.0)]
    foreign: f64,
    #[arg(long)]
    ipv6: bool,
    /// 802.1Q VLAN id (Ethernet only).
    #[arg(long)]
    vlan: Option<u16>,
    #[arg(long, default_value = "ethernet", value_parser = ["ethernet", "sll2", "raw"])]
    linktype: String,
    /// Chance that a packet is large (many array elements).
    #[arg(long, default_value_t = 0.05)]
    big: f64,
    /// Add an attacker that breaks each fragment rule of SPEC §1.
    #[arg(long)]
    attacks: bool,
    /// Chance that a whole packet is sent cut short inside its end check (valid CRC).
    #[arg(long, default_value_t = 0.0)]
    malformed: f64,
    /// Analyze the written capture and compare every number with the ground truth.
    #[arg(long)]
    check: bool,
    /// Write only the truth's summary line, not a line per datagram (large captures).
    #[arg(long = "summary-only")]
    summary_only: bool,
}

fn gen_cmd(a: &GenArgs) -> Result<ExitCode, String> {
    use gpcap::generate::net::Link;
    use gpcap::generate::sim::{Burst, Emit, SimConfig, simulate_into};
    struct Generated {
        truth: gpcap::generate::sim::Truth,
    }
    let program = load_program(&a.dissector)?;
    let burst = match &a.burst {
        None => None,
        Some(s) => {
            let v: Vec<f64> = s.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            let [enter, exit, loss] = v[..] else {
                return Err(format!("--burst takes ENTER,EXIT,LOSS probabilities, got `{s}`"));
            };
            Some(Burst { enter, exit, loss })
        }
    };
    let cfg = SimConfig {
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
    };
    let file = std::fs::File::create(&a.output).map_err(|e| format!("{}: {e}", a.output.display()))?;
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let truth_path = PathBuf::from(format!("{}.truth.jsonl", a.output.display()));
    let tfile = std::fs::File::create(&truth_path).map_err(|e| format!("{}: {e}", truth_path.display()))?;
    let mut tout = std::io::BufWriter::with_capacity(1 << 20, tfile);
    let ng = a.output.extension().is_some_and(|e| e == "pcapng");
    let mut pcap = None;
    let mut pcapng = None;
    if ng {
        let mut w = gpcap::capture::writer::PcapNgWriter::new(out).map_err(|e| e.to_string())?;
        w.interface(cfg.link.linktype() as u16, 65535, true)
            .map_err(|e| e.to_string())?;
        pcapng = Some(w);
    } else {
        pcap = Some(
            gpcap::capture::writer::PcapWriter::new(out, cfg.link.linktype(), 65535, true)
                .map_err(|e| e.to_string())?,
        );
    }
    let mut io_error: Option<std::io::Error> = None;
    let truth = simulate_into(&program, &cfg, &mut |e| {
        let r = match e {
            Emit::Frame { t_ns, data } => match (&mut pcap, &mut pcapng) {
                (Some(w), _) => w.write(t_ns, data, data.len() as u32),
                (_, Some(w)) => w.packet(0, t_ns as u64, data, data.len() as u32),
                _ => Ok(()),
            },
            Emit::Event(_) if a.summary_only => Ok(()),
            Emit::Event(ev) => serde_json::to_writer(&mut tout, ev)
                .map_err(std::io::Error::other)
                .and_then(|_| tout.write_all(b"\n")),
        };
        if let Err(e) = r {
            io_error.get_or_insert(e);
        }
    })
    .map_err(|e| e.to_string())?;
    if let Some(e) = io_error {
        return Err(format!("{}: {e}", a.output.display()));
    }
    let flushed = match (pcap, pcapng) {
        (Some(w), _) => w.into_inner().flush(),
        (_, Some(w)) => w.into_inner().flush(),
        _ => Ok(()),
    };
    flushed.map_err(|e| format!("{}: {e}", a.output.display()))?;
    serde_json::to_writer(&mut tout, &truth).map_err(|e| e.to_string())?;
    tout.write_all(b"\n")
        .and_then(|_| tout.flush())
        .map_err(|e| format!("{}: {e}", truth_path.display()))?;
    let g = Generated { truth };
    eprintln!(
        "gpcap: wrote {} frames ({} game datagrams, {} lost, {} duplicated, {} corrupted) to {} and its truth to {}",
        g.truth.frames,
        g.truth.datagrams_sent,
        g.truth.lost,
        g.truth.duplicated,
        g.truth.corrupted,
        a.output.display(),
        truth_path.display()
    );
    if a.check {
        let report = run_analysis(std::slice::from_ref(&a.output), Config::from_program(program))?;
        let diffs = gpcap::generate::check::compare(&g.truth, &report);
        if !diffs.is_empty() {
            for d in &diffs {
                eprintln!("gpcap: truth mismatch: {d}");
            }
            return Ok(ExitCode::from(4));
        }
        eprintln!("gpcap: analyze agrees with the ground truth");
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_protocol_id(s: &str) -> Result<ProtocolId, String> {
    ProtocolId::parse(s).ok_or_else(|| format!("`{s}` is not a protocol id (try 0x55667788)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Analyze {
            captures,
            protocol,
            json,
            mtu,
            link_mtu,
            fail_on,
        } => analyze(&captures, &protocol, json, mtu, link_mtu, &fail_on),
        Command::Dissect {
            capture,
            protocol,
            frame,
            json,
            filter,
        } => dissect_cmd(&capture, &protocol, frame, json, filter.as_deref()),
        Command::Check { dissector } => check(&dissector),
        Command::Identify { captures, json } => identify_cmd(&captures, json),
        Command::Gen(args) => gen_cmd(&args),
        Command::Live(args) => live_cmd(&args),
        Command::Send(args) => send_cmd(&args),
        Command::Tui {
            capture,
            protocol,
            filter,
        } => tui_cmd(&capture, &protocol, filter.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            let _ = writeln!(std::io::stderr(), "gpcap: {msg}");
            ExitCode::from(2)
        }
    }
}

fn load_program(path: &Path) -> Result<Arc<Program>, String> {
    dissect::load(path).map(Arc::new).map_err(|e| {
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        format!("invalid definition\n{}", dissect::render(&e, color))
    })
}

fn check(path: &Path) -> Result<ExitCode, String> {
    match dissect::load(path) {
        Ok(p) => {
            outln!(
                "{}: ok — protocol {:?}, {} packet types defined, {}",
                path.display(),
                p.params.name,
                p.packets.len(),
                dissect::compile::describe(&p.params.format)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            eprint!("{}", dissect::render(&e, color));
            Ok(ExitCode::from(1))
        }
    }
}

/// The analysis configuration from the definition and flags.
fn config(p: &ProtocolArgs) -> Result<Config, String> {
    let mut cfg = match &p.dissector {
        Some(path) => Config::from_program(load_program(path)?),
        None => Config::default(),
    };
    if let Some(id) = p.protocol_id {
        cfg.protocol_id = Some(id);
        cfg.protocol_source = "flag".into();
    }
    if !p.port.is_empty() {
        cfg.ports = p.port.clone();
    }
    cfg.any_port |= p.any_port;
    cfg.reassembly_budget = p.reassembly_mb.max(1) << 20;
    Ok(cfg)
}

fn analyze(
    captures: &[PathBuf],
    p: &ProtocolArgs,
    json: bool,
    mtu: Option<u32>,
    link_mtu: u32,
    fail_on: &[String],
) -> Result<ExitCode, String> {
    let mut cfg = config(p)?;
    let mut identification = None;
    if cfg.protocol_id.is_none() {
        let id = identify(captures)?;
        let Some(best) = id.best() else {
            return Err(format!(
                "no protocol found: none of {} sampled datagrams in {} flows share a protocol id; give -d DISSECTOR or --protocol-id HEX",
                id.sampled, id.flows
            ));
        };
        cfg.use_identified(best);
        if !json {
            outln!(
                "Protocol id {} identified from the traffic: it validates {} of {} sampled datagrams in {} flows (ports {}); header read with the reference layout.\n",
                best.protocol_id,
                best.datagrams,
                id.sampled,
                best.flows.len(),
                best.ports
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        identification = Some(id);
    }
    if cfg.ports.is_empty() && !cfg.any_port {
        cfg.any_port = true;
    }
    if let Some(m) = mtu {
        cfg.format.mtu_budget = m;
    }
    cfg.link_mtu = link_mtu;
    let mut report = run_analysis(captures, cfg)?;
    report.identification = identification;
    json_or_text(json, &report, || present::tables::render(&report))?;
    let failed = gates(&report, fail_on)?;
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("gpcap: gate failed: {f}");
        }
        return Ok(ExitCode::from(3));
    }
    let unreadable = report
        .capture
        .files
        .iter()
        .any(|f| f.error.is_some() && f.frames == 0);
    Ok(if unreadable {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads every capture through one analyzer. A file that cannot be opened is an error;
/// one that breaks midway keeps what was read and says where it stopped.
fn run_analysis(captures: &[PathBuf], cfg: Config) -> Result<Report, String> {
    // Large inputs are sharded over the cores by IP address pair (same report; tests/parallel.rs).
    let total: u64 = captures
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if cores > 1 && total > 8 << 20 {
        return run_parallel(captures, cfg, (cores + 1).min(4), total);
    }
    let mut a = Analyzer::new(cfg);
    for path in captures {
        let mut r = CaptureReader::open(path).map_err(|e| e.to_string())?;
        a.begin_file(&path.display().to_string());
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let bar = progress_bar(size, &path.display().to_string());
        let mut error = None;
        loop {
            match r.next_frame() {
                Ok(Some(f)) => {
                    a.frame(&f);
                    if let Some(b) = &bar
                        && f.number.is_multiple_of(65536)
                    {
                        b.set_position(r.offset().min(size));
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("gpcap: {e}");
                    error = Some(e);
                    break;
                }
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        if let Some(t) = &r.truncated_tail {
            eprintln!("gpcap: warning: {t}");
        }
        a.end_file(error, r.truncated_tail.clone());
    }
    Ok(a.finish())
}

/// A progress bar on stderr for long inputs, when stderr is a terminal.
fn progress_bar(len: u64, message: &str) -> Option<indicatif::ProgressBar> {
    (std::io::stderr().is_terminal() && len > 64 << 20).then(|| {
        let b = indicatif::ProgressBar::new(len);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_message(message.to_string());
        b
    })
}

fn run_parallel(captures: &[PathBuf], cfg: Config, shards: usize, total: u64) -> Result<Report, String> {
    let sizes: Vec<u64> = captures
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .collect();
    let bar = progress_bar(total, "");
    let mut progress = |file: usize, offset: u64| {
        if let Some(b) = &bar {
            let before: u64 = sizes[..file].iter().sum();
            b.set_position((before + offset).min(total));
        }
    };
    let report = gpcap::analysis::parallel::analyze_files(captures, cfg, shards, &mut progress)
        .map_err(|e| e.to_string())?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for f in &report.capture.files {
        if let Some(e) = &f.error {
            eprintln!("gpcap: {e}");
        }
        if let Some(t) = &f.truncated_tail {
            eprintln!("gpcap: warning: {t}");
        }
    }
    Ok(report)
}

/// Gates for CI: which were crossed.
fn gates(r: &Report, fail_on: &[String]) -> Result<Vec<String>, String> {
    let mut failed = Vec::new();
    for g in fail_on {
        let (name, arg) = g
            .split_once('=')
            .map_or((g.as_str(), None), |(a, b)| (a, Some(b)));
        match name {
            "crc" if r.validation.crc_mismatch > 0 => failed.push(format!(
                "crc: {} datagrams failed the CRC",
                r.validation.crc_mismatch
            )),
            "mtu" if r.mtu.over_budget + r.mtu.ip_fragmented > 0 => failed.push(format!(
                "mtu: {} payloads over the {}-byte budget, {} IP-fragmented",
                r.mtu.over_budget, r.mtu.budget, r.mtu.ip_fragmented
            )),
            "malformed" if r.malformed.total > 0 => {
                failed.push(format!("malformed: {} malformed packets", r.malformed.total))
            }
            "frag-loss" => {
                let limit: f64 = arg
                    .unwrap_or("0")
                    .parse()
                    .map_err(|_| format!("--fail-on frag-loss=RATE needs a number, got {g}"))?;
                if r.reassembly.fragment_loss > limit {
                    failed.push(format!(
                        "frag-loss: fragment loss {:.2}% over {:.2}%",
                        r.reassembly.fragment_loss * 100.0,
                        limit * 100.0
                    ));
                }
            }
            "crc" | "mtu" | "malformed" => {}
            other => {
                return Err(format!(
                    "unknown --fail-on gate `{other}` (crc, mtu, malformed, frag-loss=RATE)"
                ));
            }
        }
    }
    Ok(failed)
}

/// Prints `value` as pretty JSON, or the text `render` makes of it.
fn json_or_text<T: serde::Serialize>(
    json: bool,
    value: &T,
    render: impl FnOnce() -> String,
) -> Result<(), String> {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(value).map_err(|e| e.to_string())?
        );
    } else {
        out!("{}", render());
    }
    Ok(())
}

/// A closed stdout ends output quietly; other write errors are reported.
fn quiet_on_broken_pipe(e: std::io::Error) -> Result<ExitCode, String> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(format!("cannot write to stdout: {e}"))
    }
}

/// Writes one dissected packet as text or JSON.
struct DissectOut<W: Write> {
    out: W,
    json: bool,
    first: bool,
}

impl<W: Write> DissectOut<W> {
    #[allow(clippy::too_many_arguments)]
    fn packet(
        &mut self,
        program: &Program,
        d: &dissect::Dissection,
        data: &[u8],
        frame: u64,
        time: f64,
        flow: &str,
        crc: Option<CrcStatus>,
        note: Option<&str>,
    ) -> std::io::Result<()> {
        if self.json {
            let mut v = present::tree::json_tree(program, d, data);
            v["frame"] = serde_json::json!(frame);
            v["time"] = serde_json::json!(time);
            v["flow"] = serde_json::json!(flow);
            v["length"] = serde_json::json!(data.len());
            v["crc_ok"] = serde_json::json!(crc.map(|c| c == CrcStatus::Ok));
            if let Some(n) = note {
                v["note"] = serde_json::json!(n);
            }
            if !self.first {
                writeln!(self.out, ",")?;
            }
            self.first = false;
            return write!(
                self.out,
                "{}",
                serde_json::to_string_pretty(&v).unwrap_or_default()
            );
        }
        let crc_text = match crc {
            Some(CrcStatus::Ok) => "CRC ok".to_string(),
            Some(CrcStatus::Mismatch { stored, computed }) => {
                format!("CRC MISMATCH (stored 0x{stored:08x}, expected 0x{computed:08x})")
            }
            Some(CrcStatus::TooShort { len }) => format!("too short for a CRC ({len} bytes)"),
            None => "CRC not checked".into(),
        };
        let t = d
            .packet_type
            .map(|t| format!("type {t} ({})", program.type_name(t).unwrap_or("undefined")))
            .unwrap_or_else(|| "no header".into());
        writeln!(
            self.out,
            "Frame {frame}: {} bytes, {flow}, {time:.6} s",
            data.len()
        )?;
        if let Some(n) = note {
            writeln!(self.out, "[{n}]")?;
        }
        writeln!(
            self.out,
            "{} {t}, sequence {}, {crc_text}",
            if program.params.name.is_empty() {
                "gpcap"
            } else {
                &program.params.name
            },
            d.sequence.map(|s| s.to_string()).unwrap_or_else(|| "?".into())
        )?;
        write!(self.out, "{}", present::tree::text_tree(program, d, data))?;
        writeln!(self.out)
    }
}

fn dissect_cmd(
    path: &Path,
    p: &ProtocolArgs,
    only: Option<u64>,
    json: bool,
    filter: Option<&str>,
) -> Result<ExitCode, String> {
    use gpcap::analysis::reassembly::{Budget, FlowReassembly, FragmentIn, Outcome};
    use gpcap::capture::ipfrag::IpDefrag;
    use gpcap::filter::{Filter, PacketFacts};
    let Some(def) = &p.dissector else {
        return Err("dissect needs a definition: -d dissectors/NAME.kdl".into());
    };
    let program = load_program(def)?;
    let cfg = config(p)?;
    let filter = match filter {
        Some(text) => Filter::parse(text, &|n| {
            program.packets.iter().find(|d| d.name == n).map(|d| d.type_id)
        })
        .map_err(|e| format!("--filter: {e}"))?,
        None => Filter::all(),
    };
    let mut d = Dissector::new(program.clone());
    let mut r = CaptureReader::open(path).map_err(|e| e.to_string())?;
    let mut w = DissectOut {
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        json,
        first: true,
    };
    if json {
        let _ = writeln!(w.out, "[");
    }
    let mut dissection = dissect::Dissection::default();
    let mut defrag = IpDefrag::default();
    let mut reasm: std::collections::HashMap<(std::net::SocketAddr, std::net::SocketAddr), FlowReassembly> =
        std::collections::HashMap::new();
    let mut budget = Budget::new(64 << 20);
    let mut packet = Vec::new();
    let mut rebuilt;
    loop {
        let f = match r.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                eprintln!("gpcap: {e}");
                break;
            }
        };
        // The UDP datagram of this frame, rebuilt from IP fragments when needed.
        let (ip, src_port, dst_port, payload, ip_pieces) = match decode(f.linktype, f.data) {
            Decoded::Udp {
                ip,
                src_port,
                dst_port,
                payload,
                ..
            } => (ip, src_port, dst_port, payload, 1),
            Decoded::IpFragment {
                ip,
                protocol: 17,
                payload,
            } => match defrag.push(f.ts_ns, &ip, 17, payload) {
                Some(whole) => {
                    rebuilt = whole;
                    match gpcap::capture::decode::udp_from_reassembled(rebuilt.ip, &rebuilt.data) {
                        Decoded::Udp {
                            ip,
                            src_port,
                            dst_port,
                            payload,
                            ..
                        } => (ip, src_port, dst_port, payload, rebuilt.fragments),
                        _ => continue,
                    }
                }
                None => continue,
            },
            _ => continue,
        };
        let on_port = cfg.any_port
            || cfg.ports.is_empty()
            || cfg.ports.contains(&src_port)
            || cfg.ports.contains(&dst_port);
        if !on_port {
            continue;
        }
        let src = std::net::SocketAddr::new(ip.src, src_port);
        let dst = std::net::SocketAddr::new(ip.dst, dst_port);
        let crc = cfg.protocol_id.map(|id| wire::verify_crc(id, payload));
        d.dissect_into(payload, &mut dissection);
        let flow = format!("{src} → {dst}");
        let time = f.ts_ns as f64 / 1e9;
        let facts = PacketFacts {
            frame: f.number,
            src: Some(src),
            dst: Some(dst),
            sequence: dissection.sequence,
            packet_type: dissection.packet_type,
            size: payload.len() as u32,
            fragment: dissection.fragment.map(|x| (x.id, x.count)),
            crc_ok: crc == Some(CrcStatus::Ok),
            crc_fail: crc.is_some_and(|c| c != CrcStatus::Ok),
            malformed: dissection.fault.is_some(),
            ip_fragmented: ip_pieces > 1,
            over_budget: payload.len() as u32 > cfg.format.mtu_budget,
            truncated: f.snaplen_truncated(),
            game: true,
        };
        let shown = only.is_none_or(|n| n == f.number) && filter.matches(&facts);
        let ip_note = (ip_pieces > 1).then(|| format!("reassembled from {ip_pieces} IP fragments"));
        if shown
            && let Err(e) = w.packet(
                &program,
                &dissection,
                payload,
                f.number,
                time,
                &flow,
                crc,
                ip_note.as_deref(),
            )
        {
            return quiet_on_broken_pipe(e);
        }
        // A game fragment that completes its packet: show the packet, as Wireshark does.
        if let (Some(frag), Some(seq), false) = (dissection.fragment, dissection.sequence, facts.crc_fail) {
            let data = payload
                .get(frag.data_offset..frag.data_offset + frag.data_len)
                .unwrap_or(&[]);
            let input = FragmentIn {
                sequence: seq,
                id: frag.id,
                count: frag.count,
                data,
            };
            let buf = reasm.entry((src, dst)).or_default();
            if let Outcome::Complete { count } =
                buf.push(input, &program.params.format, &mut budget, &mut packet)
            {
                let whole_crc = cfg.protocol_id.map(|id| wire::verify_crc(id, &packet));
                let mut whole = dissect::Dissection::default();
                d.dissect_into(&packet, &mut whole);
                let note = format!("packet reassembled from {count} fragments, completed by this frame");
                if shown
                    && let Err(e) = w.packet(
                        &program,
                        &whole,
                        &packet,
                        f.number,
                        time,
                        &flow,
                        whole_crc,
                        Some(&note),
                    )
                {
                    return quiet_on_broken_pipe(e);
                }
            }
        }
        if w.out.flush().is_err() {
            // stdout closed (a pipe into head): stop quietly.
            return Ok(ExitCode::SUCCESS);
        }
    }
    if json {
        let _ = writeln!(w.out, "\n]");
    }
    Ok(ExitCode::SUCCESS)
}

/// Samples UDP datagrams of every capture and solves for protocol ids.
fn identify(captures: &[PathBuf]) -> Result<gpcap::identify::Identification, String> {
    let mut ident = gpcap::identify::Identifier::default();
    for path in captures {
        let mut r = CaptureReader::open(path).map_err(|e| e.to_string())?;
        while let Ok(Some(f)) = r.next_frame() {
            ident.frame(f.linktype, f.data);
            if ident.saturated() {
                break;
            }
        }
    }
    Ok(ident.finish())
}

fn identify_cmd(captures: &[PathBuf], json: bool) -> Result<ExitCode, String> {
    let id = identify(captures)?;
    json_or_text(json, &id, || present::tables::render_identification(&id))?;
    Ok(if id.candidates.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The analysis configuration for browsing: like analyze, identifying the protocol when
/// nothing says what it is.
fn browse_config(capture: &Path, p: &ProtocolArgs) -> Result<Config, String> {
    let mut cfg = config(p)?;
    if cfg.protocol_id.is_none()
        && let Some(best) = identify(&[capture.to_path_buf()])?.best()
    {
        cfg.use_identified(best);
    }
    if cfg.ports.is_empty() {
        cfg.any_port = true;
    }
    Ok(cfg)
}

fn tui_cmd(capture: &Path, p: &ProtocolArgs, filter: Option<&str>) -> Result<ExitCode, String> {
    use gpcap::tui::{App, Index, load};
    use std::sync::RwLock;
    // Fail before the screen changes if the file cannot be read at all.
    CaptureReader::open(capture).map_err(|e| e.to_string())?;
    let cfg = browse_config(capture, p)?;
    let program = cfg.program.clone();
    let index = Arc::new(RwLock::new(Index::new(capture)));
    let shared = index.clone();
    let path = capture.to_path_buf();
    std::thread::spawn(move || load(&path, cfg, &shared));
    let mut app = App::new(index, program);
    if let Some(f) = filter {
        app.apply_filter(f);
    }
    run_tui(&mut app)
}

/// The event loop: draw, wait briefly for a key, fold in newly indexed packets.
fn run_tui(app: &mut gpcap::tui::App) -> Result<ExitCode, String> {
    use ratatui::crossterm::event::{self, Event, KeyEventKind};
    let mut terminal = ratatui::init();
    let result = (|| -> std::io::Result<()> {
        while !app.quit && app.quit_at.is_none_or(|t| std::time::Instant::now() < t) {
            app.tick();
            terminal.draw(|f| gpcap::tui::ui::draw(f, app))?;
            if event::poll(std::time::Duration::from_millis(100))? {
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => app.key(k),
                    Event::Resize(..) => {}
                    _ => {}
                }
            }
        }
        Ok(())
    })();
    ratatui::restore();
    result.map_err(|e| format!("terminal: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// What `gpcap send` sent, as JSON on stdout.
#[derive(serde::Serialize, Default)]
struct Sent {
    datagrams: u64,
    packets: u64,
    fragmented_packets: u64,
    fragments: u64,
    /// Fragment count → packets.
    by_count: std::collections::BTreeMap<u32, u64>,
    /// Sizes of datagrams over the MTU budget (sent whole with --no-fragment).
    over_budget: Vec<usize>,
    errors: u64,
}

fn send_cmd(a: &SendArgs) -> Result<ExitCode, String> {
    use gpcap::generate::packet::PacketWriter;
    use gpcap::generate::rng::Rng;
    let program = load_program(&a.dissector)?;
    let from = a.from.unwrap_or_else(|| {
        if a.to.is_ipv6() {
            "[::]:0".parse().unwrap_or(a.to)
        } else {
            "0.0.0.0:0".parse().unwrap_or(a.to)
        }
    });
    let sock = std::net::UdpSocket::bind(from).map_err(|e| format!("bind {from}: {e}"))?;
    let mut w = PacketWriter::new(&program);
    let types = w.types();
    if types.is_empty() {
        return Err("the definition has no packet types".into());
    }
    let mut rng = Rng::new(a.seed);
    let fmt = program.params.format;
    let mut sent = Sent::default();
    let interval = if a.rate > 0.0 {
        std::time::Duration::from_secs_f64(1.0 / a.rate)
    } else {
        std::time::Duration::ZERO
    };
    let start = std::time::Instant::now();
    let max = if program.fragment.is_some() && !a.no_fragment {
        (fmt.fragment_size * fmt.max_fragments) as usize
    } else {
        65_000
    };
    for k in 0..a.packets {
        let ty = types[rng.below(types.len() as u64) as usize];
        let mut scale = if rng.chance(a.big) {
            rng.range(200, 600) as u64
        } else {
            rng.range(0, 12) as u64
        };
        let seq = k as u16;
        let mut packet = Vec::new();
        for _ in 0..8 {
            w.scale = scale;
            packet = w.packet(&mut rng, ty, seq).map_err(|e| e.to_string())?;
            if packet.len() <= max {
                break;
            }
            scale /= 4;
        }
        let mut datagrams = Vec::new();
        if program.fragment.is_some() && !a.no_fragment && packet.len() > fmt.mtu_budget as usize {
            let chunks: Vec<&[u8]> = packet.chunks(fmt.fragment_size as usize).collect();
            let n = chunks.len() as u32;
            for (i, c) in chunks.iter().enumerate() {
                datagrams.push(
                    w.fragment(&mut rng, seq, i as u32, n, c)
                        .map_err(|e| e.to_string())?,
                );
            }
            sent.fragmented_packets += 1;
            sent.fragments += n as u64;
            *sent.by_count.entry(n).or_default() += 1;
        } else {
            if packet.len() > fmt.mtu_budget as usize {
                sent.over_budget.push(packet.len());
            }
            datagrams.push(packet);
        }
        sent.packets += 1;
        for d in &datagrams {
            match sock.send_to(d, a.to) {
                Ok(_) => sent.datagrams += 1,
                Err(_) => sent.errors += 1,
            }
        }
        let due = interval * (k as u32 + 1);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    outln!("{}", serde_json::to_string(&sent).map_err(|e| e.to_string())?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "live"))]
fn live_cmd(_: &LiveArgs) -> Result<ExitCode, String> {
    Err("live capture is not compiled in; build it with `cargo install --path . --features live` (needs libpcap: apt-get install libpcap-dev)".into())
}

#[cfg(feature = "live")]
fn live_cmd(a: &LiveArgs) -> Result<ExitCode, String> {
    use gpcap::live::{LiveCapture, LiveOptions, interfaces};
    use gpcap::session::Session;
    use gpcap::tui::{App, Index};
    use std::sync::RwLock;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    if a.list || a.iface.is_none() {
        let list = interfaces()?;
        for i in list {
            outln!(
                "{:<16} {}{}",
                i.name,
                i.addresses.join(" "),
                i.description.map(|d| format!("  ({d})")).unwrap_or_default()
            );
        }
        return Ok(if a.list {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let iface = a.iface.clone().unwrap_or_default();
    let opts = LiveOptions {
        iface: iface.clone(),
        bpf: a.filter.clone(),
        snaplen: a.snaplen,
        ..LiveOptions::default()
    };
    let mut cap = LiveCapture::start(&opts).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    if a.no_tui {
        let s = stop.clone();
        let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
    }
    let start = Instant::now();
    let over = |stop: &AtomicBool| {
        stop.load(Ordering::Relaxed) || a.duration.is_some_and(|d| start.elapsed().as_secs_f64() >= d)
    };

    // The protocol: from the definition or flags, else identified from the first traffic.
    let mut cfg = config(&a.protocol)?;
    let mut early: Vec<gpcap::live::Captured> = Vec::new();
    if cfg.protocol_id.is_none() {
        let mut ident = gpcap::identify::Identifier::default();
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until && early.len() < 2000 && !over(&stop) {
            if let Some(c) = cap.next(Duration::from_millis(50)) {
                ident.frame(cap.linktype, &c.data);
                early.push(c);
            }
        }
        if let Some(best) = ident.finish().best() {
            cfg.use_identified(best);
        }
    }
    if cfg.ports.is_empty() {
        cfg.any_port = true;
    }
    cfg.link_mtu = a.link_mtu;
    if let Some(m) = a.mtu {
        cfg.format.mtu_budget = m;
    }
    let program = cfg.program.clone();
    let index = Arc::new(RwLock::new(Index::new(Path::new(&iface))));
    if let Ok(mut ix) = index.write() {
        ix.name = format!("live {iface}");
    }
    let mut session =
        Session::new(cfg, index.clone(), cap.linktype, a.write.as_deref()).map_err(|e| e.to_string())?;
    // Reports alone need no per-packet rows: a long --no-tui run keeps bounded memory.
    session.keep_packets = !a.no_tui;
    session
        .feed(early.iter().map(|c| (c.ts_ns, c.origlen, c.data.as_slice())))
        .map_err(|e| e.to_string())?;

    let stats_line = |s: &gpcap::live::LiveStats| {
        format!(
            "captured {} · kernel drops {} · interface drops {} · queue drops {}",
            s.captured, s.kernel_dropped, s.if_dropped, s.queue_dropped
        )
    };
    // The analysis loop: drain the queue in batches, publish a report now and then.
    let pump = |session: &mut Session, cap: &LiveCapture, wait: Duration| -> Result<(), String> {
        let mut batch = Vec::new();
        if let Some(c) = cap.next(wait) {
            batch.push(c);
            while batch.len() < 4096 {
                match cap.next(Duration::ZERO) {
                    Some(c) => batch.push(c),
                    None => break,
                }
            }
        }
        session
            .feed(batch.iter().map(|c| (c.ts_ns, c.origlen, c.data.as_slice())))
            .map_err(|e| e.to_string())
    };

    if a.no_tui {
        let mut next_report = Instant::now() + Duration::from_secs_f64(a.interval.max(0.1));
        let print = |r: &Report, s: &gpcap::live::LiveStats, last: bool| {
            if a.json {
                let v = serde_json::json!({"live": s, "final": last, "elapsed_s": start.elapsed().as_secs_f64(), "report": r});
                outln!("{v}");
            } else {
                outln!(
                    "Live capture on {iface}: {:.1} s, {}{}",
                    start.elapsed().as_secs_f64(),
                    stats_line(s),
                    if last { " (final)" } else { "" }
                );
                out!("{}", present::tables::render(r));
            }
        };
        while !over(&stop) && cap.is_running() {
            pump(&mut session, &cap, Duration::from_millis(50))?;
            if Instant::now() >= next_report {
                next_report += Duration::from_secs_f64(a.interval.max(0.1));
                print(&session.report(), &cap.stats(), false);
            }
        }
        let stats = cap.stop();
        while cap
            .next(Duration::ZERO)
            .is_some_and(|c| session.feed([(c.ts_ns, c.origlen, c.data.as_slice())]).is_ok())
        {}
        let failure = cap.failure.lock().ok().and_then(|f| f.clone());
        let report = session.finish().map_err(|e| e.to_string())?;
        print(&report, &stats, true);
        if let Some(f) = failure {
            return Err(format!("capture on {iface} stopped: {f}"));
        }
        return Ok(ExitCode::SUCCESS);
    }

    // The terminal UI: analysis on its own thread, the screen on this one.
    let analysis_stop = Arc::new(AtomicBool::new(false));
    let (astop, aindex) = (analysis_stop.clone(), index.clone());
    let analysis = std::thread::spawn(move || {
        let mut last = Instant::now();
        while !astop.load(Ordering::Relaxed) {
            if pump(&mut session, &cap, Duration::from_millis(50)).is_err() {
                break;
            }
            if last.elapsed() > Duration::from_secs(1) {
                last = Instant::now();
                let report = session.report();
                let line = stats_line(&cap.stats());
                if let Ok(mut ix) = aindex.write() {
                    ix.report = Some(report);
                    ix.live_status = Some(line);
                }
            }
        }
        cap.stop();
    });
    let mut app = App::new(index, program);
    app.live = true;
    let deadline = a.duration.map(|d| start + Duration::from_secs_f64(d));
    let result = run_tui_until(&mut app, deadline);
    analysis_stop.store(true, Ordering::Relaxed);
    let _ = analysis.join();
    result
}

#[cfg(feature = "live")]
fn run_tui_until(
    app: &mut gpcap::tui::App,
    deadline: Option<std::time::Instant>,
) -> Result<ExitCode, String> {
    if deadline.is_some() {
        app.quit_at = deadline;
    }
    run_tui(app)
}
