//! The command line's arguments (clap). Commands live beside this file, one a file.

use clap::{Args, Parser, Subcommand};
use gpcap::validate::ProtocolId;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "gpcap",
    version,
    about = "Packet analyzer for the bitpacked UDP protocols of real-time games"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Read definitions with the interpreter instead of compiling them to machine code
    /// (the same results, slower; also GPCAP_NO_JIT=1).
    #[arg(long = "no-jit", global = true)]
    pub no_jit: bool,
}

#[derive(Args, Clone)]
pub struct ProtocolArgs {
    /// Dissector definition (dissectors/*.kdl): protocol id, ports, packet layouts.
    /// Repeat for protocols inside protocols, outermost first (`-d netcode.kdl -d
    /// reliable.kdl -d game.kdl`).
    #[arg(short = 'd', long = "dissector")]
    pub dissector: Vec<PathBuf>,
    /// The server's private key for encrypted protocols (netcode.io): 64 hex digits, or
    /// @FILE holding them (or 32 raw bytes). Also GPCAP_KEY, or `NAME.key` beside the
    /// definition.
    #[arg(long = "key", value_name = "HEX|@FILE")]
    pub key: Option<String>,
    /// A key log: per-connection keys, one line each (`NETCODE <client ip:port>
    /// <client_to_server_key> <server_to_client_key>`). Also GPCAP_KEYLOG, or
    /// `NAME.keylog` beside the definition.
    #[arg(long = "keylog", value_name = "FILE")]
    pub keylog: Option<PathBuf>,
    /// Show decrypted keys in field trees (hidden otherwise).
    #[arg(long = "show-keys")]
    pub show_keys: bool,
    /// Protocol id (hex like 0x55667788), overriding the definition's.
    #[arg(long = "protocol-id", value_parser = parse_protocol_id)]
    pub protocol_id: Option<ProtocolId>,
    /// UDP port of the protocol (repeatable), overriding the definition's.
    #[arg(long = "port")]
    pub port: Vec<u16>,
    /// Validate every UDP datagram, whatever its ports.
    #[arg(long = "any-port")]
    pub any_port: bool,
    /// Memory for game-level reassembly across all flows, in MiB; a flood beyond it is
    /// reported (packets evicted for memory), not suffered.
    #[arg(long = "reassembly-memory", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub reassembly_mb: u64,
}

#[derive(Subcommand)]
pub enum Command {
    /// Validate, dissect, reassemble and report on captures.
    Analyze(AnalyzeArgs),
    /// Print each game datagram and reassembled packet's fields, down to the bit.
    Dissect(DissectArgs),
    /// Validate a definition: exit 0, or print diagnostics and exit 1.
    Check {
        /// The definition file (dissectors/*.kdl).
        dissector: PathBuf,
    },
    /// Write a capture of simulated game traffic, and its ground truth beside it.
    Gen(GenArgs),
    /// Capture live: an interface, `-` or a FIFO (a growing pcap/pcapng stream), or
    /// ssh://[user@]host[:port]/iface (tcpdump on a remote host through ssh).
    Live(LiveArgs),
    /// Send a generated game session over a real UDP socket (a test peer for `live`).
    Send(SendArgs),
    /// Send a capture's game datagrams to a UDP address, paced by their timestamps (a
    /// tcpreplay for game traffic: load a test server, drive `gpcap live`).
    Replay(ReplayArgs),
    /// Browse a capture in the terminal: packets, fields and bits, flows, reassembly,
    /// loss and MTU.
    Tui(TuiArgs),
    /// Compare two captures of one session at two points (client and server, either side
    /// of a router): where datagrams were lost, duplicated, reordered and delayed.
    Diff(super::diff::DiffArgs),
    /// Write captures as a Parquet dataset (packets, one table per packet type with
    /// typed field columns and one per list with a row per element, flows and the
    /// report's tables) for DuckDB, Spark, DataFusion.
    Export(ExportArgs),
    /// Write a Wireshark Lua dissector for a definition (and the definitions inside it):
    /// gpcap's field names, bits and faults in Wireshark and tshark.
    Wireshark(WiresharkArgs),
    /// Recover protocol ids and the game's flows from the traffic alone.
    Identify {
        /// pcap or pcapng files (gzip-compressed ones too); `-` or a FIFO is read once.
        #[arg(required = true)]
        captures: Vec<PathBuf>,
        /// Print the identification as JSON.
        #[arg(long)]
        json: bool,
        /// Tables with every column, as wide as they are (default on a terminal: its width).
        #[arg(long)]
        wide: bool,
    },
}

