//! `gpcap tui CAPTURE`: the terminal UI over a capture, and its event loop.

use super::Result;
use super::args::TuiArgs;
use super::resolve;
use crate::cli::Error;
use gpcap::capture::CaptureReader;
use gpcap::run::sample_files;
use gpcap_tui::{App, Index, load};
use std::io::IsTerminal;
use std::process::ExitCode;

pub fn run(a: &TuiArgs) -> Result<ExitCode> {
    // `-` and FIFOs are followed as live traffic: the list grows as the stream does.
    if super::input::is_stream(&a.capture) {
        return super::live::run(&super::args::LiveArgs {
            wide: false,
            iface: Some(a.capture.display().to_string()),
            list: false,
            protocol: a.protocol.clone(),
            filter: None,
            ssh_command: String::new(),
            remote_tcpdump: String::new(),
            display_filter: a.filter.clone(),
            write: None,
            snaplen: 65535,
            no_tui: false,
            json: false,
            duration: None,
            interval: 5.0,
            link_mtu: 1500,
            mtu: None,
        });
    }
    // Fail before the screen changes if the file cannot be read at all, or the filter
    // given does not parse (refused as dissect refuses it).
    CaptureReader::open(&a.capture)?;
    let captures = std::slice::from_ref(&a.capture);
    // With keys and inner layers, the list and the tree are the run's (as dissect's).
    let cfg = resolve(&a.protocol.choice()?, |i| sample_files(captures, i))?.cfg;
    if let Some(text) = &a.filter {
        super::display_filter(text, &cfg)?;
    }
    if !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "tui needs a terminal (stdout is not one); use `gpcap analyze` or `gpcap dissect` for output to a file or pipe".into(),
        ));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let path = a.capture.clone();
    let loader_cfg = cfg.clone();
    std::thread::spawn(move || load(&path, loader_cfg, tx));
    let mut app = App::new(Index::new(&a.capture), rx, cfg);
    // Read again on `r`: only a file can be (a pipe or FIFO was read once).
    app.definition = a.protocol.dissector.first().filter(|p| p.is_file()).cloned();
    if let Some(f) = &a.filter {
        app.apply_filter(f);
    }
    event_loop(&mut app)
}

/// Draw, wait briefly for a key or the mouse, fold in what the loader sent.
pub fn event_loop(app: &mut App) -> Result<ExitCode> {
    use ratatui::crossterm::event::{
        self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event,
        KeyEventKind,
    };
    use ratatui::crossterm::execute;
    let mut terminal = ratatui::init();
    let result = (|| -> std::io::Result<()> {
        execute!(std::io::stdout(), EnableMouseCapture, EnableBracketedPaste)?;
        while !app.quit && app.quit_at.is_none_or(|t| std::time::Instant::now() < t) {
            app.tick();
            terminal.draw(|f| gpcap_tui::draw(f, app))?;
            if let Some(text) = app.clipboard.take() {
                copy_to_clipboard(&text)?;
            }
            if event::poll(std::time::Duration::from_millis(100))? {
                // Everything already waiting (a paste typed as keys, a burst of wheel
                // events) before the next draw, so the screen shows the last of it at once.
                let until = std::time::Instant::now() + std::time::Duration::from_millis(50);
                loop {
                    match event::read()? {
                        Event::Key(k) if k.kind != KeyEventKind::Release => app.key(k),
                        Event::Mouse(m) => app.mouse(m),
                        Event::Paste(text) => app.paste(&text),
                        _ => {}
                    }
                    if app.quit
                        || std::time::Instant::now() >= until
                        || !event::poll(std::time::Duration::ZERO)?
                    {
                        break;
                    }
                }
            }
        }
        Ok(())
    })();
    let _ = execute!(std::io::stdout(), DisableMouseCapture, DisableBracketedPaste);
    ratatui::restore();
    result.map_err(|e| Error::io("terminal", e))?;
    Ok(ExitCode::SUCCESS)
}

/// Puts `text` on the clipboard of the terminal (and of the machine it runs on, over
/// ssh too) with the OSC 52 escape, which terminals that allow it honour.
fn copy_to_clipboard(text: &str) -> std::io::Result<()> {
    use base64::Engine;
    use std::io::Write;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let mut out = std::io::stdout().lock();
    write!(out, "\x1b]52;c;{encoded}\x07")?;
    out.flush()
}
