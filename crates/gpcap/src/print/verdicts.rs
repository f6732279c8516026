//! What the sequence and ack analyses said of a packet, in the words every output
//! uses: the tree's and the Info column's notes, the JSON's verdicts.

use gpcap_engine::ack_facts::{AckFacts, CopyVerdict, Settled};
use gpcap_engine::seq::SeqEvent;
use gpcap_engine::{Kind, PacketEvent};

/// A verdict in a sequence (a datagram's or a message's in its stream) as one word:
/// `new`, `gap` (sequences skipped just before it), `late`, `dup`.
pub(crate) fn verdict_word(e: SeqEvent) -> &'static str {
    match e {
        SeqEvent::Late => "late",
        SeqEvent::Duplicate => "dup",
        SeqEvent::New { gap } if gap > 0 => "gap",
        _ => "new",
    }
}

/// What the ack analysis said of a message's copy in its acked stream (None: no
/// analysis pass, or not a game packet of a flow).
pub fn message_verdict(
    acks: Option<&AckFacts>,
    e: &PacketEvent,
    s: &gpcap_engine::streams::StreamEvent,
) -> Option<CopyVerdict> {
    let flow = e.flow.filter(|_| e.is_game())?;
    Some(acks?.verdict_in_stream(flow, (s.stream, s.key), s.sequence, e.ts_ns))
}

/// What the ack analysis said of a datagram's own sequence (reliable.io's `role=sequence`
/// acked by the peer's `role=ack`), when it said anything.
pub(crate) fn datagram_verdict(acks: Option<&AckFacts>, e: &PacketEvent) -> Option<CopyVerdict> {
    let flow = e.flow.filter(|_| e.is_game())?;
    let v = acks?.verdict(flow, e.sequence?, e.ts_ns);
    (v.fate.is_some() || v.naked || v.copy.is_some()).then_some(v)
}

/// A copy's ack verdict in the filter's words: ` retransmission` (` spurious
/// retransmission`), ` naked`, then ` never_acked` or ` rtt 20.125ms` (acked after that
/// long; an ack that could not be timed says nothing).
pub fn ack_words(v: CopyVerdict) -> String {
    let mut w = String::new();
    match v.copy {
        Some(true) => w.push_str(" spurious retransmission"),
        Some(false) => w.push_str(" retransmission"),
        None => {}
    }
    if v.naked {
        w.push_str(" naked");
    }
    match v.fate {
        Some(Settled::NEVER) => w.push_str(" never_acked"),
        Some(us) if Settled::is_rtt(us) => w.push_str(&format!(" rtt {}ms", millis(us))),
        _ => {}
    }
    w
}

/// Microseconds as milliseconds, exactly (`20.125`).
pub(crate) fn millis(us: u32) -> String {
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// What the sequence analysis said of a datagram, as `analyze` counts it: ` late`,
/// ` dup`, or ` gap N` (N sequences skipped just before it).
pub fn seq_note(e: Option<SeqEvent>) -> String {
    match e {
        Some(SeqEvent::Late) => " late".into(),
        Some(SeqEvent::Duplicate) => " dup".into(),
        Some(SeqEvent::New { gap }) if gap > 0 => format!(" gap {gap}"),
        _ => String::new(),
    }
}

/// What a packet's first line notes: reassembled from fragments or from IP fragments.
pub(crate) fn note(e: &PacketEvent) -> Option<String> {
    match e.kind {
        Kind::Reassembled => Some(format!(
            "packet reassembled from {} fragments, completed by this frame",
            e.fragment_frames.len()
        )),
        _ if e.ip_fragments > 1 => Some(format!("reassembled from {} IP fragments", e.ip_fragments)),
        _ => None,
    }
}
