//! The `gpcap` command line: parses arguments and dispatches to a command (src/cli/).

mod cli;

use clap::Parser;
use cli::args::{Cli, Command};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    cli::one_malloc_arena();
    let mut cli = Cli::parse();
    cli::compiled_code(cli.no_jit);
    // `-` and FIFOs are read once, here, for the commands that read captures whole.
    let spooled = cli::input::spool(&mut cli.command);
    let result = spooled.and_then(|_spooled| match &cli.command {
        Command::Analyze(a) => cli::analyze::run(a),
        Command::Dissect(a) => cli::dissect::run(a),
        Command::Check { dissector } => cli::check::run(dissector),
        Command::Export(a) => cli::export::run(a),
        Command::Identify { captures, json, wide } => {
            cli::set_wide(*wide);
            cli::identify::run(captures, *json)
        }
        Command::Gen(a) => cli::gen_cmd::run(a),
        Command::Live(a) => cli::live::run(a),
        Command::Send(a) => cli::send::run(a),
        Command::Replay(a) => cli::replay::run(a),
        Command::Tui(a) => cli::tui::run(a),
        Command::Diff(a) => cli::diff::run(a),
        Command::Wireshark(a) => cli::wireshark::run(a),
    });
    match result {
        Ok(code) => code,
        Err(cli::Error::Lib(gpcap::Error::Definition(errors))) => {
            // Located diagnostics, in colour on a terminal.
            let text = gpcap::dissect::render(&errors, cli::color());
            let _ = writeln!(std::io::stderr(), "gpcap: invalid definition\n{text}");
            ExitCode::from(2)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "gpcap: {e}");
            ExitCode::from(2)
        }
    }
}
