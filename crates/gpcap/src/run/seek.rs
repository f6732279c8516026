//! Seeking: the engine's event for one row of a capture, as a run with keys and inner
//! layers emits it. Decryption learns keys from earlier connection requests and inner
//! layers reassemble across frames, so the row is read by replaying the capture through
//! the same engine as `dissect` up to it (forward from the last row read; going back,
//! from the nearest copy of the engine kept on the way). The TUI's tree of a packet's
//! inner layers reads its rows from here.

use gpcap_dissect::Dissection;
use gpcap_engine::carried::Carried;
use gpcap_engine::{Config, Engine, Flow, PacketEvent, Sink, SinkError};
use gpcap_wire::capture::CaptureReader;
use std::path::PathBuf;

/// What the replay read for one row.
pub struct Replayed {
    /// The payload as the tree reads it (the plaintext of a decrypted datagram).
    pub payload: Vec<u8>,
    pub tree: Option<Dissection>,
    pub carried: Vec<Carried>,
}

/// An engine over the capture, positioned after the last row it read, and copies of it
/// taken on the way, so that going back starts from the nearest one before the row.
pub struct Replay {
    path: PathBuf,
    cfg: Config,
    at: Option<(CaptureReader, Engine)>,
    /// Events the engine has emitted (rows, in the index's numbering).
    position: u32,
    /// Frames the engine has read.
    frames: u64,
    checkpoints: Vec<Checkpoint>,
    /// Rows between checkpoints (doubled when there are too many).
    every: u32,
}

/// The engine as it was after `frames` frames, `position` rows.
struct Checkpoint {
    position: u32,
    frames: u64,
    engine: Engine,
    bytes: usize,
}

/// Checkpoints kept at most, and the state they may hold between them.
const CHECKPOINTS: usize = 32;
const CHECKPOINT_BYTES: usize = 256 << 20;

impl Replay {
    pub fn new(path: PathBuf, cfg: Config) -> Self {
        Replay {
            path,
            cfg,
            at: None,
            position: 0,
            frames: 0,
            checkpoints: Vec::new(),
            every: 4096,
        }
    }

    /// Copies of the engine every `rows` rows (at first; 4,096 unless set).
    pub fn every(mut self, rows: u32) -> Self {
        self.every = rows.max(1);
        self
    }

    /// The event of `row` as the engine emits it, or why it cannot be read.
    pub fn row(&mut self, row: u32) -> Result<Option<Replayed>, String> {
        if row < self.position || self.at.is_none() {
            self.resume(row)?;
        }
        let Some((reader, engine)) = self.at.as_mut() else {
            return Ok(None);
        };
        let mut catch = Catch {
            want: row,
            position: &mut self.position,
            got: None,
        };
        while catch.got.is_none() {
            if *catch.position >= self.checkpoints.last().map_or(0, |c| c.position) + self.every {
                keep(
                    &mut self.checkpoints,
                    &mut self.every,
                    *catch.position,
                    self.frames,
                    engine,
                );
            }
            match reader.next_frame() {
                Ok(Some(f)) => {
                    self.frames += 1;
                    engine.frame(&f, &mut catch).map_err(|e| e.to_string())?;
                }
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(catch.got)
    }

    /// Positions the engine at the nearest checkpoint at or before `row` (or the start):
    /// the frames before it are read again but not analyzed.
    fn resume(&mut self, row: u32) -> Result<(), String> {
        let mut r = CaptureReader::open(&self.path).map_err(|e| e.to_string())?;
        let (position, frames, engine) = match self.checkpoints.iter().rev().find(|c| c.position <= row) {
            Some(c) => (c.position, c.frames, c.engine.clone()),
            None => (0, 0, Engine::new(self.cfg.clone(), true)),
        };
        for _ in 0..frames {
            if r.next_frame().map_err(|e| e.to_string())?.is_none() {
                break;
            }
        }
        self.at = Some((r, engine));
        self.position = position;
        self.frames = frames;
        Ok(())
    }
}

/// Keeps a copy of `engine` at `position`; past the limits, every other one is dropped and
/// the spacing doubled.
fn keep(checkpoints: &mut Vec<Checkpoint>, every: &mut u32, position: u32, frames: u64, engine: &Engine) {
    let bytes = engine.state_bytes() + engine.reassembly_held();
    checkpoints.push(Checkpoint {
        position,
        frames,
        engine: engine.clone(),
        bytes,
    });
    while checkpoints.len() > CHECKPOINTS
        || checkpoints.iter().map(|c| c.bytes).sum::<usize>() > CHECKPOINT_BYTES
    {
        if checkpoints.len() <= 1 {
            checkpoints.clear();
            break;
        }
        let mut i = 0;
        checkpoints.retain(|_| {
            i += 1;
            i % 2 == 0
        });
        *every = every.saturating_mul(2);
    }
}

/// Counts events and keeps the one wanted.
struct Catch<'a> {
    want: u32,
    position: &'a mut u32,
    got: Option<Replayed>,
}

impl Sink for Catch<'_> {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if *self.position == self.want {
            self.got = Some(Replayed {
                payload: e.payload.to_vec(),
                tree: e.dissection.cloned(),
                carried: e.carried.to_vec(),
            });
        }
        *self.position = self.position.saturating_add(1);
        Ok(Flow::Continue)
    }
}
