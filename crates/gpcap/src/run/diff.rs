//! The run of `gpcap diff`: two captures of one session, each read once through an
//! engine of its own on a thread of its own into a sighting sink, while the matcher on
//! the caller's thread takes their datagrams in the order of the aligned clocks. The
//! channels between them hold a few batches: memory stays bounded whatever the
//! captures' sizes and the offset between their clocks.

use crate::run::{FileOutcome, run_files};
use crate::sinks::diff::matcher::{A, B};
use crate::sinks::diff::{ClockMode, DiffReport, Matcher, Options, Seen, Sightings, build};
use gpcap_engine::{Config, Flow};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

/// Batches in flight from each capture's engine to the matcher.
const IN_FLIGHT: usize = 4;

/// Both captures' outcomes (how reading each ended) and the report.
pub struct Diffed {
    pub report: DiffReport,
    pub outcomes: [FileOutcome; 2],
}

/// One capture through its engine into sightings sent on `tx`; spent batches come back
/// on `back`.
fn read_side(
    path: PathBuf,
    cfg: Config,
    tx: SyncSender<Vec<Seen>>,
    back: Receiver<Vec<Seen>>,
) -> Result<FileOutcome, super::RunError> {
    let mut sink = Sightings::new(|batch: &mut Vec<Seen>| {
        let fresh = back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(crate::sinks::diff::sighting::BATCH));
        let full = std::mem::replace(batch, fresh);
        Flow::stop_if(tx.send(full).is_err())
    });
    let mut outcomes = run_files(std::slice::from_ref(&path), cfg, &mut sink, &mut |_, _| {})?;
    Ok(outcomes.pop().unwrap_or_default())
}

/// One capture's stream as the matcher reads it: the batch in hand and where.
struct Stream {
    rx: Receiver<Vec<Seen>>,
    back: Sender<Vec<Seen>>,
    batch: Vec<Seen>,
    at: usize,
    done: bool,
}

impl Stream {
    /// The next item, receiving a batch when the one in hand is spent; None at the end.
    fn peek(&mut self) -> Option<Seen> {
        while self.at >= self.batch.len() {
            if self.done {
                return None;
            }
            let mut spent = std::mem::take(&mut self.batch);
            spent.clear();
            if spent.capacity() > 0 {
                let _ = self.back.send(spent);
            }
            self.at = 0;
            match self.rx.recv() {
                Ok(b) => self.batch = b,
                Err(_) => self.done = true,
            }
        }
        self.batch.get(self.at).copied()
    }
}

/// Compares captures `a` and `b` (each read once, on a thread of its own) into the
/// report. A capture that cannot be opened is an error; one that breaks midway keeps
/// what was read and says where it stopped in its outcome.
pub fn diff(
    paths: [PathBuf; 2],
    cfg: Config,
    opts: Options,
    mode: ClockMode,
) -> Result<Diffed, super::RunError> {
    let names = [
        gpcap_wire::capture::shown(&paths[A]),
        gpcap_wire::capture::shown(&paths[B]),
    ];
    let mut matcher = Matcher::new(opts);
    let results = std::thread::scope(|scope| {
        let mut streams = Vec::new();
        let mut handles = Vec::new();
        for path in paths {
            let (tx, rx) = sync_channel(IN_FLIGHT);
            let (back_tx, back_rx) = channel();
            let cfg = cfg.clone();
            handles.push(scope.spawn(move || read_side(path, cfg, tx, back_rx)));
            streams.push(Stream {
                rx,
                back: back_tx,
                batch: Vec::new(),
                at: 0,
                done: false,
            });
        }
        merge(&mut matcher, &mut streams);
        // The matcher stops reading only at both ends; a capture that failed ended early.
        drop(streams);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Ok(FileOutcome::default())))
            .collect::<Vec<_>>()
    });
    let mut outcomes = Vec::new();
    for r in results {
        outcomes.push(r?);
    }
    let outcomes: [FileOutcome; 2] = [outcomes.remove(0), outcomes.remove(0)];
    Ok(Diffed {
        report: build(matcher, names, mode),
        outcomes,
    })
}

/// Feeds the matcher both streams, each datagram in the aligned clocks' order; other
/// items as they come.
fn merge(m: &mut Matcher, streams: &mut [Stream]) {
    let mut ended = [false; 2];
    loop {
        let mut heads = [None; 2];
        for x in [A, B] {
            loop {
                match streams[x].peek() {
                    Some(Seen::Datagram(s)) => {
                        heads[x] = Some(s.ts_ns);
                        break;
                    }
                    Some(other) => {
                        streams[x].at += 1;
                        m.push(x, other);
                    }
                    None => {
                        if !ended[x] {
                            ended[x] = true;
                            m.end(x);
                        }
                        break;
                    }
                }
            }
        }
        let Some(x) = m.next_side(heads) else { break };
        if let Some(item) = streams[x].peek() {
            streams[x].at += 1;
            m.push(x, item);
        }
    }
}
