//! The Streams view's drill-down: one stream's messages, each with its verdict in its
//! stream and, where the definition acks the stream, the ack analysis' — the words of
//! `dissect --brief` and the filters — read on a thread of its own (the ack pass, then
//! the engine over the capture), so that input never waits on it.

use gpcap::present::{ack_words, message_verdict, seq_note};
use gpcap::run::{Until, run_files};
use gpcap_dissect::Program;
use gpcap_engine::ack_facts::AckFacts;
use gpcap_engine::{Config, Flow, FlowId, Needs, PacketEvent, Sink, SinkError};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};

/// Messages listed (those past it are counted): a stream of a long capture has millions.
pub const MAX_MESSAGES: usize = 100_000;

/// One message of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamMessage {
    pub frame: u64,
    /// Its index in the datagram.
    pub message: u16,
    pub sequence: u64,
    /// `new`, `gap 2`, `late`, `dup`, then the ack analysis' words (`retransmission`,
    /// `spurious retransmission`, `naked`, `never_acked`, `rtt 9.803ms`).
    pub verdict: String,
}

type Read = Result<(Vec<StreamMessage>, u64), String>;

/// A stream's messages: being read, read, or why not.
pub struct Messages {
    /// The stream as the Streams view names it: `push conv=7 A → B`.
    pub title: String,
    pub rows: Vec<StreamMessage>,
    /// Messages past [`MAX_MESSAGES`], not listed.
    pub more: u64,
    pub error: Option<String>,
    pub table: super::app::TableState,
    reading: Option<Receiver<Read>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Messages {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Messages {
    /// Starts reading the messages of stream `name` with key `key` sent on `flow`.
    pub fn start(path: PathBuf, cfg: Config, flow: FlowId, name: String, key: String) -> Messages {
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let title = format!("{name} {key} {} → {}", flow.src, flow.dst);
        std::thread::spawn(move || {
            let _ = tx.send(read(path, cfg, flow, name, key, &flag));
        });
        Messages {
            title,
            rows: Vec::new(),
            more: 0,
            error: None,
            table: Default::default(),
            reading: Some(rx),
            stop,
        }
    }

    /// Takes the messages once read.
    pub fn poll(&mut self) {
        let Some(rx) = &self.reading else { return };
        let Ok(out) = rx.try_recv() else { return };
        self.reading = None;
        match out {
            Ok((rows, more)) => (self.rows, self.more) = (rows, more),
            Err(e) => self.error = Some(e),
        }
    }

    pub fn reading(&self) -> bool {
        self.reading.is_some()
    }
}

fn read(path: PathBuf, cfg: Config, flow: FlowId, name: String, key: String, stop: &AtomicBool) -> Read {
    let Some(program) = cfg.program.clone() else {
        return Err("no definition: no message streams".into());
    };
    let acked = program.params.streams.iter().any(|d| d.acked);
    let facts = match acked {
        true => Some(
            gpcap::run::scans::ack_facts(std::slice::from_ref(&path), cfg.clone())
                .map_err(|e| e.to_string())?,
        ),
        false => None,
    };
    let mut sink = Collect {
        program,
        facts,
        flow,
        name,
        key,
        known: Vec::new(),
        rows: Vec::new(),
        more: 0,
    };
    let stopped = || stop.load(Ordering::Relaxed);
    run_files(&[path], cfg, &mut Until::new(&mut sink, &stopped), &mut |_, _| {})
        .map_err(|e| e.to_string())?;
    Ok((sink.rows, sink.more))
}

/// The sink that keeps the stream's messages.
struct Collect {
    program: Arc<Program>,
    facts: Option<AckFacts>,
    flow: FlowId,
    name: String,
    key: String,
    /// Streams and keys of the flow met so far, and whether each is the one asked for.
    known: Vec<((u8, [i64; 2]), bool)>,
    rows: Vec<StreamMessage>,
    more: u64,
}

impl Collect {
    fn is_it(&mut self, id: (u8, [i64; 2])) -> bool {
        if let Some(&(_, yes)) = self.known.iter().find(|(k, _)| *k == id) {
            return yes;
        }
        let yes = (self.program.params.streams.get(id.0 as usize))
            .is_some_and(|d| d.name == self.name && gpcap_engine::streams::key_text(d, id.1) == self.key);
        // A bounded memory of keys: a flow of many keys asks again past it.
        if self.known.len() < 4096 {
            self.known.push((id, yes));
        }
        yes
    }
}

impl Sink for Collect {
    fn needs(&self) -> Needs {
        Needs {
            fields: true,
            layers: None,
        }
    }

    fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        if e.flow != Some(self.flow) || !e.is_game() {
            return Ok(Flow::Continue);
        }
        for s in e.stream_events() {
            if !self.is_it((s.stream, s.key)) {
                continue;
            }
            if self.rows.len() >= MAX_MESSAGES {
                self.more += 1;
                continue;
            }
            let seq = seq_note(Some(s.event));
            let acks = message_verdict(self.facts.as_ref(), e, s).map(ack_words);
            let verdict = format!(
                "{}{}",
                if seq.is_empty() { "new" } else { seq.trim_start() },
                acks.unwrap_or_default()
            );
            self.rows.push(StreamMessage {
                frame: e.frame,
                message: s.message,
                sequence: s.sequence,
                verdict,
            });
        }
        Ok(Flow::Continue)
    }
}
