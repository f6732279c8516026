//! One ordered worker pool, for every consumer that wants more cores: items sent in
//! order go to `workers` threads, each turning an item into an output with state of its
//! own; one ordered thread takes the outputs back in sending order. The pipelined
//! analysis (validation on workers, the analyzer in order), `dissect`'s printer
//! (formatting on workers, one writer) and export (rows on workers, the tables' writer)
//! are built on it.
//!
//! The queues are bounded (a few items in flight per worker whatever the input's
//! size). The ordered side stops when it returns: the workers' sends then fail and they
//! end, and so does [`OrderedPool::send`]. A worker that panics ends its thread and the
//! ordered side's outputs (the item it held never comes, and waiting for it would keep
//! every later output in memory); [`OrderedPool::finish`] says so.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Items sent to the workers, in sending order.
pub struct OrderedPool<I, R> {
    work: Option<SyncSender<(u64, I)>>,
    seq: u64,
    workers: Vec<JoinHandle<()>>,
    ordered: Option<JoinHandle<R>>,
    /// A thread could not be started: the pool ends as if a worker had died.
    short: bool,
}

/// How a pool ended.
pub struct Finished<R> {
    /// What the ordered side returned (None: it panicked).
    pub ordered: Option<R>,
    /// Whether a worker panicked (or could not be started).
    pub worker_died: bool,
}

/// The outputs in sending order, as the ordered side reads them: each one as soon as
/// those sent before it are in.
pub struct InOrder<O> {
    rx: Receiver<(u64, O)>,
    waiting: BTreeMap<u64, O>,
    next: u64,
    died: Arc<AtomicBool>,
}

impl<O> Iterator for InOrder<O> {
    type Item = O;

    fn next(&mut self) -> Option<O> {
        loop {
            if let Some(o) = self.waiting.remove(&self.next) {
                self.next += 1;
                return Some(o);
            }
            if self.died.load(Ordering::Relaxed) {
                return None;
            }
            // Every sender gone with an item missing: a worker died holding it.
            let (seq, o) = self.rx.recv().ok()?;
            self.waiting.insert(seq, o);
        }
    }
}

impl<I: Send + 'static, R: Send + 'static> OrderedPool<I, R> {
    /// `workers` threads (at least one) named `name-N`, worker `i` made by `make(i)`: it
    /// turns each item into an output, or None to end its thread. `consume` reads the
    /// outputs in order on a thread named `name-ordered`; what it returns is `finish`'s.
    /// `depth` items per worker wait in each queue.
    pub fn new<O, W, C>(
        name: &str,
        workers: usize,
        depth: usize,
        mut make: impl FnMut(usize) -> W,
        consume: C,
    ) -> Self
    where
        O: Send + 'static,
        W: FnMut(I) -> Option<O> + Send + 'static,
        C: FnOnce(InOrder<O>) -> R + Send + 'static,
    {
        let workers = workers.max(1);
        let (work_tx, work_rx) = sync_channel::<(u64, I)>(workers * depth.max(1));
        let (done_tx, done_rx) = sync_channel::<(u64, O)>(workers * depth.max(1));
        let work_rx = Arc::new(Mutex::new(work_rx));
        let died = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..workers)
            .filter_map(|i| {
                let (rx, tx) = (work_rx.clone(), done_tx.clone());
                let (work, dying) = (make(i), Dying(died.clone()));
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || serve(work, rx, tx, dying))
                    .ok()
            })
            .collect();
        drop(done_tx);
        let ordered = std::thread::Builder::new()
            .name(format!("{name}-ordered"))
            .spawn(move || {
                consume(InOrder {
                    rx: done_rx,
                    waiting: BTreeMap::new(),
                    next: 0,
                    died,
                })
            })
            .ok();
        OrderedPool {
            work: Some(work_tx),
            seq: 0,
            short: threads.len() < workers,
            workers: threads,
            ordered,
        }
    }

    /// Sends the next item; false when the pool no longer takes any (the ordered side
    /// stopped, or no worker is left).
    pub fn send(&mut self, item: I) -> bool {
        let sent = (self.work.as_ref()).is_some_and(|w| w.send((self.seq, item)).is_ok());
        self.seq += 1;
        sent
    }

    /// Closes the queue, waits for the workers and then for the ordered side.
    pub fn finish(mut self) -> Finished<R> {
        self.end()
    }

    fn end(&mut self) -> Finished<R> {
        drop(self.work.take());
        let mut worker_died = self.short;
        for w in self.workers.drain(..) {
            worker_died |= w.join().is_err();
        }
        let ordered = self.ordered.take().and_then(|o| o.join().ok());
        Finished { ordered, worker_died }
    }
}