#[derive(Args)]
pub struct AnalyzeArgs {
    /// pcap or pcapng files (gzip-compressed ones too); `-` or a FIFO is read once.
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// Tables with every column, as wide as they are. On a terminal they are fitted to
    /// its width (columns left out by priority, long cells wrapped, said under each
    /// table); to a file or a pipe they are always whole.
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Print the report as JSON (schema in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// UDP payload budget in bytes (default: the definition's, else 1200).
    #[arg(long, value_parser = clap::value_parser!(u32).range(20..=65535))]
    pub mtu: Option<u32>,
    /// Link MTU for "IP datagram over the link MTU".
    #[arg(long = "link-mtu", default_value_t = 1500, value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub link_mtu: u32,
    /// Exit with 3 when a gate is crossed: crc, mtu, malformed, frag-loss=RATE, fit (the description does not fit the traffic well).
    #[arg(long = "fail-on", value_delimiter = ',')]
    pub fail_on: Vec<String>,
    /// One report per capture. Without it several captures are one trace, in the order
    /// given: a flow (same addresses and ports) continues from one file into the next.
    #[arg(long = "per-file", conflicts_with = "merge")]
    pub per_file: bool,
    /// Several captures of the same time (overlapping): interleave them by timestamp into
    /// one trace, as mergecap does, instead of reading one after the other.
    #[arg(long)]
    pub merge: bool,
    /// Analyzer threads (1 to 64; default: one per core, sharded by IP address pair —
    /// the report is the same either way).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: Option<u32>,
    /// Where the bits go: the table "Bandwidth by field" (and `bandwidth` in --json),
    /// every datagram dissected field by field (on every core, as the report: the
    /// figures are the same on one).
    #[arg(long)]
    pub bits: bool,
    /// Rows of "Bandwidth by field" to print, largest first (1 to 100000; default 30).
    #[arg(long = "bits-top", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=100_000), requires = "bits")]
    pub bits_top: u32,
    /// PATH=RES: the bits a float field would need at resolution RES (over the values
    /// seen); PATH as in the table, with or without the packet type in front. Repeatable.
    #[arg(long = "what-if", value_parser = what_if, requires = "bits")]
    pub what_if: Vec<(String, f64)>,
}

/// `PATH=RES` with a positive finite resolution.
fn what_if(s: &str) -> Result<(String, f64), String> {
    let (p, r) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected PATH=RESOLUTION, e.g. objects.position.x=0.01"))?;
    let res: f64 = r
        .trim()
        .parse()
        .map_err(|_| format!("`{r}`: the resolution is a number, e.g. 0.01"))?;
    if !(res.is_finite() && res > 0.0) {
        return Err(format!("`{r}`: the resolution must be a positive finite number"));
    }
    if p.trim().is_empty() {
        return Err(format!("`{s}`: the path is empty"));
    }
    Ok((p.trim().to_string(), res))
}

/// `KEY=VALUE` with a column name for a key.
fn partition_key(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected KEY=VALUE, e.g. day=2026-11-22"))?;
    let name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if k.is_empty() || !k.chars().all(name) || k.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "`{k}`: a partition key is a column name (letters, digits, _)"
        ));
    }
    if k == "capture" {
        return Err("`capture` is the partition gpcap writes itself (the capture's file name)".into());
    }
    if v.is_empty() {
        return Err(format!("`{s}`: the value is empty"));
    }
    Ok((k.to_string(), v.to_string()))
}

