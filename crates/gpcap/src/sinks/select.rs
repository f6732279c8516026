//! What a display filter selects: events by their position in the engine's order (the
//! TUI's row numbers, one row per event) and the frames that carry them — a reassembled
//! packet that matches brings every fragment it was put back together from — so that the
//! TUI's list, `dissect --filter` and `--write` select the same packets.

use crate::filter::Filter;
use crate::sinks::writer::PcapNgSink;
use gpcap_engine::{Flow, Kind, Needs, PacketEvent, Sink, SinkError};
use gpcap_wire::capture::{CaptureError, CaptureReader};
use std::path::Path;

/// A set of frame numbers, one bit each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameSet {
    bits: Vec<u64>,
    len: u64,
}

impl FrameSet {
    pub fn insert(&mut self, frame: u64) {
        let (w, b) = ((frame / 64) as usize, frame % 64);
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.len += 1;
        }
    }

    pub fn contains(&self, frame: u64) -> bool {
        self.bits
            .get((frame / 64) as usize)
            .is_some_and(|w| w & (1 << (frame % 64)) != 0)
    }

    /// Frames in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The events a filter selects.
pub struct Select {
    pub filter: Filter,
    /// Position of the next event.
    pub position: u32,
    /// Positions of the selected events not yet taken (see [`Select::take_rows`]).
    rows: Vec<u32>,
    /// Keep positions at all (the TUI); `--write` needs only frames.
    pub keep_rows: bool,
    pub frames: FrameSet,
    /// Events selected.
    pub selected: u64,
    /// At most this many (`dissect -c`).
    pub limit: Option<u64>,
    /// Only this frame (`dissect --frame`).
    pub only: Option<u64>,
    /// Game packets only, as `dissect` prints them (its `-w` writes the frames of the
    /// packets shown); the TUI lists every datagram.
    pub game_only: bool,
}

impl Select {
    pub fn new(filter: Filter) -> Self {
        Select {
            filter,
            position: 0,
            rows: Vec::new(),
            keep_rows: true,
            frames: FrameSet::default(),
            selected: 0,
            limit: None,
            only: None,
            game_only: false,
        }
    }

    /// As many events as `limit` allows have been selected.
    pub fn full(&self) -> bool {
        self.limit.is_some_and(|n| self.selected >= n)
    }

    /// The positions selected since the last call.
    pub fn take_rows(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.rows)
    }
}

impl Select {
    /// One event ([`Sink::packet`]).
    fn take(&mut self, e: &PacketEvent<'_>) {
        let position = self.position;
        self.position = self.position.saturating_add(1);
        self.filter.start(e.ts_ns);
        let other_frame = self.only.is_some_and(|n| n != e.frame);
        if self.full() || other_frame || (self.game_only && !e.is_game()) || !self.filter.matches(e) {
            return;
        }
        self.selected += 1;
        if self.keep_rows {
            self.rows.push(position);
        }
        if e.kind == Kind::Reassembled {
            for &f in e.fragment_frames {
                self.frames.insert(f);
            }
        } else {
            self.frames.insert(e.frame);
        }
    }
}

impl Sink for Select {
    /// Field trees when the filter reads dissected fields.
    fn needs(&self) -> Needs {
        Needs {
            fields: self.filter.needs_engine(),
            layers: None,
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        self.take(e);
        Ok(Flow::Continue)
    }
}

/// Where [`write_frames`] writes before its file is complete.
fn partial_name(to: &Path) -> std::path::PathBuf {
    let mut partial = to.as_os_str().to_owned();
    partial.push(".partial");
    partial.into()
}

/// Whether [`write_frames`] will be able to create its file: checked before the run, so
/// that an output that cannot be written fails at once, not after every packet is shown.
pub fn check_writable(to: &Path) -> Result<(), WriteError> {
    let fail = |e| WriteError::Output(to.display().to_string(), e);
    if to.is_dir() {
        return Err(fail(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    let partial = partial_name(to);
    let existed = partial.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&partial)
        .map_err(fail)?;
    if !existed {
        let _ = std::fs::remove_file(&partial);
    }
    Ok(())
}

/// Copies the frames of `frames` from the capture at `from` to a pcapng file at `to`, in
/// capture order, with their timestamps and original lengths; how many were written.
/// Written under a temporary name and renamed when complete, so that a failure leaves
/// nothing behind.
pub fn write_frames(from: &Path, frames: &FrameSet, to: &Path) -> Result<u64, WriteError> {
    let partial = partial_name(to);
    let result = (|| {
        let file =
            std::fs::File::create(&partial).map_err(|e| WriteError::Output(to.display().to_string(), e))?;
        let mut sink = PcapNgSink::new(std::io::BufWriter::new(file))
            .map_err(|e| WriteError::Output(to.display().to_string(), e))?;
        let mut r = CaptureReader::open(from)?;
        while let Some(f) = r.next_frame()? {
            if frames.contains(f.number) {
                sink.frame(f.linktype, f.ts_ns, f.data, f.origlen)
                    .map_err(|e| WriteError::Output(to.display().to_string(), e))?;
            }
        }
        let written = sink.written;
        sink.finish()
            .map_err(|e| WriteError::Output(to.display().to_string(), e))?;
        Ok(written)
    })();
    match result {
        Ok(n) => match std::fs::rename(&partial, to) {
            Ok(()) => Ok(n),
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(WriteError::Output(to.display().to_string(), e))
            }
        },
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("cannot write {0}: {1}")]
    Output(String, std::io::Error),
}

/// What a background scan sends: positions selected and bytes read so far, then how
/// reading ended.
#[derive(Debug)]
pub enum ScanUpdate {
    Rows { rows: Vec<u32>, bytes_read: u64 },
    Done { error: Option<String> },
}
