//! A stream's capture header awaited with the screen up: a pipe from a command that has
//! not written yet (`sleep 5; tcpdump … | gpcap tui -`) shows what it waits for at once,
//! and `q` leaves, instead of a blank terminal deaf to keys.

use super::Result;
use gpcap::live::LiveCapture;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// How long the header may take before the waiting screen comes up (a file or a
/// running tcpdump sends it at once: no flicker).
const QUIET: Duration = Duration::from_millis(300);

/// Opens the stream on a thread of its own (the header's read blocks); for the screen
/// (`no_tui` false) a screen says what it waits for after [`QUIET`]. None: the user quit.
pub fn until_header(
    no_tui: bool,
    source: &str,
    opening: impl FnOnce() -> Result<LiveCapture> + Send + 'static,
) -> Result<Option<LiveCapture>> {
    if no_tui {
        return opening().map(Some);
    }
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(opening());
    });
    match rx.recv_timeout(QUIET) {
        Ok(r) => r.map(Some),
        Err(_) => waiting_screen(source, &rx),
    }
}

/// The waiting screen until the header comes (the screen the capture opens next takes
/// over) or the user quits (`q`, Esc, Ctrl-C): the reading thread is left to the exit.
fn waiting_screen(source: &str, rx: &Receiver<Result<LiveCapture>>) -> Result<Option<LiveCapture>> {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    let text = format!(
        "Waiting for the capture header (pcap or pcapng) on {} — nothing has come yet. q quits.",
        if source == "-" { "stdin" } else { source }
    );
    let mut terminal = ratatui::init();
    let result = loop {
        if let Ok(r) = rx.try_recv() {
            break r.map(Some);
        }
        let drawn = terminal.draw(|f| {
            let p =
                ratatui::widgets::Paragraph::new(text.as_str()).wrap(ratatui::widgets::Wrap { trim: true });
            f.render_widget(p, f.area());
        });
        if let Err(e) = drawn {
            break Err(super::Error::io("the terminal", e));
        }
        match event::poll(Duration::from_millis(100)) {
            Ok(true) => {
                if let Ok(Event::Key(k)) = event::read()
                    && k.kind == KeyEventKind::Press
                    && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                        || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
                {
                    break Ok(None);
                }
            }
            Ok(false) => {}
            Err(e) => break Err(super::Error::io("the terminal", e)),
        }
    };
    ratatui::restore();
    result
}
