//! `gpcap check DEF`: compile a definition and say what is wrong, where.

use super::Result;
use crate::outln;
use gpcap::dissect;
use std::path::Path;
use std::process::ExitCode;

pub fn run(path: &Path) -> Result<ExitCode> {
    // A file that cannot be read is an input error (2), not a definition error (1).
    // Read once: a pipe or FIFO has nothing left for a second read.
    let text = dissect::source::read(path).map_err(|e| crate::cli::Error::io(path.display(), e))?;
    match dissect::compile(&path.display().to_string(), &text) {
        Ok(p) => {
            outln!(
                "{}: ok — protocol {:?}, {} defined, {}",
                path.display(),
                p.params.name,
                defined(&p),
                dissect::describe(&p)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprint!("{}", dissect::render(&e, super::color()));
            Ok(ExitCode::from(1))
        }
    }
}

/// "3 packet types", "12 message types", or with datagram kinds both.
fn defined(p: &gpcap::dissect::Program) -> String {
    let messages = p.packets.iter().filter(|d| d.message).count() as u64;
    let packets = p.packets.len() as u64 - messages;
    let count = gpcap::present::count;
    match (packets, p.messages.is_some()) {
        (0, true) => count(messages, "message type"),
        (_, true) if messages == 0 => format!("{} with messages", count(packets, "packet type")),
        (_, true) => format!(
            "{} and {}",
            count(packets, "packet type"),
            count(messages, "message type")
        ),
        _ => count(packets, "packet type"),
    }
}
