//! A definition's text, read once and bounded whatever the file is: a regular file, a
//! pipe (`<(cat def)`, `/dev/stdin`), a FIFO, a device. Opened without waiting for a
//! writer and read with a deadline, so that a FIFO nobody writes to ends in an error,
//! not a hang, and `/dev/zero` stops at the size limit.

use std::io::{self, Read};
use std::path::Path;
use std::time::{Duration, Instant};

/// The largest definition read: far beyond any real protocol's, and small enough that
/// compiling it stays fast and small whatever it holds.
pub const MAX_DEFINITION_BYTES: u64 = 1 << 20;

/// How long a pipe or FIFO may take to deliver a whole definition.
pub const DEFINITION_WAIT: Duration = Duration::from_secs(30);

/// Reads at most [`MAX_DEFINITION_BYTES`] of `path` as UTF-8, once.
pub fn read(path: &Path) -> io::Result<String> {
    read_within(path, DEFINITION_WAIT)
}

/// [`read`] with the time a stream may take.
pub fn read_within(path: &Path, wait: Duration) -> io::Result<String> {
    let mut f = open(path)?;
    let bytes = if f.metadata()?.is_file() {
        let mut b = Vec::new();
        (&mut f).take(MAX_DEFINITION_BYTES + 1).read_to_end(&mut b)?;
        b
    } else {
        stream(&mut f, Instant::now() + wait, wait)?
    };
    if bytes.len() as u64 > MAX_DEFINITION_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} KiB", MAX_DEFINITION_BYTES >> 10),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte offset {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Opens without blocking for a FIFO's writer (reads then wait with a deadline).
fn open(path: &Path) -> io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    o.open(path)
}

/// A stream's bytes to its end, at most one past the limit, by `deadline`.
fn stream(f: &mut std::fs::File, deadline: Instant, wait: Duration) -> io::Result<Vec<u8>> {
    let mut b = Vec::new();
    let mut chunk = [0u8; 64 << 10];
    // A FIFO opened before its writer reads as ended: the end counts once a writer came.
    let mut written = false;
    loop {
        match f.read(&mut chunk) {
            Ok(0) if written || !is_fifo(f) => return Ok(b),
            Ok(0) => {}
            Ok(n) => {
                written = true;
                b.extend_from_slice(&chunk[..n]);
                if b.len() as u64 > MAX_DEFINITION_BYTES {
                    return Ok(b);
                }
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => written = true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no end after {} s ({} bytes read): a pipe or FIFO whose writer did not close it",
                    wait.as_secs_f64(),
                    b.len()
                ),
            ));
        }
        // A writer that came and went: what it wrote is read, then the end.
        written |= hung_up(f, left.min(Duration::from_millis(100)));
    }
}

#[cfg(unix)]
fn is_fifo(f: &std::fs::File) -> bool {
    use std::os::unix::fs::FileTypeExt;
    f.metadata().is_ok_and(|m| m.file_type().is_fifo())
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::File) -> bool {
    false
}

/// Waits until `f` has something to read, at most `wait`; whether its writer hung up.
#[cfg(unix)]
fn hung_up(f: &std::fs::File, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: f.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call's duration.
    let n = unsafe { libc::poll(&mut p, 1, wait.as_millis() as libc::c_int) };
    if n < 0 || p.revents & libc::POLLNVAL != 0 {
        std::thread::sleep(wait);
    }
    n > 0 && p.revents & libc::POLLHUP != 0
}

#[cfg(not(unix))]
fn hung_up(_: &std::fs::File, wait: Duration) -> bool {
    std::thread::sleep(wait);
    false
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A FIFO nobody writes to ends in an error at the deadline, not a hang.
    #[test]
    fn a_fifo_without_a_writer_times_out() {
        let p = std::env::temp_dir().join(format!("gpcap-def-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_within(&p, Duration::from_millis(300)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        let _ = std::fs::remove_file(&p);
    }

    /// An endless device stops at the limit.
    #[test]
    fn dev_zero_stops_at_the_limit() {
        let e = read_within(Path::new("/dev/zero"), Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("larger than 1024 KiB"), "{e}");
    }
}
