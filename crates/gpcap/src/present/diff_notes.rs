//! What `gpcap diff` could not measure, in words: the text report, the diff view and the
//! JSON's `reason`, `delay_note` and `notes` strings, made from the report's values.

use crate::sinks::diff::clock::MAX_SKEW_PPM;
use crate::sinks::diff::pair::PairedBy;
use crate::sinks::diff::{ClockMethod, ClockReason, DelayNote, Matching, Note, Pairing};
use std::fmt;

impl fmt::Display for ClockReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockReason::TooFew { samples } => write!(
                f,
                "{} seen at both points: too few to fit the clocks",
                super::count(*samples, "datagram")
            ),
            ClockReason::Drift { ppm, at_bound } => write!(
                f,
                "the delays drift by {}{ppm:.0} ppm, beyond any clock's {MAX_SKEW_PPM:.0}: a clock stepped or was slewed during the capture; no delay is given",
                if *at_bound { "more than " } else { "" },
            ),
            ClockReason::FloorMoves { ms } => write!(
                f,
                "the delays' floor moves by {ms:.1} ms across the capture: a clock stepped, or the route changed; no line fits the clocks, so no delay is given"
            ),
        }
    }
}

impl fmt::Display for DelayNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DelayNote::NotFitted(why) => why.fmt(f),
            DelayNote::NoneAtBoth => f.write_str("no datagram was seen at both points"),
            DelayNote::AboveFloor => f.write_str(
                "delays above this direction's floor: with traffic one way only the clocks' offset cannot be told from the path's fixed delay (--clock same when the captures share a clock)",
            ),
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::OneWayOnly => f.write_str(
                "the traffic goes one way only: the clocks' offset cannot be told apart from the path's fixed delay, so delays are given above each direction's floor (--clock same when the captures share a clock)",
            ),
            Note::NoCommonDatagram { a, b } => write!(
                f,
                "{a} at A and {b} at B share their addresses but no datagram: not the same traffic"
            ),
            Note::DownstreamOnly { flow, datagrams } => write!(
                f,
                "{flow}: {} seen downstream only, between datagrams both saw: missed by the upstream capture, altered on the way, or delayed beyond the matching window",
                super::count(*datagrams, "datagram")
            ),
            Note::EvictedEarly { point, datagrams } => write!(
                f,
                "{point}: {} left the matching window early (it was full): their copies may have been missed",
                super::count(*datagrams, "datagram")
            ),
        }
    }
}

impl fmt::Display for ClockMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClockMethod::Same => "one clock (--clock same): delays as stamped, no offset or skew removed",
            ClockMethod::LowerEnvelope => {
                "lower envelope of both directions' delays (linear program, Moon et al. 1999): one skew for every direction, the offset split from the fixed delay by taking the fixed delay the same both ways"
            }
        })
    }
}

/// Which ends NAT rewrote, on what evidence.
impl fmt::Display for Pairing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b] = self.ids;
        match (a.src == b.src, a.dst == b.dst) {
            (true, true) => write!(f, "the same addresses and ports at both points")?,
            (true, false) => write!(
                f,
                "NAT: the destination {} at A is {} at B, the source kept",
                a.dst, b.dst
            )?,
            (false, true) => write!(
                f,
                "NAT: the source {} at A is {} at B, the destination kept",
                a.src, b.src
            )?,
            (false, false) if a.src.port() == b.src.port() && a.dst.port() == b.dst.port() => {
                write!(f, "both addresses rewritten, the ports kept")?
            }
            (false, false) => write!(f, "both ends rewritten")?,
        }
        if let PairedBy::SharedDatagrams(n) = self.by {
            write!(f, "; paired by {n} identical datagrams (sequence and payload)")?;
        }
        if let (Some(first), Some(last)) = (self.first, self.last) {
            write!(f, ", sequences {first}–{last} at both")?;
        }
        Ok(())
    }
}

impl fmt::Display for Matching {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("each datagram by its identity: its sequence and payload together (a hash of the UDP payload's first 128 bytes and its size, which NAT leaves alone); copies of one identity at one point are duplicates when the protocol has a sequence, distinct datagrams matched in order when it has none")
    }
}

// JSON carries each as its sentence, as it always has.
as_sentence!(ClockMethod, ClockReason, DelayNote, Matching, Note, Pairing);
