//! `gpcap diff A B --tui`: the two timelines in the terminal.

use super::Result;

pub fn run(_r: &gpcap::sinks::diff::DiffReport) -> Result<()> {
    Err(super::Error::Usage("--tui is not ready".into()))
}
