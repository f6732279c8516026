//! The capture thread's side of the queue: frames copied into batches, a batch handed
//! over when full or [`BATCH_WAIT`] old, emptied batches taken back for the next.

use super::{BATCH, BATCH_BYTES, BATCH_WAIT, Batch};
use gpcap_wire::capture::Frame;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Instant;

pub(super) struct Feeder {
    tx: SyncSender<Batch>,
    spares: Receiver<Batch>,
    queue_dropped: Arc<AtomicU64>,
    /// `captured` as the analysis side reads it at any moment: counted before a batch
    /// is handed over, so it is never below the frames the analysis has taken.
    handed: Arc<AtomicU64>,
    batch: Batch,
    since: Instant,
    polls: u32,
    /// Frames handed over.
    pub captured: u64,
    /// Wait for room in the queue instead of dropping (a stream: its writer waits too,
    /// and nothing it wrote is lost).
    pub blocking: bool,
}

impl Feeder {
    pub fn new(
        tx: SyncSender<Batch>,
        spares: Receiver<Batch>,
        queue_dropped: Arc<AtomicU64>,
        handed: Arc<AtomicU64>,
    ) -> Self {
        Feeder {
            tx,
            spares,
            queue_dropped,
            handed,
            batch: Batch::with_capacity(BATCH, BATCH_BYTES),
            since: Instant::now(),
            polls: 0,
            captured: 0,
            blocking: false,
        }
    }

    /// Adds a frame; false once the analysis is gone.
    #[inline]
    pub fn push(&mut self, f: Frame) -> bool {
        if self.batch.is_empty() {
            self.since = Instant::now();
        }
        self.batch.push(f);
        self.polls = self.polls.wrapping_add(1);
        // The clock is read every 32 frames, not every one.
        let late = self.polls.is_multiple_of(32) && self.since.elapsed() > BATCH_WAIT;
        if self.batch.len() >= BATCH || late {
            return self.flush();
        }
        true
    }

    /// Hands the batch over; a full queue drops it whole, counted (unless `blocking`).
    /// False once the analysis is gone.
    pub fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let n = self.batch.len() as u64;
        let next = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity(BATCH, BATCH_BYTES));
        let batch = std::mem::replace(&mut self.batch, next);
        self.handed.fetch_add(n, Ordering::Relaxed);
        if self.blocking {
            return match self.tx.send(batch) {
                Ok(()) => {
                    self.captured += n;
                    true
                }
                Err(_) => false,
            };
        }
        match self.tx.try_send(batch) {
            Ok(()) => self.captured += n,
            Err(TrySendError::Full(mut dropped)) => {
                self.handed.fetch_sub(n, Ordering::Relaxed);
                self.queue_dropped.fetch_add(n, Ordering::Relaxed);
                dropped.clear();
                self.batch = dropped;
            }
            Err(TrySendError::Disconnected(_)) => return false,
        }
        true
    }
}
