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
                gpcap::present::count(
                    p.packets.len() as u64,
                    if p.messages.is_some() {
                        "message type"
                    } else {
                        "packet type"
                    }
                ),
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