#[derive(Args)]
pub struct ExportArgs {
    /// pcap or pcapng files (gzip-compressed ones too); each is one directory
    /// (`capture=FILE NAME/`) holding its tables, committed at once.
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// The dataset's directory (created; a capture exported again replaces its partition).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// A Hive partition above `capture=`, e.g. `--partition day=2026-11-22
    /// --partition map=dust --partition build=1.4.2` (repeatable; the engines read them
    /// as columns).
    #[arg(long = "partition", value_parser = partition_key)]
    pub partition: Vec<(String, String)>,
    /// UDP payload budget in bytes (default: the definition's, else 1200).
    #[arg(long, value_parser = clap::value_parser!(u32).range(20..=65535))]
    pub mtu: Option<u32>,
    /// Link MTU for "IP datagram over the link MTU".
    #[arg(long = "link-mtu", default_value_t = 1500, value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub link_mtu: u32,
    /// Also write the table `field_bits`: where the bits go, field by field (as
    /// `analyze --bits`; on one core).
    #[arg(long)]
    pub bits: bool,
    /// Threads (1 to 64; default: one per core): the engine reads in order on one, the
    /// rows are built on the others — the dataset holds the same rows either way.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: Option<u32>,
}

#[derive(Args)]
pub struct DissectArgs {
    /// A pcap or pcapng file (gzip-compressed too); `-` or a FIFO is read once.
    #[arg(required_unless_present = "read", conflicts_with = "read")]
    pub capture: Option<PathBuf>,
    /// The capture, as tshark's `-r FILE` (instead of naming it alone).
    #[arg(short = 'r', long = "read-file", value_name = "FILE")]
    pub read: Option<PathBuf>,
    /// How times are shown, as tshark's -t: r since the first packet, d since the
    /// previous packet captured, dd since the previous one shown, e seconds since the
    /// epoch (the default), a/ad/adoy local time (with the date, with the day of the
    /// year), u/ud/udoy UTC.
    #[arg(short = 't', long = "time-format", value_name = "FORMAT", value_parser = time_format)]
    pub time_format: Option<gpcap::sinks::printer::TimeFormat>,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Only this frame (1-based, as tshark numbers them).
    #[arg(long, value_parser = frame_number)]
    pub frame: Option<u64>,
    /// Stop after this many packets shown (as tcpdump's and tshark's `-c`); the rest of
    /// the capture is not read (but for a filter on `rtt` or `never_acked`, which reads
    /// it all first to settle the acks).
    #[arg(short = 'c', long = "count", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// One compact JSON object per packet, in an array (fields in docs/json.md).
    #[arg(long, conflicts_with_all = ["brief", "jsonl"])]
    pub json: bool,
    /// JSON Lines: one compact object per packet and line, streamable (same objects as --json).
    #[arg(long, conflicts_with = "brief")]
    pub jsonl: bool,
    /// One line per packet: frame, time, flow, type, sequence, size, status.
    #[arg(long)]
    pub brief: bool,
    /// Show only packets matching this display filter (as in the TUI's `/`; tshark's
    /// `-Y`): built-in fields and flags, Wireshark's header fields, and any dissected
    /// field by its path (README, Display filters).
    #[arg(long, short = 'Y')]
    pub filter: Option<String>,
    /// Also write the frames of the packets shown to this pcapng file (a reassembled
    /// packet brings all its fragments).
    #[arg(long, short = 'w')]
    pub write: Option<PathBuf>,
    /// Threads (1 to 64; default: one per core): the engine reads in order on one, the
    /// packets are formatted on the others — the output is the same either way.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: Option<u32>,
}

impl DissectArgs {
    /// The capture, named alone or with `-r` (clap holds that one of them is given).
    pub fn file(&self) -> &PathBuf {
        static NONE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        self.capture
            .as_ref()
            .or(self.read.as_ref())
            .unwrap_or_else(|| NONE.get_or_init(PathBuf::new))
    }

    /// `-r FILE` becomes the capture named alone, so that `-` or a FIFO is read once too.
    pub fn take_read(&mut self) -> Option<&mut PathBuf> {
        if self.capture.is_none() {
            self.capture = self.read.take();
        }
        self.capture.as_mut()
    }
}

fn time_format(s: &str) -> Result<gpcap::sinks::printer::TimeFormat, String> {
    gpcap::sinks::printer::TimeFormat::parse(s).ok_or_else(|| {
        format!("`{s}` is not a time format: r, d, dd, e, a, ad, adoy, u, ud, udoy (as tshark's -t)")
    })
}

