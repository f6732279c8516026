//! What `diff` keeps of each game datagram of one capture: a few words each (time,
//! frame, flow, sequence, fragment, a hash of the payload), handed on in batches to the
//! matcher that reads two captures side by side. The sink knows no thread: the run
//! gives it the function that hands a batch on.

use gpcap_engine::{FileEnd, Flow, FlowEnd, FlowId, Kind, PacketEvent, Sink, SinkError, Summary};

/// Bytes of the UDP payload the identity hash reads: the header (sequence, fragment,
/// checksum) and the start of the body. A capture cut by a small snaplen at one point
/// still matches the other's, and hashing costs the same for every datagram.
pub const HASHED_BYTES: usize = 128;

/// Sightings handed on at once.
pub const BATCH: usize = 2048;

/// One game datagram as seen at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sighting {
    pub ts_ns: i64,
    pub frame: u64,
    /// The datagram's identity: a hash of its first [`HASHED_BYTES`] and its size. NAT
    /// rewrites IP and UDP headers, never this.
    pub hash: u64,
    /// The protocol's sequence, when the datagram has one.
    pub seq: Option<u64>,
    /// Game-level fragment: (id, count).
    pub fragment: Option<(u16, u16)>,
    /// The engine's flow number at this point.
    pub flow: u32,
    pub size: u32,
}

/// A flow's sequence analysis at the end of the capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowGaps {
    pub received: u64,
    pub lost: u64,
}

/// What the sink hands on, in capture order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A flow's first datagram follows: its number and addresses.
    Flow {
        index: u32,
        id: FlowId,
    },
    Datagram(Sighting),
    /// A datagram on the protocol's ports whose checksum failed (or too short to hold
    /// one): not matched, counted.
    Damaged {
        flow: Option<u32>,
    },
    /// A datagram of a flow past the engine's flow table.
    Untracked,
    /// A tracked flow's sequence gaps, at the end.
    Gaps {
        index: u32,
        gaps: FlowGaps,
    },
    /// The capture's first and last frame (any frame), at the end.
    Span {
        first_ns: i64,
        last_ns: i64,
        frames: u64,
    },
}

/// The identity hash of a payload of `size` bytes (of which `payload` was captured).
pub fn identity(payload: &[u8], size: u32) -> u64 {
    let head = &payload[..payload.len().min(HASHED_BYTES)];
    twox_hash::XxHash3_64::oneshot_with_seed(size as u64, head)
}

/// The sink: game datagrams into [`Seen`] batches, handed to `send` (which answers
/// `Flow::Stop` when nobody reads them any more).
pub struct Sightings<F: FnMut(&mut Vec<Seen>) -> Flow> {
    batch: Vec<Seen>,
    send: F,
    /// Flows announced, by the engine's flow number.
    announced: Vec<bool>,
    first_ns: Option<i64>,
    last_ns: i64,
    frames: u64,
    /// The run ends: the reader is gone.
    stopped: bool,
}

impl<F: FnMut(&mut Vec<Seen>) -> Flow> Sightings<F> {
    pub fn new(send: F) -> Self {
        Sightings {
            batch: Vec::with_capacity(BATCH),
            send,
            announced: Vec::new(),
            first_ns: None,
            last_ns: i64::MIN,
            frames: 0,
            stopped: false,
        }
    }

    fn push(&mut self, s: Seen) -> Flow {
        self.batch.push(s);
        if self.batch.len() >= BATCH {
            return self.flush();
        }
        Flow::Continue
    }

    fn flush(&mut self) -> Flow {
        if self.batch.is_empty() || self.stopped {
            return Flow::stop_if(self.stopped);
        }
        let f = (self.send)(&mut self.batch);
        self.batch.clear();
        self.stopped = f == Flow::Stop;
        f
    }

    fn datagram(&mut self, e: &PacketEvent<'_>, index: u32) -> Flow {
        let i = index as usize;
        if self.announced.len() <= i {
            self.announced.resize(i + 1, false);
        }
        if !self.announced[i]
            && let Some(id) = e.flow
        {
            self.announced[i] = true;
            if self.push(Seen::Flow { index, id }) == Flow::Stop {
                return Flow::Stop;
            }
        }
        let fragment = e.fragment.map(|f| {
            (
                f.id.min(u16::MAX as u32) as u16,
                f.count.min(u16::MAX as u32) as u16,
            )
        });
        self.push(Seen::Datagram(Sighting {
            ts_ns: e.ts_ns,
            frame: e.frame,
            hash: identity(e.payload, e.size),
            seq: e.sequence,
            fragment,
            flow: index,
            size: e.size,
        }))
    }
}

impl<F: FnMut(&mut Vec<Seen>) -> Flow> Sink for Sightings<F> {
    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.kind != Kind::Reassembled {
            self.frames += 1;
            self.first_ns.get_or_insert(e.ts_ns);
            self.last_ns = self.last_ns.max(e.ts_ns);
        }
        if e.kind != Kind::Game {
            return Ok(Flow::Continue);
        }
        Ok(match e.flow_index {
            None => self.push(Seen::Untracked),
            Some(_) if e.status.crc_failed() => self.push(Seen::Damaged { flow: e.flow_index }),
            Some(index) => self.datagram(e, index),
        })
    }

    fn end_file(&mut self, _file: u32, _end: &FileEnd) {}

    fn flow_end(&mut self, end: &FlowEnd) {
        let gaps = FlowGaps {
            received: end.seq.received,
            lost: end.seq.lost,
        };
        self.push(Seen::Gaps {
            index: end.index,
            gaps,
        });
    }

    fn finish(&mut self, _summary: &Summary) {
        let first_ns = self.first_ns.unwrap_or(0);
        let last_ns = self.last_ns.max(first_ns);
        self.push(Seen::Span {
            first_ns,
            last_ns,
            frames: self.frames,
        });
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_reads_the_head_and_the_size() {
        let long: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let mut other = long.clone();
        other[200] ^= 1;
        // Past the hashed head, a difference does not change the identity…
        assert_eq!(identity(&long, 300), identity(&other, 300));
        // …a cut by the snaplen past the head neither, the size does.
        assert_eq!(identity(&long[..150], 300), identity(&long, 300));
        assert_ne!(identity(&long, 300), identity(&long, 301));
        other[3] ^= 1;
        assert_ne!(identity(&long, 300), identity(&other, 300));
    }
}