impl<I, R> Drop for OrderedPool<I, R> {
    /// A pool dropped unfinished still ends its threads: the queue closes, and each
    /// worker ends once the queue is empty.
    fn drop(&mut self) {
        drop(self.work.take());
    }
}

/// Marks the pool's workers dead when the thread holding it unwinds.
struct Dying(Arc<AtomicBool>);

impl Drop for Dying {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// A worker's loop: items until the queue closes, the ordered side stops or the work
/// says no more.
fn serve<I, O>(
    mut work: impl FnMut(I) -> Option<O>,
    rx: Arc<Mutex<Receiver<(u64, I)>>>,
    tx: SyncSender<(u64, O)>,
    _dying: Dying,
) {
    loop {
        let next = rx.lock().map(|r| r.recv());
        let Ok(Ok((seq, item))) = next else { break };
        let Some(out) = work(item) else { break };
        if tx.send((seq, out)).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs come back in sending order whatever order the workers finish in.
    #[test]
    fn outputs_come_back_in_sending_order() {
        let mut pool = OrderedPool::new(
            "test",
            4,
            2,
            |_| {
                |i: u64| {
                    // Later items mostly finish first.
                    std::thread::sleep(std::time::Duration::from_micros((50 - i % 50) * 20));
                    Some(i * 2)
                }
            },
            |outs: InOrder<u64>| outs.collect::<Vec<_>>(),
        );
        for i in 0..200 {
            assert!(pool.send(i));
        }
        let f = pool.finish();
        assert!(!f.worker_died);
        assert_eq!(f.ordered, Some((0..200).map(|i| i * 2).collect()));
    }

    /// The ordered side stopping ends the sends and the workers, without a hang.
    #[test]
    fn an_ordered_side_that_stops_ends_the_pool() {
        let mut pool = OrderedPool::new(
            "test",
            2,
            1,
            |_| |i: u64| Some(i),
            |mut outs: InOrder<u64>| outs.next(),
        );
        let mut refused = false;
        for i in 0..10_000 {
            if !pool.send(i) {
                refused = true;
                break;
            }
        }
        assert!(refused);
        assert_eq!(pool.finish().ordered, Some(Some(0)));
    }

    /// A worker that panics is reported, and ends the outputs (those received in order
    /// before it still come).
    #[test]
    fn a_worker_that_panics_is_reported() {
        let mut pool = OrderedPool::new(
            "test",
            1,
            1,
            |_| {
                |i: u64| {
                    assert!(i != 3, "item 3");
                    Some(i)
                }
            },
            |outs: InOrder<u64>| outs.collect::<Vec<_>>(),
        );
        for i in 0..6 {
            pool.send(i);
        }
        let f = pool.finish();
        assert!(f.worker_died);
        let out = f.ordered.expect("the ordered side ended");
        assert!([0, 1, 2].starts_with(&out), "{out:?}");
    }

    /// A dead worker's item never comes: the ordered side stops instead of keeping every
    /// later output while it waits, and the pool takes no more items.
    #[test]
    fn a_dead_worker_stops_the_pool_taking_items() {
        let mut pool = OrderedPool::new(
            "test",
            2,
            1,
            |_| {
                |i: u64| {
                    assert!(i != 0, "item 0");
                    Some(i)
                }
            },
            |outs: InOrder<u64>| outs.count(),
        );
        let taken = (0..100_000u64).take_while(|&i| pool.send(i)).count();
        assert!(taken < 100_000, "every item taken");
        let f = pool.finish();
        assert!(f.worker_died);
        assert_eq!(f.ordered, Some(0));
    }
}