#[derive(Args)]
pub struct TuiArgs {
    /// A pcap or pcapng file (gzip-compressed too), or `-` / a FIFO: a stream followed
    /// as it grows (`tcpdump -U -w - | gpcap tui -`).
    pub capture: PathBuf,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Start with this display filter (as typed after `/`).
    #[arg(long)]
    pub filter: Option<String>,
}

#[derive(Args)]
pub struct LiveArgs {
    /// Interface (see --list), `-` or a FIFO carrying a pcap/pcapng stream (e.g.
    /// `tcpdump -U -w -`), or ssh://[user@]host[:port]/iface.
    pub iface: Option<String>,
    /// List the interfaces and exit.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// A libpcap capture filter, e.g. "udp port 40000" (the `libpcap` build, or the
    /// remote tcpdump over ssh); without it the kernel keeps UDP on the protocol's ports,
    /// IP fragments and ICMP too-big.
    #[arg(long)]
    pub filter: Option<String>,
    /// The ssh command for ssh:// captures, split at spaces (the destination and the
    /// remote command are appended).
    #[arg(long = "ssh-command", default_value = "ssh -o BatchMode=yes")]
    pub ssh_command: String,
    /// The tcpdump command on the remote host, e.g. "sudo -n tcpdump".
    #[arg(long = "remote-tcpdump", default_value = "tcpdump")]
    pub remote_tcpdump: String,
    /// A display filter the TUI starts with (`tui -` passes its own).
    #[arg(skip)]
    pub display_filter: Option<String>,
    /// Also write every captured frame to this pcapng file.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// Bytes kept of each frame (64 to 262144).
    #[arg(long, default_value_t = 65535, value_parser = clap::value_parser!(i32).range(64..=262144))]
    pub snaplen: i32,
    /// Report tables with every column, as wide as they are (default on a terminal: its
    /// width).
    #[arg(long)]
    pub wide: bool,
    /// Print reports instead of opening the terminal UI.
    #[arg(long = "no-tui")]
    pub no_tui: bool,
    /// With --no-tui: reports as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many seconds (else Ctrl-C, or q in the UI; 0.001 to 1000000).
    #[arg(long, value_parser = replay_duration)]
    pub duration: Option<f64>,
    /// With --no-tui: seconds between reports (0.01 to 86400).
    #[arg(long, default_value_t = 5.0, value_parser = report_interval)]
    pub interval: f64,
    /// Link MTU for "IP datagram over the link MTU".
    #[arg(long = "link-mtu", default_value_t = 1500, value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub link_mtu: u32,
    /// UDP payload budget in bytes (default: the definition's, else 1200).
    #[arg(long, value_parser = clap::value_parser!(u32).range(20..=65535))]
    pub mtu: Option<u32>,
}

#[derive(Args)]
pub struct SendArgs {
    /// The definition whose packets to send.
    #[arg(short = 'd', long = "dissector")]
    pub dissector: PathBuf,
    /// Destination, e.g. 127.0.0.1:40000.
    #[arg(long)]
    pub to: std::net::SocketAddr,
    /// Local address to send from (default: any port).
    #[arg(long)]
    pub from: Option<std::net::SocketAddr>,
    /// Game packets to send.
    #[arg(long, default_value_t = 100)]
    pub packets: u64,
    /// Packets per second: 0 (as fast as possible) or 0.001 to 1000000.
    #[arg(long, default_value_t = 60.0, value_parser = send_rate)]
    pub rate: f64,
    /// Seed of the generator: the same seed writes the same traffic.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Chance that a packet is large.
    #[arg(long, default_value_t = 0.2, value_parser = probability)]
    pub big: f64,
    /// Send packets over the MTU budget whole (the kernel may IP-fragment them).
    #[arg(long = "no-fragment")]
    pub no_fragment: bool,
}

