//! Captures given as `-` (stdin) or a FIFO: read once, to the end, into a temporary
//! file that the command then reads as any capture — identification samples it, the
//! sharded reader and the TUI seek in it — while errors and reports name it as the user
//! did. (`tui -` and `live -` follow the stream instead: see `live`.)

use super::Result;
use super::args::Command;
use crate::cli::Error;
use std::path::{Path, PathBuf};

/// The temporary files, removed when the command ends.
#[derive(Default)]
pub struct Spooled(Vec<PathBuf>);

impl Drop for Spooled {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A stream rather than a file: `-`, or a FIFO.
pub fn is_stream(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    path.as_os_str() == "-" || std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// Reads every stream among the command's captures into a temporary file, in place.
pub fn spool(command: &mut Command) -> Result<Spooled> {
    let captures: Vec<&mut PathBuf> = match command {
        Command::Analyze(a) => a.captures.iter_mut().collect(),
        Command::Export(a) => a.captures.iter_mut().collect(),
        Command::Replay(a) => a.captures.iter_mut().collect(),
        Command::Identify { captures, .. } => captures.iter_mut().collect(),
        Command::Dissect(a) => a.take_read().into_iter().collect(),
        _ => Vec::new(),
    };
    let mut spooled = Spooled::default();
    let mut stdin_used = false;
    for path in captures {
        if !is_stream(path) {
            continue;
        }
        let name = if path.as_os_str() == "-" {
            if std::mem::replace(&mut stdin_used, true) {
                return Err(Error::Usage(
                    "`-` (stdin) can be given once: it is read once".into(),
                ));
            }
            "-".to_string()
        } else {
            path.display().to_string()
        };
        let to =
            std::env::temp_dir().join(format!("gpcap-stream-{}-{}", std::process::id(), spooled.0.len()));
        let mut out = std::fs::File::create(&to).map_err(|e| Error::io(to.display(), e))?;
        spooled.0.push(to.clone());
        let copied = if name == "-" {
            std::io::copy(&mut std::io::stdin().lock(), &mut out)
        } else {
            std::fs::File::open(&*path).and_then(|mut f| std::io::copy(&mut f, &mut out))
        };
        copied.map_err(|e| Error::io(&name, e))?;
        gpcap::capture::show_as(&to, &name);
        *path = to;
    }
    Ok(spooled)
}
