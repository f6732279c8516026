//! The commands, one a file, each a short function over the library, and what they
//! share: writing to stdout, loading a definition, the protocol choice, progress bars.

pub mod analyze;
pub mod args;
pub mod check;
pub mod diff;
pub mod diff_tui;
pub mod dissect;
mod error;
pub mod export;
pub mod gen_cmd;
pub mod gen_points;
pub mod identify;
pub mod input;
pub mod keys;
pub mod live;
mod live_wait;
pub mod replay;
pub mod send;
pub mod tui;
pub mod wireshark;

use args::ProtocolArgs;
pub use error::Error;
use gpcap::dissect::Program;
use gpcap::resolve::Choice;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

pub type Result<T> = std::result::Result<T, Error>;

/// The protocol resolved ([`gpcap::resolve::resolve`]), said once on stderr when the
/// connection requests' protocol id was taken in place of the definition's.
pub fn resolve(
    choice: &Choice,
    sample: impl FnOnce(&mut gpcap::identify::Identifier) -> std::result::Result<(), gpcap::CaptureError>,
) -> std::result::Result<gpcap::resolve::Resolved, gpcap::Error> {
    let r = gpcap::resolve::resolve(choice, sample)?;
    if let Some(t) = r.cfg.protocol_id_taken {
        eprintln!(
            "gpcap: the connection requests carry protocol id {}, not the definition's {}: read with theirs (--protocol-id sets another)",
            t.requests, t.definition
        );
    }
    Ok(r)
}

/// Writes to stdout; a closed pipe (`gpcap analyze … | head`) ends the program quietly
/// instead of panicking as `print!` would.
pub fn write_stdout(args: std::fmt::Arguments) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|_| o.flush()) {
        stdout_failed(e);
    }
}

/// Ends the program after stdout failed: quietly for a closed pipe, else saying why.
fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("gpcap: cannot write to stdout: {e}");
    std::process::exit(2);
}

#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::write_stdout(format_args!($($t)*)) };
}

#[macro_export]
macro_rules! outln {
    () => { $crate::cli::write_stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::write_stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// Every thread allocates from one glibc arena. With an arena per thread, what a
/// sharded analysis freed stayed with its threads' arenas (`malloc_trim` cannot return
/// an arena's top) while the capture was analyzed again on one core: a flood with every
/// budget full peaked at 212 MB on two threads, 172 MB with one arena (release; 146 MB on
/// one thread); mimalloc and jemalloc, preloaded under the same binary, peaked at 203
/// and 275 MB. `dissect --threads 4` and `export` took the same time within the noise:
/// nothing hot allocates per packet, and glibc's per-thread cache serves small
/// allocations without the arena's lock.
pub fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator, before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// A `--filter` as dissect and the TUI read it: the shown program's fields, and the
/// inner layers' prefixed by their names (`reliable.sequence > 10`).
pub fn display_filter(text: &str, cfg: &gpcap::Config) -> Result<gpcap::Filter> {
    let shown = gpcap::layers::shown_program(cfg);
    let layers = cfg.stack.as_ref().map(|s| s.layers.clone()).unwrap_or_default();
    gpcap::Filter::parse_stacked(text, shown.as_ref(), &layers).map_err(|error| {
        gpcap::Error::Filter {
            option: "--filter",
            error,
        }
        .into()
    })
}

/// Says how each capture that stopped short ended (a corrupt record, a file cut inside
/// one), and whether any did: the command then exits 2 after showing what was read.
pub fn say_ends<'a>(ends: impl IntoIterator<Item = &'a gpcap::FileEnd>) -> bool {
    let mut short = false;
    for end in ends {
        if let Some(e) = &end.error {
            eprintln!("gpcap: {e}");
        }
        if let Some(t) = &end.truncated_tail {
            eprintln!("gpcap: {t}");
        }
        short |= end.error.is_some() || end.truncated_tail.is_some();
    }
    short
}

/// Colours for diagnostics on a terminal, unless NO_COLOR says otherwise.
pub fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

pub fn load_program(path: &Path) -> Result<Arc<Program>> {
    let p = gpcap::load_definition(path)?;
    if let Some(why) = p.native.refused() {
        // Once per definition, though a command may load it twice.
        static SAID: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
        if let Ok(mut said) = SAID.lock()
            && !said.iter().any(|s| s == path)
        {
            said.push(path.to_path_buf());
            eprintln!("gpcap: {}: {why}", path.display());
        }
    }
    Ok(p)
}

/// Whether definitions are compiled to machine code: not with `--no-jit`, nor with
/// `GPCAP_NO_JIT` set to anything but empty or `0`.
pub fn compiled_code(no_jit: bool) {
    let env = std::env::var_os("GPCAP_NO_JIT").is_some_and(|v| !v.is_empty() && v != "0");
    gpcap::dissect::native::set_enabled(!(no_jit || env));
}

impl ProtocolArgs {
    /// What these flags say about the protocol.
    pub fn choice(&self) -> Result<Choice> {
        // Each definition is read once: a pipe has nothing left for a second read.
        let program = self.dissector.first().map(|d| load_program(d)).transpose()?;
        Ok(Choice {
            stack: keys::stack(self, program.clone())?,
            program,
            protocol_id: self.protocol_id,
            ports: self.port.clone(),
            any_port: self.any_port,
            reassembly_budget: Some((self.reassembly_mb as usize) << 20),
            ..Choice::default()
        })
    }
}

/// A progress bar on stderr for long inputs, when stderr is a terminal.
pub fn progress_bar(len: u64, message: &str) -> Option<indicatif::ProgressBar> {
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

/// Prints `value` as pretty JSON, or the text `render` makes of it.
/// `--wide`: tables as wide as they are, whatever the terminal.
static WIDE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets `--wide` for the command's tables.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, std::sync::atomic::Ordering::Relaxed);
}

/// The width text tables are fitted to: the terminal's when standard output is one, as
/// a terminal user reads them; none (every column, lines as long as they are) with
/// `--wide` or when the output goes to a file or a pipe, as tshark and tcpdump never
/// fold what a script or `less -S` reads.
pub fn table_width() -> Option<usize> {
    use std::io::IsTerminal;
    if WIDE.load(std::sync::atomic::Ordering::Relaxed) || !std::io::stdout().is_terminal() {
        return None;
    }
    ratatui::crossterm::terminal::size()
        .ok()
        .map(|(w, _)| w as usize)
        .filter(|&w| w > 0)
        .or(Some(80))
}

pub fn json_or_text<T: serde::Serialize>(
    json: bool,
    value: &T,
    render: impl FnOnce() -> String,
) -> Result<()> {
    if json {
        // Written as it is serialized: the text of 16,384 flows is 35 MB, which a string
        // held (and doubled while growing) at the run's peak.
        let mut o = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        match serde_json::to_writer_pretty(&mut o, value) {
            Err(e) if e.is_io() => stdout_failed(e.into()),
            Err(e) => return Err(Error::io("JSON", std::io::Error::other(e))),
            Ok(()) => {}
        }
        if let Err(e) = o.write_all(b"\n").and_then(|_| o.flush()) {
            stdout_failed(e);
        }
    } else {
        out!("{}", gpcap::present::tables::fitted(table_width(), render));
    }
    Ok(())
}
