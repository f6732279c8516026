//! The loop over capture files, the only one in gpcap besides the capture reader's: every
//! run (serial, pipelined, sharded) reads its captures through [`each_file`].

use gpcap_engine::{Config, Engine, FileEnd, Flow, Sink, SinkError};
use gpcap_wire::capture::{CaptureError, CaptureReader, Frame};
use std::path::PathBuf;

/// How far reading has come: file index and bytes read of it.
pub type Progress<'a> = &'a mut dyn FnMut(usize, u64);

/// How reading all files went, for the caller's messages.
#[derive(Debug, Clone, Default)]
pub struct FileOutcome {
    pub name: String,
    pub frames: u64,
    pub end: FileEnd,
}

/// Hands every frame of `r` (file `file`) to `each` until it returns false, reporting
/// progress now and then; the read error that stopped it, if any (the frames before it
/// were handed on).
pub(crate) fn read_frames(
    r: &mut CaptureReader,
    file: usize,
    progress: &mut dyn FnMut(usize, u64),
    mut each: impl FnMut(Frame) -> bool,
) -> Option<CaptureError> {
    if !r.is_fast() {
        return read_general(r, file, progress, &mut each);
    }
    // Classic pcap: a loop of its own, so that no frame of the general path, returned
    // through memory, meets the fast path's (see `next_fast_frame`).
    loop {
        let Some(f) = r.next_fast_frame() else {
            return r.take_error();
        };
        let number = f.number;
        if !each(f) {
            return None;
        }
        if number.is_multiple_of(65536) {
            progress(file, r.offset());
        }
    }
}

/// [`read_frames`] for every other format (pcap-parser), out of line.
#[inline(never)]
fn read_general(
    r: &mut CaptureReader,
    file: usize,
    progress: &mut dyn FnMut(usize, u64),
    each: &mut dyn FnMut(Frame) -> bool,
) -> Option<CaptureError> {
    loop {
        // The frame passed by value: it stays in registers through the inlined reader
        // into the consumer, where a reference put it on the stack to be read back before
        // its stores had landed (a store-forwarding stall that was 40% of this loop).
        let number = match r.next_frame() {
            Ok(Some(f)) => {
                let number = f.number;
                if !each(f) {
                    return None;
                }
                number
            }
            Ok(None) => return None,
            Err(e) => return Some(e),
        };
        if number.is_multiple_of(65536) {
            progress(file, r.offset());
        }
    }
}

/// What a run does with each capture's frames; [`each_file`] is the loop that calls it,
/// the same for serial, pipelined and sharded runs.
pub(crate) trait Reading {
    /// Capture `file` (0-based) is open.
    fn begin(&mut self, file: usize, name: &str);
    /// One frame, by value (see [`read_frames`]); false stops the run after this frame.
    fn frame(&mut self, f: Frame) -> bool;
    /// Capture `file` ended: how reading it stopped.
    fn end(&mut self, file: usize, end: &FileEnd);
}

/// The one file loop: every capture in order, each frame to `r`, until `r` stops. A file
/// that cannot be opened is an error (the files before it were read); one that breaks
/// midway keeps what was read and says where it stopped, in its outcome and to `r`.
pub(crate) fn each_file(
    paths: &[PathBuf],
    progress: Progress,
    r: &mut impl Reading,
) -> Result<Vec<FileOutcome>, CaptureError> {
    let mut outcomes = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let name = gpcap_wire::capture::shown(path);
        let mut reader = CaptureReader::open(path)?;
        r.begin(i, &name);
        let mut go = true;
        let error = read_frames(&mut reader, i, progress, |f| {
            go = r.frame(f);
            go
        });
        let end = FileEnd {
            error,
            truncated_tail: reader.truncated_tail.clone(),
        };
        r.end(i, &end);
        outcomes.push(FileOutcome {
            name,
            frames: reader.frames_read(),
            end,
        });
        if !go {
            break;
        }
    }
    Ok(outcomes)
}

/// Why a run ended before its captures did: one could not be opened (or a thread of the
/// run failed), or its sink could not go on (the sink's own error inside).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Sink(#[from] SinkError),
}

/// The serial run: the engine and its sink on this thread.
struct Serial<'a, S: ?Sized> {
    engine: Engine,
    sink: &'a mut S,
    /// Why the sink could not go on: the run ends with it.
    failed: Option<SinkError>,
}

impl<S: Sink + ?Sized> Reading for Serial<'_, S> {
    fn begin(&mut self, file: usize, name: &str) {
        self.engine.set_file(file as u32);
        self.sink.begin_file(file as u32, name);
    }
    #[inline(always)]
    fn frame(&mut self, f: Frame) -> bool {
        match self.engine.frame(&f, self.sink) {
            Ok(flow) => flow == Flow::Continue,
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }
    fn end(&mut self, file: usize, end: &FileEnd) {
        self.sink.end_file(file as u32, end);
    }
}

/// Reads every capture, in order, through one engine into `sink` on this thread, then
/// finishes the engine. The engine does what the sink needs ([`Sink::needs`]); the run
/// stops early when the sink says [`Flow::Stop`](gpcap_engine::Flow) (a closed output),
/// and ends with the sink's error when it fails ([`RunError::Sink`]:
/// the engine is not finished, nothing more is handed to the sink).
/// A file that cannot be opened is an error; one that breaks midway keeps what was read
/// and says where it stopped (in the outcome and to the sink).
pub fn run_files<S: Sink + ?Sized>(
    paths: &[PathBuf],
    cfg: Config,
    sink: &mut S,
    progress: Progress,
) -> Result<Vec<FileOutcome>, RunError> {
    let engine = Engine::for_sink(cfg, sink);
    run_engine(paths, engine, sink, progress)
}

/// [`run_files`] with an engine made by the caller (one that logs memory, say).
fn run_engine<S: Sink + ?Sized>(
    paths: &[PathBuf],
    engine: Engine,
    sink: &mut S,
    progress: Progress,
) -> Result<Vec<FileOutcome>, RunError> {
    let mut serial = Serial {
        engine,
        sink,
        failed: None,
    };
    let outcomes = each_file(paths, progress, &mut serial)?;
    if let Some(e) = serial.failed {
        return Err(RunError::Sink(e));
    }
    serial.engine.finish(serial.sink);
    Ok(outcomes)
}

/// Feeds the identifier the first datagrams of each capture, until it has what it needs.
/// A read error ends a capture's sample; the analysis that follows reports it.
pub fn sample_files(
    paths: &[PathBuf],
    ident: &mut gpcap_engine::identify::Identifier,
) -> Result<(), CaptureError> {
    sample_ends(paths, ident).map(drop)
}

/// [`sample_files`], with how each capture's sample ended: a read error or a cut last
/// record met before the identifier had what it needs (`identify` says them).
pub fn sample_ends(
    paths: &[PathBuf],
    ident: &mut gpcap_engine::identify::Identifier,
) -> Result<Vec<FileEnd>, CaptureError> {
    let mut ends = Vec::new();
    for path in paths {
        let mut r = CaptureReader::open(path)?;
        let error = read_frames(&mut r, 0, &mut |_, _| {}, |f| {
            ident.frame(f.linktype, f.data);
            !ident.saturated()
        });
        ends.push(FileEnd {
            error,
            truncated_tail: r.truncated_tail.clone(),
        });
    }
    Ok(ends)
}
