//! The frame loop over capture files: the only one in gpcap besides the capture reader's.

use super::{Engine, FileEnd, Sink};
use crate::capture::{CaptureError, CaptureReader, Frame};
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
pub fn read_frames(
    r: &mut CaptureReader,
    file: usize,
    progress: &mut dyn FnMut(usize, u64),
    mut each: impl FnMut(Frame) -> bool,
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

/// Reads every capture, in order, through `engine` into `sink`, then finishes the engine.
/// A file that cannot be opened is an error; one that breaks midway keeps what was read
/// and says where it stopped (in the outcome and to the sink). Stops early when the sink
/// says it is done (a closed output).
pub fn run_files<S: Sink + ?Sized>(
    paths: &[PathBuf],
    mut engine: Engine,
    sink: &mut S,
    progress: Progress,
    done: &dyn Fn(&S) -> bool,
) -> Result<Vec<FileOutcome>, CaptureError> {
    let mut outcomes = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let name = crate::capture::shown(path);
        let mut r = CaptureReader::open(path)?;
        engine.set_file(i as u32);
        sink.begin_file(i as u32, &name);
        let error = read_frames(&mut r, i, progress, |f| {
            engine.frame(&f, sink);
            !done(sink)
        });
        let end = FileEnd {
            error,
            truncated_tail: r.truncated_tail.clone(),
        };
        sink.end_file(i as u32, &end);
        outcomes.push(FileOutcome {
            name,
            frames: r.frames_read(),
            end,
        });
        if done(sink) {
            break;
        }
    }
    engine.finish(sink);
    Ok(outcomes)
}

/// Feeds the identifier the first datagrams of each capture, until it has what it needs.
pub fn sample_files(paths: &[PathBuf], ident: &mut crate::identify::Identifier) -> Result<(), CaptureError> {
    for path in paths {
        let mut r = CaptureReader::open(path)?;
        // A read error ends the sample; analysis reports it.
        let _ = read_frames(&mut r, 0, &mut |_, _| {}, |f| {
            ident.frame(f.linktype, f.data);
            !ident.saturated()
        });
    }
    Ok(())
}
