//! `gpcap identify CAPTURE...`: protocol ids and the game's flows from the traffic alone.

use super::{Result, json_or_text};
use gpcap::identify::Identifier;
use gpcap::present;
use gpcap::run::sample_ends;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(captures: &[PathBuf], json: bool) -> Result<ExitCode> {
    let mut ident = Identifier::default();
    let ends = sample_ends(captures, &mut ident)?;
    let id = ident.finish();
    json_or_text(json, &id, || present::tables::render_identification(&id))?;
    // A capture that could not be read as far as the sample went: said, and exit 2 (its
    // traffic may be what was not found).
    Ok(if super::say_ends(&ends) {
        ExitCode::from(2)
    } else if id.candidates.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
