//! What `gpcap diff` could not measure, in words: the text report, the diff view and the
//! JSON's `reason`, `delay_note` and `notes` strings, made from the report's values.

use crate::sinks::diff::clock::MAX_SKEW_PPM;
use crate::sinks::diff::{ClockReason, DelayNote, Note};
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

// JSON carries each as its sentence, as it always has.
as_sentence!(ClockReason, DelayNote, Note);
