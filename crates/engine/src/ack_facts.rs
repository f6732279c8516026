//! What the analysis settled, kept for the filters', `dissect`'s and the export's
//! verdicts: per captured sequence, found again by flow, sequence and time.

/// What the analysis settled for one captured sequence: its round trip, or that it was
/// never acked; that the peer NAKed it; each further copy of it. Kept only when asked
/// (the ack tracker's `keep_log`: the filters' and `dissect`'s verdicts), so that `analyze`
/// keeps nothing per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// When the copy the round trip is timed from was captured (a [`Note::Fate`]), the
    /// first copy's (a [`Note::Naked`]), or this copy's (a [`Note::Copy`]).
    pub sent_ns: i64,
    /// When the sequence's first copy was captured: which use of the number it is.
    pub first_ns: i64,
    /// Microseconds, [`Settled::NEVER`] or [`Settled::UNTIMED`] (a [`Note::Fate`]).
    pub rtt_us: u32,
    /// Its wire value (the sequence's own width).
    pub seq: u64,
    pub note: Note,
}

/// What a [`Settled`] says of its sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// Acked (after `rtt_us`, or untimed) or never acked.
    Fate,
    /// The peer NAKed it.
    Naked,
    /// A further copy, captured at `sent_ns` (resent, or duplicated on the way);
    /// `spurious`: after the capture saw its ack.
    Copy { spurious: bool },
}

impl Settled {
    pub const NEVER: u32 = u32::MAX;
    /// Acked, but no round trip could be taken (Karn, an echo of no captured copy).
    pub const UNTIMED: u32 = u32::MAX - 1;

    /// Whether `us` is a round trip (not NEVER nor UNTIMED).
    pub fn is_rtt(us: u32) -> bool {
        us < Settled::UNTIMED
    }
}

/// A message stream of a direction: its number in the definition and its key values.
pub type StreamId = (u8, [i64; 2]);

/// What the ack analysis settled for every captured sequence of a run, by direction: the
/// display filter's `never_acked` and `rtt`, known only once later packets were seen, so
/// found by a pass of their own before the filter's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AckFacts {
    /// By direction and wire sequence, in capture order (a sequence number recurs only
    /// after it wrapped).
    pub by_seq: hashbrown::HashMap<(crate::FlowId, u64), Vec<Fact>>,
    /// The same for message streams, by direction, stream, key and sequence.
    pub by_stream: hashbrown::HashMap<(crate::FlowId, StreamId, u64), Vec<Fact>>,
}

/// One [`Settled`] without its sequence (the map's key holds it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fact {
    pub sent_ns: i64,
    pub first_ns: i64,
    pub rtt_us: u32,
    pub note: Note,
}

/// What the ack analysis said of one copy of a sequence (a datagram's, or a message's in
/// its stream), for the filter's words and `dissect`'s verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyVerdict {
    /// Round trip in µs, [`Settled::NEVER`] or [`Settled::UNTIMED`]; None: not settled
    /// (not acked when the capture ended).
    pub fate: Option<u32>,
    /// The peer NAKed the sequence.
    pub naked: bool,
    /// This copy is a retransmission: Some(spurious).
    pub copy: Option<bool>,
}

impl AckFacts {
    pub fn add(&mut self, flow: crate::FlowId, log: Vec<Settled>) {
        for s in log {
            self.by_seq.entry((flow, s.seq)).or_default().push(Fact::of(&s));
        }
    }

    pub fn add_stream(&mut self, flow: crate::FlowId, stream: StreamId, log: Vec<Settled>) {
        for s in log {
            (self.by_stream.entry((flow, stream, s.seq)))
                .or_default()
                .push(Fact::of(&s));
        }
    }

    /// [`AckFacts::of`] for a message of `flow` with sequence `seq` in `stream`.
    pub fn of_stream(
        &self,
        flow: crate::FlowId,
        stream: (u8, [i64; 2]),
        seq: u64,
        ts_ns: i64,
    ) -> Option<u32> {
        latest(self.by_stream.get(&(flow, stream, seq))?, ts_ns)
    }

    /// The round trip in µs of the packet of `flow` with sequence `seq` seen at `ts_ns`
    /// ([`Settled::NEVER`]: never acked, [`Settled::UNTIMED`]: acked, not timed); None
    /// when it was not settled (acks unknown, or not acked yet when the capture ended).
    pub fn of(&self, flow: crate::FlowId, seq: u64, ts_ns: i64) -> Option<u32> {
        latest(self.by_seq.get(&(flow, seq))?, ts_ns)
    }

    /// Everything said of the copy of `seq` captured at `ts_ns` (a datagram's sequence).
    pub fn verdict(&self, flow: crate::FlowId, seq: u64, ts_ns: i64) -> CopyVerdict {
        verdict(self.by_seq.get(&(flow, seq)).map_or(&[], Vec::as_slice), ts_ns)
    }

    /// [`AckFacts::verdict`] for a message's sequence in `stream`.
    pub fn verdict_in_stream(
        &self,
        flow: crate::FlowId,
        stream: StreamId,
        seq: u64,
        ts_ns: i64,
    ) -> CopyVerdict {
        let v = self.by_stream.get(&(flow, stream, seq));
        verdict(v.map_or(&[], Vec::as_slice), ts_ns)
    }
}

impl Fact {
    pub fn of(s: &Settled) -> Fact {
        Fact {
            sent_ns: s.sent_ns,
            first_ns: s.first_ns,
            rtt_us: s.rtt_us,
            note: s.note,
        }
    }
}

/// The verdict of the latest use of a number at or before `ts_ns`.
pub fn latest(v: &[Fact], ts_ns: i64) -> Option<u32> {
    let mut at = None;
    for f in v.iter().filter(|f| f.note == Note::Fate) {
        if f.sent_ns <= ts_ns && at.is_none_or(|(t, _)| f.sent_ns >= t) {
            at = Some((f.sent_ns, f.rtt_us));
        }
    }
    at.map(|(_, rtt)| rtt)
}

/// What the facts of one number say of its copy at `ts_ns`: its use is the one whose
/// first copy is the latest at or before it.
pub fn verdict(v: &[Fact], ts_ns: i64) -> CopyVerdict {
    let first = v.iter().map(|f| f.first_ns).filter(|&t| t <= ts_ns).max();
    let of_use = |f: &&Fact| Some(f.first_ns) == first;
    CopyVerdict {
        fate: latest(v, ts_ns),
        naked: v.iter().filter(of_use).any(|f| f.note == Note::Naked),
        copy: v.iter().find_map(|f| match f.note {
            Note::Copy { spurious } if f.sent_ns == ts_ns => Some(spurious),
            _ => None,
        }),
    }
}
