//! A growing pcap/pcapng stream followed as live traffic (`tcpdump -U -w - | gpcap live
//! -`, a FIFO, a remote tcpdump over ssh): frames reach the analysis as they arrive,
//! the end of the stream ends the capture, and a stream that breaks off or was never a
//! capture ends it with a located error — every frame read before kept.

use super::{LiveError, LiveStats, Start};
use gpcap_wire::capture::CaptureReader;
use std::io::Read;
use std::sync::{Arc, Mutex};

/// How a stream's producer ended, asked once the stream is over: a failure in words
/// (ssh's message and status), after filling in what it knows of the counts.
pub type Ended = Box<dyn FnOnce(&mut LiveStats) -> Option<String> + Send>;

/// The stream's bytes; before each read, which may wait for the producer, the frames
/// already batched are handed over (a quiet stream's last datagram is not held back).
struct Flushing<R> {
    inner: R,
    feeder: Arc<Mutex<super::Feeder>>,
    stats: Arc<Mutex<LiveStats>>,
}

impl<R: Read> Read for Flushing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Ok(mut f) = self.feeder.lock() {
            f.flush();
            if let Ok(mut s) = self.stats.lock() {
                s.captured = f.captured;
            }
        }
        self.inner.read(buf)
    }
}

pub(super) fn run(name: &str, input: impl Read + Send + 'static, ended: Option<Ended>, s: Start) {
    let Start {
        mut feeder,
        ready,
        shared,
    } = s;
    feeder.blocking = true;
    let feeder = Arc::new(Mutex::new(feeder));
    let input = Flushing {
        inner: input,
        feeder: feeder.clone(),
        stats: shared.stats.clone(),
    };
    let finish = |ended: Option<Ended>, stats: &Arc<Mutex<LiveStats>>| -> Option<String> {
        let mut st = stats.lock().map(|s| *s).unwrap_or_default();
        let why = ended.and_then(|f| f(&mut st));
        if let Ok(mut s) = stats.lock() {
            *s = st;
        }
        why
    };
    let mut reader = match CaptureReader::from_read(name, input) {
        Ok(r) => r,
        Err(e) => {
            let message = finish(ended, &shared.stats).unwrap_or_else(|| e.to_string());
            let _ = ready.send(Err(LiveError::Other {
                iface: name.into(),
                message,
            }));
            return;
        }
    };
    let mut announced = reader.linktype_hint();
    if let Some(l) = announced {
        let _ = ready.send(Ok(l));
    }
    let mut broke: Option<String> = None;
    loop {
        if shared.stopping() {
            break;
        }
        match reader.next_frame() {
            Ok(Some(f)) => {
                if announced.is_none() {
                    announced = Some(f.linktype);
                    let _ = ready.send(Ok(f.linktype));
                }
                let Ok(mut fd) = feeder.lock() else { break };
                if !fd.push(f) {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                broke = Some(e.to_string());
                break;
            }
        }
    }
    if let Ok(mut f) = feeder.lock() {
        f.flush();
    }
    let tail = reader.truncated_tail.take().map(|t| t.to_string());
    let producer = finish(ended, &shared.stats);
    let why: Vec<String> = [producer, broke, tail].into_iter().flatten().collect();
    if announced.is_none() {
        let message = if why.is_empty() {
            format!("{name}: the stream ended before its first frame")
        } else {
            why.join("; ")
        };
        let _ = ready.send(Err(LiveError::Other {
            iface: name.into(),
            message,
        }));
        return;
    }
    if !why.is_empty() {
        shared.fail(why.join("; "));
    }
    if let (Ok(f), Ok(mut s)) = (feeder.lock(), shared.stats.lock()) {
        s.captured = f.captured;
    }
}
