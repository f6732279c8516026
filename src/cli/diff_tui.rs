//! `gpcap diff A B --tui`: the diff view's event loop.

use super::Result;
use crate::cli::Error;
use gpcap_tui::diff::{DiffView, draw};
use std::io::IsTerminal;

pub fn run(report: &gpcap::sinks::diff::DiffReport) -> Result<()> {
    use ratatui::crossterm::event::{self, Event, KeyEventKind};
    if !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "--tui needs a terminal (stdout is not one); drop --tui for the report as text, or --json".into(),
        ));
    }
    let mut view = DiffView::new(report.clone());
    let mut terminal = ratatui::init();
    let result = (|| -> std::io::Result<()> {
        while !view.quit {
            terminal.draw(|f| draw(f, &mut view))?;
            if event::poll(std::time::Duration::from_millis(200))?
                && let Event::Key(k) = event::read()?
                && k.kind != KeyEventKind::Release
            {
                view.key(k);
            }
        }
        Ok(())
    })();
    ratatui::restore();
    result.map_err(|e| Error::io("terminal", e))
}
