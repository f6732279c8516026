//! Frames fed as they arrive (live capture): the same engine and sinks as files, one
//! batch at a time, with the report available at any moment.

use crate::sinks::analysis::{Report, Statistics};
use crate::sinks::index::IndexSink;
use crate::sinks::writer::PcapNgSink;
use gpcap_engine::{Config, Engine, Sink};
use gpcap_wire::capture::Frame;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Frames analyzed between two asks of [`Session::feed_frames_while`]'s `go_on`: a
/// clock read every 8 frames costs little beside them.
const ASK_EVERY: usize = 8;

pub struct Session {
    engine: Engine,
    stats: Statistics,
    /// The TUI's index (none for reports alone, which keep nothing per packet).
    pub index: Option<IndexSink>,
    writer: Option<PcapNgSink<BufWriter<File>>>,
    frames: u64,
    linktype: i32,
}

impl Session {
    /// `write`: also save every frame to this pcapng file.
    pub fn new(
        cfg: Config,
        linktype: i32,
        index: Option<IndexSink>,
        write: Option<&Path>,
    ) -> std::io::Result<Self> {
        let writer = match write {
            Some(p) => Some(PcapNgSink::new(BufWriter::with_capacity(
                1 << 20,
                File::create(p)?,
            ))?),
            None => None,
        };
        let mut stats = Statistics::new(cfg.clone());
        stats.begin_file(0, "live");
        Ok(Session {
            engine: Engine::for_sink(cfg, &stats),
            stats,
            index,
            writer,
            frames: 0,
            linktype,
        })
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Analyzes a batch of (timestamp, original length, bytes) of the session's link type.
    pub fn feed<'a>(&mut self, batch: impl IntoIterator<Item = (i64, u32, &'a [u8])>) -> std::io::Result<()> {
        let linktype = self.linktype;
        self.feed_frames(batch.into_iter().map(|(ts_ns, origlen, data)| Frame {
            number: 0,
            ts_ns,
            linktype,
            interface: 0,
            origlen,
            offset: 0,
            data,
        }))
    }

    /// Analyzes a batch of frames, each of its own link type (a pcapng stream may mix
    /// them); they are numbered in the order they arrive.
    pub fn feed_frames<'a>(&mut self, batch: impl IntoIterator<Item = Frame<'a>>) -> std::io::Result<()> {
        self.feed_frames_while(batch, || true).map(|_| ())
    }

    /// Analyzes frames of a batch while `go_on` holds, asked every few frames (a slow
    /// definition then cannot hold a stop or a due report back for long); returns how
    /// many were analyzed.
    pub fn feed_frames_while<'a>(
        &mut self,
        batch: impl IntoIterator<Item = Frame<'a>>,
        mut go_on: impl FnMut() -> bool,
    ) -> std::io::Result<usize> {
        let mut sinks = (&mut self.stats, (&mut self.index, &mut self.writer));
        let mut fed = 0;
        // Only `--write` can fail: the batch is still analyzed and published, and its
        // first write error ends the session after it (the writer writes no more).
        let mut failed = None;
        for mut f in batch {
            if fed % ASK_EVERY == 0 && !go_on() {
                break;
            }
            fed += 1;
            self.frames += 1;
            f.number = self.frames;
            f.offset = 0;
            if let Err(e) = self.engine.frame(&f, &mut sinks) {
                failed.get_or_insert(e);
            }
        }
        if let Some(ix) = self.index.as_mut() {
            ix.publish(false);
        }
        match failed {
            Some(e) => Err(e
                .downcast::<std::io::Error>()
                .unwrap_or_else(std::io::Error::other)),
            None => Ok(fed),
        }
    }

    /// Frames the analysis gave up (the run stopped while it was behind) still go to
    /// `--write`, unanalyzed: the file keeps every frame captured. A write error is kept
    /// for [`Session::finish`] to return.
    pub fn write_unanalyzed<'a>(&mut self, batch: impl IntoIterator<Item = Frame<'a>>) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        for f in batch {
            if w.broken() {
                return;
            }
            if let Err(e) = w.frame(f.linktype, f.ts_ns, f.data, f.origlen) {
                w.error = Some(e);
            }
        }
    }

    /// The report so far (packets still being reassembled count as incomplete in it).
    pub fn report(&self) -> Report {
        let mut stats = self.stats.clone();
        self.engine.clone().finish(&mut stats);
        stats.report()
    }

    pub fn finish(self) -> std::io::Result<Report> {
        self.finish_with(None)
    }

    /// Finishes, telling the TUI's index why the capture ended early (a stream that
    /// broke off, a lost connection): shown with everything captured before it.
    pub fn finish_with(mut self, error: Option<String>) -> std::io::Result<Report> {
        if let Some(w) = self.writer {
            w.finish()?;
        }
        let mut stats = self.stats;
        self.engine.finish(&mut stats);
        let report = stats.report();
        if let Some(ix) = self.index.as_mut() {
            ix.done(Some(report.clone()), error);
        }
        Ok(report)
    }
}