#[derive(Args)]
pub struct WiresharkArgs {
    /// Definitions, outermost first (`-d netcode.kdl -d reliable.kdl -d game.kdl`); one
    /// a `dissect-as` names is also read from `NAME.kdl` beside the first.
    #[arg(short = 'd', long = "dissector", required = true)]
    pub dissector: Vec<PathBuf>,
    /// The Lua file to write (`-` for stdout).
    #[arg(short = 'o', long = "output", required = true)]
    pub output: PathBuf,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// pcap or pcapng files, replayed one after the other.
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Destination of every datagram, e.g. 127.0.0.1:40000 (with `--iface`: default
    /// each datagram's captured destination).
    #[arg(long, required_unless_present = "iface")]
    pub to: Option<std::net::SocketAddr>,
    /// Local address to send from (default: any port; with `--iface`: each datagram's
    /// captured source).
    #[arg(long)]
    pub from: Option<std::net::SocketAddr>,
    /// Send Ethernet frames on this interface through a packet socket (Linux, root or
    /// CAP_NET_RAW) instead of a UDP socket: no local IP stack on the way, datagrams over
    /// the interface's MTU IP-fragmented. Feeds a capture on the other end of a veth pair
    /// as a mirror port would, at several times a UDP socket's rate.
    #[arg(long)]
    pub iface: Option<String>,
    /// Replay speed: 1 as captured, 10 ten times as fast, 0 as fast as the socket takes
    /// them (0 to 1000).
    #[arg(long, default_value_t = 1.0, value_parser = speed)]
    pub speed: f64,
    /// Replay the captures this many times (1 to 1000000).
    #[arg(long = "loop", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub repeat: u32,
    /// Stop after this many seconds of sending, wherever the replay is (0.001 to 1e6).
    #[arg(long, value_parser = replay_duration)]
    pub duration: Option<f64>,
}

fn replay_duration(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if !(0.001..=1e6).contains(&v) {
        return Err(format!("{v} is outside 0.001 to 1000000"));
    }
    Ok(v)
}

/// A finite number within `lo..=hi`, refused with the range named.
fn within(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number ({lo} to {hi})"))?;
    if !(lo..=hi).contains(&v) {
        return Err(format!("`{s}` is outside {lo} to {hi}"));
    }
    Ok(v)
}

/// Seconds between live reports: a tenth of a millisecond would spin, a day is plenty.
fn report_interval(s: &str) -> Result<f64, String> {
    within(s, 0.01, 86_400.0)
}

/// `send --rate`: 0 is as fast as possible; below a thousandth of a hertz the interval
/// no longer fits a `Duration`.
fn send_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => within(s, 0.001, 1e6).map_err(|e| format!("{e} (or 0: as fast as possible)")),
    }
}

/// `gen --rate`: above a megahertz the simulator's nanosecond intervals round to nothing.
fn gen_rate(s: &str) -> Result<f64, String> {
    within(s, 0.1, 1e6)
}

/// `gen --jitter` in milliseconds: a minute of extra delay at most.
fn jitter(s: &str) -> Result<f64, String> {
    within(s, 0.0, 60_000.0)
}

fn foreign(s: &str) -> Result<f64, String> {
    within(s, 0.0, 100.0)
}

/// ENTER,EXIT,LOSS: three probabilities.
fn burst(s: &str) -> Result<[f64; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    let [enter, exit, loss] = parts[..] else {
        return Err(format!(
            "`{s}` is not ENTER,EXIT,LOSS (three probabilities, e.g. 0.01,0.3,0.8)"
        ));
    };
    let p = |x: &str, what: &str| {
        within(x, 0.0, 1.0).map_err(|_| format!("{what} `{x}` is not a probability (0 to 1) in `{s}`"))
    };
    Ok([p(enter, "ENTER")?, p(exit, "EXIT")?, p(loss, "LOSS")?])
}

fn speed(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if !(0.0..=1000.0).contains(&v) {
        return Err(format!("{v} is outside 0 to 1000"));
    }
    Ok(v)
}

