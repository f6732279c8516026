//! Export on several cores. The engine reads in order on one thread and validates bodies
//! only, as `analyze` does; the game packets are copied out in batches; workers read
//! each batch's packets again, from the plan's leaf log where it can say their rows
//! ([`Rows::add_logged`]) and into a field tree where not, and build their rows (the
//! stateless part: only a protocol whose dissection needs nothing of the conversation
//! comes here, see [`eligible`]); one ordered stage hands the rows to the tables'
//! writers in reading order. Every table gets the rows one core writes, in its order.

use super::rows::{Chunk, Rows};
use super::{ExportError, Table};
use crate::sinks::ordered::Batch;
use gpcap_dissect::{Dissection, Dissector, Program};
use gpcap_engine::pool::{InOrder, OrderedPool};
use gpcap_engine::{Config, Kind, PacketEvent, Status};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Packets a batch holds at most, and payload bytes past which it is sent (a batch's
/// rows are a few MiB of arrays; a few batches are in flight per worker).
const BATCH_PACKETS: usize = 1024;
const BATCH_BYTES: usize = 512 << 10;

/// Whether workers can dissect a packet from its bytes alone, as the engine would: a
/// definition, and no decryption, remembered values or messages (the engine's tree then
/// depends on the conversation; such protocols are exported on one core).
pub(super) fn eligible(cfg: &Config) -> bool {
    cfg.program.is_some() && cfg.pipelinable()
}

/// A batch's rows, or the (file, offset, frame) of the packet whose rows failed.
type Built = Result<Vec<Chunk>, (u32, u64, u64)>;

/// What the ordered stage ends with: the tables (to close), rows written per table, and
/// the first error.
pub(super) struct Ordered {
    pub tables: Vec<Option<Table>>,
    pub rows: Vec<u64>,
    pub error: Option<ExportError>,
}

/// The workers and the ordered stage of one capture's export.
pub(super) struct Pool {
    batch: Batch,
    pool: Option<OrderedPool<Batch, Ordered>>,
    spent: Receiver<Batch>,
    /// Set when the export cannot go on (a write or a worker failed): reading may stop.
    pub failed: Arc<AtomicBool>,
    /// Set when the export is dropped unfinished: the workers skip what is queued.
    abandon: Arc<AtomicBool>,
}

impl Pool {
    /// `workers` threads building rows of `program`'s tables into `tables` (indexed as
    /// [`Chunk::table`]); `capture` names the capture in errors.
    pub fn new(
        program: Arc<Program>,
        keys: &[(String, String)],
        tables: Vec<Option<Table>>,
        capture: &str,
        workers: usize,
    ) -> Pool {
        let (back, spent) = sync_channel::<Batch>(workers.max(1));
        let failed = Arc::new(AtomicBool::new(false));
        let abandon = Arc::new(AtomicBool::new(false));
        let make = |_| {
            let rows = Rows::new(Some(program.clone()), keys);
            building(
                rows,
                Dissector::new(program.clone()),
                back.clone(),
                abandon.clone(),
            )
        };
        let ordered = {
            let (failed, capture) = (failed.clone(), capture.to_string());
            move |built| in_order(built, tables, failed, capture)
        };
        // Bounded queues: a few batches in flight whatever the capture's size.
        let pool = OrderedPool::new("gpcap-export-rows", workers, 1, make, ordered);
        Pool {
            batch: Batch::default(),
            pool: Some(pool),
            spent,
            failed,
            abandon,
        }
    }

    /// Copies game packet `e` into the batch, sending it when full. A reassembled packet
    /// stays in the batch of the fragment that completed it (its rows read that tree).
    pub fn push(&mut self, e: &PacketEvent<'_>) {
        let (packets, bytes) = self.batch.size();
        if e.kind != Kind::Reassembled && (packets >= BATCH_PACKETS || bytes >= BATCH_BYTES) {
            self.send();
        }
        self.batch.push(e);
    }

    fn send(&mut self) {
        let mut next = self.spent.try_recv().unwrap_or_default();
        next.clear();
        let batch = std::mem::replace(&mut self.batch, next);
        let sent = self.pool.as_mut().is_some_and(|p| p.send(batch));
        if !sent {
            self.failed.store(true, Ordering::Relaxed);
        }
    }

    /// Sends what is left, waits for every row to be written and gives the tables back.
    pub fn finish(mut self) -> Ordered {
        if self.batch.size().0 > 0 {
            self.send();
        }
        self.end()
    }

    fn end(&mut self) -> Ordered {
        let done = self.pool.take().map(OrderedPool::finish);
        let worker_died = done.as_ref().is_some_and(|d| d.worker_died);
        let mut o = match done.and_then(|d| d.ordered) {
            Some(o) => o,
            None => Ordered {
                tables: Vec::new(),
                rows: Vec::new(),
                error: Some(ExportError {
                    path: String::new(),
                    reason: "the export's ordered stage failed".into(),
                }),
            },
        };
        if worker_died && o.error.is_none() {
            o.error = Some(ExportError {
                path: String::new(),
                reason: "an export worker failed".into(),
            });
        }
        o
    }
}

impl Drop for Pool {
    /// An export dropped unfinished: the workers skip what is queued; the tables, never
    /// completed, remove their temporary files.
    fn drop(&mut self) {
        if self.pool.is_some() {
            self.abandon.store(true, Ordering::Relaxed);
            drop(self.end());
        }
    }
}

/// Gives `tree` the field tree the engine, recording, attaches to game packet `e` (its
/// validator's dissection), and says whether the event carries one: a datagram cut by
/// the snaplen has none; a reassembled packet failing its checksum keeps the fragment's
/// tree without its fields, as the validator leaves it.
fn redissect(d: &mut Dissector, tree: &mut Dissection, e: &PacketEvent<'_>) -> bool {
    match e.kind {
        Kind::Game if e.status == Status::Truncated => false,
        Kind::Reassembled if e.status == Status::CrcMismatch => {
            tree.fields.clear();
            true
        }
        _ => {
            d.dissect_into(e.payload, tree);
            true
        }
    }
}

/// A worker: the rows of each batch, as one core builds them; a panic is sent on as the
/// packet it stopped at, so the export ends with an error, not a hang. An abandoned
/// export's worker ends at its next batch.
fn building(
    mut rows: Rows,
    mut dissector: Dissector,
    back: SyncSender<Batch>,
    abandon: Arc<AtomicBool>,
) -> impl FnMut(Batch) -> Option<Built> + Send + 'static {
    dissector.record = true;
    let mut tree = Dissection::default();
    move |batch| {
        if abandon.load(Ordering::Relaxed) {
            return None;
        }
        let at = std::cell::Cell::new((0, 0, 0));
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut chunks = Vec::new();
            for e in batch.events() {
                at.set((e.file, e.offset, e.frame));
                if rows.add_logged(&e, &mut |c| chunks.push(c)) {
                    continue;
                }
                let has = redissect(&mut dissector, &mut tree, &e);
                let e = PacketEvent {
                    dissection: has.then_some(&tree),
                    ..e
                };
                rows.add(&e, &mut |c| chunks.push(c));
            }
            rows.flush_all(&mut |c| chunks.push(c));
            chunks
        }));
        let _ = back.try_send(batch);
        Some(run.map_err(|_| at.get()))
    }
}

/// The ordered stage: each batch's rows to their tables in reading order; stops at the
/// first failure (dropping its receiver ends the workers and the reader).
fn in_order(
    built: InOrder<Built>,
    mut tables: Vec<Option<Table>>,
    failed: Arc<AtomicBool>,
    capture: String,
) -> Ordered {
    let mut rows = vec![0u64; tables.len()];
    let mut error = None;
    'read: for b in built {
        let chunks = match b {
            Ok(chunks) => chunks,
            Err((file, offset, frame)) => {
                error = Some(ExportError {
                    path: capture.clone(),
                    reason: format!(
                        "building the rows of frame {frame} (file {file}, byte offset {offset}) failed: the export stops before it"
                    ),
                });
                break;
            }
        };
        for c in chunks {
            let Some(Some(t)) = tables.get_mut(c.table) else {
                continue;
            };
            if let Err(e) = t.write(c.columns) {
                error = Some(e);
                break 'read;
            }
            rows[c.table] += c.rows as u64;
        }
    }
    if error.is_some() {
        failed.store(true, Ordering::Relaxed);
    }
    Ordered { tables, rows, error }
}
