//! `gpcap identify CAPTURE...`: protocol ids and the game's flows from the traffic alone.

use super::{Result, json_or_text};
use gpcap::identify::Identifier;
use gpcap::present;
use gpcap::run::sample_files;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(captures: &[PathBuf], json: bool) -> Result<ExitCode> {
    let mut ident = Identifier::default();
    sample_files(captures, &mut ident)?;
    let id = ident.finish();
    json_or_text(json, &id, || present::tables::render_identification(&id))?;
    Ok(if id.candidates.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
