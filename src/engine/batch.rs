//! Frames copied out of the reader's buffer in batches, to hand to other threads
//! (shards, validation workers) without a channel message per frame.

use super::Prepared;
use super::join::Joined;
use crate::analysis::Analyzer;
use crate::capture::{CaptureError, Frame};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Frames a batch holds at most (tests place frames on either side of a boundary).
pub const BATCH_FRAMES: usize = 2048;
const BATCH_BYTES: usize = 1 << 20;

struct Meta {
    number: u64,
    ts_ns: i64,
    linktype: i32,
    interface: u32,
    origlen: u32,
    offset: u64,
    start: usize,
    len: usize,
}

#[derive(Default)]
pub struct Batch {
    buf: Vec<u8>,
    frames: Vec<Meta>,
}

impl Batch {
    pub fn new() -> Self {
        Batch {
            buf: Vec::with_capacity(BATCH_BYTES),
            frames: Vec::with_capacity(BATCH_FRAMES),
        }
    }

    /// Copies a frame in; true when the batch is full and should be sent. The frame by
    /// value, inlined: a reference would put it on the stack to be read back before the
    /// reader's stores had landed (a store-forwarding stall, a third of the routing loop).
    #[inline(always)]
    pub fn push(&mut self, f: Frame) -> bool {
        self.frames.push(Meta {
            number: f.number,
            ts_ns: f.ts_ns,
            linktype: f.linktype,
            interface: f.interface,
            origlen: f.origlen,
            offset: f.offset,
            start: self.buf.len(),
            len: f.data.len(),
        });
        self.buf.extend_from_slice(f.data);
        self.frames.len() >= BATCH_FRAMES || self.buf.len() >= BATCH_BYTES
    }

    /// Empties the batch, keeping its memory for the next frames.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.frames.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// The bytes of frame `i`.
    pub fn frame_data(&self, i: usize) -> Option<&[u8]> {
        let m = self.frames.get(i)?;
        self.buf.get(m.start..m.start + m.len)
    }

    /// The frames, in the order they were pushed.
    pub fn frames(&self) -> impl Iterator<Item = Frame<'_>> {
        self.frames.iter().map(|m| Frame {
            number: m.number,
            ts_ns: m.ts_ns,
            linktype: m.linktype,
            interface: m.interface,
            origlen: m.origlen,
            offset: m.offset,
            data: &self.buf[m.start..m.start + m.len],
        })
    }
}

/// What was found in a batch's frames ahead of the ordered stage: one [`Prepared`] a
/// frame, and the fragmented packets a worker joined.
#[derive(Default)]
pub struct Found {
    pub pre: Vec<Prepared>,
    pub joined: Joined,
}

impl Found {
    pub fn clear(&mut self) {
        self.pre.clear();
        self.joined.clear();
    }
}

/// Spent batches go back to the reader: reusing their memory instead of allocating a
/// fresh megabyte per batch took the page faults of a sharded run from 107k to a few
/// thousand.
pub struct Recycler<T> {
    back: SyncSender<T>,
    spent: Receiver<T>,
}

impl<T> Recycler<T> {
    /// Keeps at most `n` spent values.
    pub fn new(n: usize) -> Self {
        let (back, spent) = sync_channel(n);
        Recycler { back, spent }
    }

    /// Where consumers send what they are done with (`try_send`: dropped when full).
    pub fn returner(&self) -> SyncSender<T> {
        self.back.clone()
    }

    /// A spent value, or a new one.
    pub fn take(&self, make: impl FnOnce() -> T) -> T {
        self.spent.try_recv().unwrap_or_else(|_| make())
    }
}

/// Runs a batch's frames through `a`'s stateful stage with what was found in them (the
/// pipeline's ordered stage), or whole when nothing was (shards), then sends its emptied
/// memory back to the reader.
pub fn analyze_batch(
    a: &mut Analyzer,
    (mut batch, mut found): (Batch, Found),
    back: &SyncSender<(Batch, Found)>,
) {
    if found.pre.is_empty() {
        for f in batch.frames() {
            a.frame(&f);
        }
    } else {
        for (f, p) in batch.frames().zip(found.pre.iter()) {
            a.frame_with(&f, p, &found.joined);
        }
    }
    batch.clear();
    found.clear();
    let _ = back.try_send((batch, found));
}

/// A worker thread panicked: said as a capture error, in words.
pub fn thread_failed() -> CaptureError {
    CaptureError {
        file: String::new(),
        offset: 0,
        frame: 0,
        message: "an analysis thread failed".into(),
    }
}
