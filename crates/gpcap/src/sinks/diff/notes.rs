//! What the comparison could not measure, and why, and how it measured, as data: the
//! clocks' reason and method, a direction's missing delay and pairing, the report's
//! notes and matching. `present` says them in words (JSON carries the sentence).

use super::pair::PairedBy;
use gpcap_engine::FlowId;

/// How the clocks were related.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockMethod {
    /// One clock (`--clock same`): delays as stamped.
    Same,
    /// The lower envelope of both directions' delays.
    LowerEnvelope,
}

/// How a direction's flows were paired: the flows at A and B, on what evidence, and the
/// sequences seen at both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pairing {
    pub ids: [FlowId; 2],
    pub by: PairedBy,
    pub first: Option<u64>,
    pub last: Option<u64>,
}

/// How datagrams are matched: by their identity (the one way there is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matching;

/// Why the clocks were not fitted.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockReason {
    /// Too few datagrams seen at both points to fit anything.
    TooFew { samples: u64 },
    /// The delays drift by `ppm`, beyond any clock's skew (`at_bound`: the fit hit its
    /// bound, so the drift is more than that): a clock stepped or was slewed.
    Drift { ppm: f64, at_bound: bool },
    /// The delays' floor moves by `ms` across the capture: a stepped clock or a new route.
    FloorMoves { ms: f64 },
}

/// Why a direction has no delay, or what its delay is measured above.
#[derive(Debug, Clone, PartialEq)]
pub enum DelayNote {
    /// The clocks were not fitted.
    NotFitted(ClockReason),
    /// No datagram of the direction was seen at both points.
    NoneAtBoth,
    /// Traffic one way only: delays above the direction's floor.
    AboveFloor,
}

/// A note a reader must see.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// The traffic goes one way only: the offset cannot be told from the fixed delay.
    OneWayOnly,
    /// Two flows share their addresses but no datagram.
    NoCommonDatagram { a: FlowId, b: FlowId },
    /// Datagrams of `flow` seen downstream only, between datagrams both saw.
    DownstreamOnly { flow: FlowId, datagrams: u64 },
    /// Datagrams that left point `point`'s matching window early (it was full).
    EvictedEarly { point: &'static str, datagrams: u64 },
}
