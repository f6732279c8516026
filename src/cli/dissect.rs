//! `gpcap dissect CAPTURE`: every game datagram and reassembled packet, field by field.

use super::Result;
use super::args::DissectArgs;
use super::resolve;
use crate::cli::Error;
use gpcap::Filter;
use gpcap::run::{run_files, sample_files};
use gpcap::sinks::ordered::DissectPrinter;
use gpcap::sinks::printer::Format;
use gpcap::sinks::select::{Select, check_writable, write_frames};
use std::process::ExitCode;

pub fn run(a: &DissectArgs) -> Result<ExitCode> {
    let capture = a.file();
    let captures = std::slice::from_ref(capture);
    let resolved = resolve(&a.protocol.choice()?, |i| sample_files(captures, i))?;
    if resolved.cfg.program.is_none() {
        if let Some(note) = gpcap::present::notes::identified(&resolved) {
            eprintln!("gpcap: {note}");
        }
        eprintln!(
            "gpcap: no definition (-d): headers are read with the reference layout, bodies are not dissected"
        );
    }
    if let Some(to) = &a.write {
        refuse_output(capture, to)?;
        check_writable(to).map_err(|e| Error::Usage(e.to_string()))?;
    }
    let cfg = resolved.cfg;
    // With keys, trees are read with the decrypted view (it names every field of both).
    let shown = gpcap::layers::shown_program(&cfg);
    let mut filter = match &a.filter {
        Some(text) => crate::cli::display_filter(text, &cfg)?,
        None => Filter::all(),
    };
    let out = Box::new(std::io::BufWriter::with_capacity(1 << 16, raw_stdout()));
    let format = if a.jsonl {
        Format::JsonLines
    } else if a.json {
        Format::Json
    } else if a.brief {
        Format::Brief
    } else {
        Format::Tree
    };
    // --brief and --json say the ack verdict of each acked sequence: a datagram's own
    // and each message's in an acked stream.
    let verdicts = format != Format::Tree && (shown.as_ref()).is_some_and(|p| p.acks_sequences());
    if filter.needs_acks() || verdicts {
        // Retransmissions, NAKs, round trips and `never_acked` are settled by later
        // packets: a pass of their own first.
        let facts = gpcap::run::scans::ack_facts(captures, cfg.clone())?;
        filter.set_acks(std::sync::Arc::new(facts));
    }
    let mut select = a.write.as_ref().map(|_| {
        let mut s = Select::new(filter.clone());
        s.keep_rows = false;
        s.game_only = true;
        s.limit = a.count;
        s.only = a.frame;
        s
    });
    let threads = gpcap::run_threads(captures, a.threads);
    let mut printer = DissectPrinter::new(out, shown, filter, format, a.frame, threads)
        .limit(a.count)
        .times(a.time_format.unwrap_or_default());
    // The printer says what the engine must record and when output can no longer go on.
    let outcomes = run_files(
        captures,
        cfg,
        &mut (&mut printer, select.as_mut()),
        &mut |_, _| {},
    )?;
    let cut_short = crate::cli::say_ends(outcomes.iter().map(|o| &o.end));
    let written = match (&a.write, &select) {
        (Some(to), Some(select)) => Some((write_frames(capture, &select.frames, to), select.selected, to)),
        _ => None,
    };
    let printed = printer.printed();
    // The output is finished (flushed, a JSON array closed) whether or not the file was.
    let ended = printer.end().map_err(gpcap::Error::from);
    if let Some((result, selected, to)) = written {
        let n = result.map_err(|e| Error::Usage(e.to_string()))?;
        eprintln!(
            "gpcap: wrote {} of {} to {}",
            gpcap::present::count(n, "frame"),
            gpcap::present::count(selected, "packet"),
            to.display()
        );
    }
    match ended {
        Err(gpcap::Error::Output(source)) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
        Ok(()) => {}
    }
    if let Some(n) = a.frame
        && printed == 0
    {
        let frames: u64 = outcomes.iter().map(|o| o.frames).sum();
        return Err(Error::Usage(if n > frames {
            format!(
                "--frame {n}: {} has {}",
                capture.display(),
                gpcap::present::count(frames, "frame")
            )
        } else {
            format!("--frame {n}: frame {n} carries no game datagram (or the filter excludes it)")
        }));
    }
    Ok(if cut_short {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// Standard output without its line buffer, which scans every byte written for a newline:
/// the printer's own buffer hands it large blocks.
fn raw_stdout() -> Box<dyn std::io::Write + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() {
            return Box::new(std::fs::File::from(fd));
        }
    }
    Box::new(std::io::stdout())
}

/// `--write` onto the capture being read would replace it with the selection (the same
/// file, by device and inode: through a link too); a `.gz` name would hold a pcapng that
/// is not compressed.
fn refuse_output(capture: &std::path::Path, to: &std::path::Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(capture), std::fs::metadata(to))
            && (a.dev(), a.ino()) == (b.dev(), b.ino())
        {
            return Err(Error::Usage(format!(
                "--write {}: it is the capture being read; write the selection to another file",
                to.display()
            )));
        }
    }
    if to.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")) {
        return Err(Error::Usage(format!(
            "--write {}: the selection is written as pcapng, not compressed; name it .pcapng",
            to.display()
        )));
    }
    Ok(())
}
