//! `stream_messages`: one row per message of a sequenced message stream, with the
//! verdicts `dissect --json` gives it in `streams[]` — its stream's sequence analysis
//! (`new`, `gap`, `late`, `dup`) and, in an acked stream, what the ack analysis settled
//! of this copy (acked, round trip, NAKed, retransmission, spurious). Keyed as the type
//! tables are, by `(capture, frame, reassembled)`, and by `message`, the message's index
//! in its packet.

use super::columns::Refill;
use super::packets::append_flow;
use arrow_array::ArrayRef;
use arrow_array::builder::*;
use arrow_schema::{DataType, Field, Schema};
use gpcap_dissect::Program;
use gpcap_engine::ack_facts::{AckFacts, Settled};
use gpcap_engine::seq::SeqEvent;
use gpcap_engine::{Kind, PacketEvent};
use std::sync::Arc;

/// The table's name.
pub(super) const TABLE: &str = "stream_messages";

/// The rows not yet handed to the table's writer.
pub(super) struct StreamRows {
    program: Arc<Program>,
    acks: Option<Arc<AckFacts>>,
    frame: UInt64Builder,
    reassembled: BooleanBuilder,
    message: UInt16Builder,
    src_ip: StringBuilder,
    src_port: UInt16Builder,
    dst_ip: StringBuilder,
    dst_port: UInt16Builder,
    stream: StringBuilder,
    key: StringBuilder,
    sequence: UInt64Builder,
    verdict: StringBuilder,
    gap: UInt64Builder,
    acked: BooleanBuilder,
    rtt_ms: Float64Builder,
    retransmission: BooleanBuilder,
    spurious: BooleanBuilder,
    naked: BooleanBuilder,
}

impl StreamRows {
    /// Rows for `program`'s streams; none when it declares no stream.
    pub fn new(program: Option<&Arc<Program>>) -> Option<StreamRows> {
        let program = program.filter(|p| !p.params.streams.is_empty())?.clone();
        Some(StreamRows {
            program,
            acks: None,
            frame: Default::default(),
            reassembled: Default::default(),
            message: Default::default(),
            src_ip: Default::default(),
            src_port: Default::default(),
            dst_ip: Default::default(),
            dst_port: Default::default(),
            stream: Default::default(),
            key: Default::default(),
            sequence: Default::default(),
            verdict: Default::default(),
            gap: Default::default(),
            acked: Default::default(),
            rtt_ms: Default::default(),
            retransmission: Default::default(),
            spurious: Default::default(),
            naked: Default::default(),
        })
    }

    /// The ack analysis' facts of the capture (a pass of their own, run first): without
    /// them the ack columns are null.
    pub fn set_acks(&mut self, acks: Arc<AckFacts>) {
        self.acks = Some(acks);
    }

    /// Whether any of the program's streams is acked (then the facts are worth a pass).
    pub fn acked(program: Option<&Program>) -> bool {
        program.is_some_and(|p| p.params.streams.iter().any(|d| d.acked))
    }

    pub fn schema() -> Schema {
        let f = |name, t, null| Field::new(name, t, null);
        Schema::new(vec![
            f("frame", DataType::UInt64, false),
            f("reassembled", DataType::Boolean, false),
            f("message", DataType::UInt16, false),
            f("src_ip", DataType::Utf8, true),
            f("src_port", DataType::UInt16, true),
            f("dst_ip", DataType::Utf8, true),
            f("dst_port", DataType::UInt16, true),
            f("stream", DataType::Utf8, false),
            f("key", DataType::Utf8, false),
            f("sequence", DataType::UInt64, false),
            f("verdict", DataType::Utf8, false),
            f("gap", DataType::UInt64, true),
            f("acked", DataType::Boolean, true),
            f("rtt_ms", DataType::Float64, true),
            f("retransmission", DataType::Boolean, true),
            f("spurious", DataType::Boolean, true),
            f("naked", DataType::Boolean, true),
        ])
    }

    /// Appends a row per message of `e` in a stream.
    pub fn add(&mut self, e: &PacketEvent) {
        for s in e.stream_events() {
            let def = self.program.params.streams.get(s.stream as usize);
            self.frame.append_value(e.frame);
            self.reassembled.append_value(e.kind == Kind::Reassembled);
            self.message.append_value(s.message);
            append_flow(
                [&mut self.src_ip, &mut self.dst_ip],
                [&mut self.src_port, &mut self.dst_port],
                e.flow,
            );
            self.stream.append_value(def.map_or("", |d| d.name.as_str()));
            if let Some(d) = def {
                let _ = gpcap_engine::streams::write_key(&mut self.key, d, s.key);
            }
            self.key.append_value("");
            self.sequence.append_value(s.sequence);
            self.verdict.append_value(crate::print::verdict_word(s.event));
            self.gap.append_option(match s.event {
                SeqEvent::New { gap } => Some(u64::from(gap)),
                _ => None,
            });
            // In an acked stream, once the facts are known: false where not so.
            let acked = def.is_some_and(|d| d.acked);
            let said = crate::print::message_verdict(self.acks.as_deref(), e, s).filter(|_| acked);
            let fate = said.and_then(|v| v.fate);
            self.acked.append_option(fate.map(|us| us != Settled::NEVER));
            let rtt = fate.filter(|&us| Settled::is_rtt(us));
            self.rtt_ms.append_option(rtt.map(|us| f64::from(us) / 1000.0));
            self.retransmission.append_option(said.map(|v| v.copy.is_some()));
            self.spurious.append_option(said.map(|v| v.copy == Some(true)));
            self.naked.append_option(said.map(|v| v.naked));
        }
    }

    pub fn full(&self) -> bool {
        self.frame.len() >= super::BATCH_ROWS
    }

    pub fn is_empty(&self) -> bool {
        self.frame.len() == 0
    }

    /// Rows not yet handed on.
    pub fn frame_count(&self) -> u64 {
        self.frame.len() as u64
    }

    /// The rows so far as the table's columns; the builders start again.
    pub fn finish(&mut self) -> Vec<ArrayRef> {
        vec![
            Arc::new(self.frame.refill()),
            Arc::new(self.reassembled.refill()),
            Arc::new(self.message.refill()),
            Arc::new(self.src_ip.refill()),
            Arc::new(self.src_port.refill()),
            Arc::new(self.dst_ip.refill()),
            Arc::new(self.dst_port.refill()),
            Arc::new(self.stream.refill()),
            Arc::new(self.key.refill()),
            Arc::new(self.sequence.refill()),
            Arc::new(self.verdict.refill()),
            Arc::new(self.gap.refill()),
            Arc::new(self.acked.refill()),
            Arc::new(self.rtt_ms.refill()),
            Arc::new(self.retransmission.refill()),
            Arc::new(self.spurious.refill()),
            Arc::new(self.naked.refill()),
        ]
    }
}