#[derive(Args)]
pub struct GenArgs {
    /// The definition whose packets to write.
    #[arg(short = 'd', long = "dissector")]
    pub dissector: PathBuf,
    /// Output capture: .pcap or .pcapng (OUT.truth.jsonl is written beside it).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Seed of the generator: the same seed writes the same traffic.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seconds of traffic (0.001 to 1000000).
    #[arg(long, default_value_t = 10.0, value_parser = replay_duration)]
    pub duration: f64,
    /// Stop after this many game packets (all flows).
    #[arg(long)]
    pub packets: Option<u64>,
    /// Server send rate in Hz, 0.1 to 1000000 (clients send at half of it).
    #[arg(long, default_value_t = 60.0, value_parser = gen_rate)]
    pub rate: f64,
    /// Game clients, each with a flow to the server and one back (1 to 10000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub clients: u32,
    /// Independent loss probability per IP packet.
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub loss: f64,
    /// Gilbert–Elliott burst loss: ENTER,EXIT,LOSS probabilities (e.g. 0.01,0.3,0.8).
    #[arg(long, value_parser = burst)]
    pub burst: Option<[f64; 3]>,
    /// Chance that a datagram is delivered twice.
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub dup: f64,
    /// Chance that a datagram is delayed behind later ones.
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub reorder: f64,
    /// Uniform extra delay up to this many milliseconds (0 to 60000).
    #[arg(long, default_value_t = 0.0, value_parser = jitter)]
    pub jitter: f64,
    /// Probability of one flipped bit per datagram.
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub corrupt: f64,
    /// Link MTU: IP datagrams over it are split into IP fragments (or dropped with --df).
    #[arg(long = "link-mtu", default_value_t = 1500, value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub link_mtu: u32,
    /// Send with don't-fragment: datagrams over the link MTU are dropped and answered by
    /// ICMP (else they are IP-fragmented).
    #[arg(long)]
    pub df: bool,
    /// The sender ignores the MTU budget: no game-level fragmentation.
    #[arg(long = "no-fragment")]
    pub no_fragment: bool,
    /// Foreign datagrams (DNS-like, another protocol id) per game datagram (0 to 100).
    #[arg(long, default_value_t = 0.0, value_parser = foreign)]
    pub foreign: f64,
    /// Send over IPv6 instead of IPv4.
    #[arg(long)]
    pub ipv6: bool,
    /// 802.1Q VLAN id, 0 to 4094 (Ethernet only).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=4094))]
    pub vlan: Option<u16>,
    /// Link layer of the capture: Ethernet, Linux cooked v2, or raw IP.
    #[arg(long, default_value = "ethernet", value_parser = ["ethernet", "sll2", "raw"])]
    pub linktype: String,
    /// Chance that a packet is large (many array elements).
    #[arg(long, default_value_t = 0.05, value_parser = probability)]
    pub big: f64,
    /// Add an attacker that breaks each rule of fragment reassembly (ids and counts out of
    /// range, changed counts, oversize and short fragments, duplicates, stale ones).
    #[arg(long)]
    pub attacks: bool,
    /// Chance that a whole packet is sent cut short inside its end check (valid CRC).
    #[arg(long, default_value_t = 0.0, value_parser = probability)]
    pub malformed: f64,
    /// Seal every packet as the definition's `encryption` says (netcode.io), with keys
    /// drawn from the seed: in the truth, and as a key log in OUT.keylog.
    #[arg(long)]
    pub encrypt: bool,
    /// Analyze the written capture and compare every number with the ground truth.
    #[arg(long)]
    pub check: bool,
    /// Write only the truth's summary line, not a line per datagram (large captures).
    #[arg(long = "summary-only")]
    pub summary_only: bool,
    #[command(flatten)]
    pub points: super::gen_points::PointsArgs,
}

fn parse_protocol_id(s: &str) -> Result<ProtocolId, String> {
    ProtocolId::parse(s).ok_or_else(|| format!("`{s}` is not a protocol id (try 0x55667788)"))
}

/// A probability: a finite number from 0 to 1.
fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a probability (a number from 0 to 1)")),
    }
}

/// A frame number: 1 or more, as tshark numbers frames.
fn frame_number(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a frame number (frames are numbered from 1)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument and flag of every command says what it is in `--help`.
    #[test]
    fn every_argument_is_described() {
        let cli = super::Cli::command();
        let mut missing = Vec::new();
        for cmd in cli.get_subcommands() {
            for arg in cmd.get_arguments() {
                if arg.get_help().is_none() && !["help", "version"].contains(&arg.get_id().as_str()) {
                    missing.push(format!("{} {}", cmd.get_name(), arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "undocumented: {missing:?}");
    }
}
