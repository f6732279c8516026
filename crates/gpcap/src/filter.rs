//! The display filter shared by the TUI's `/` bar, `gpcap dissect --filter` and live
//! capture: `type == scene`, `seq > 100`, `crc.fail`, `frag`, `reassembled`,
//! `size > 1200`, `flow 10.0.0.1:40000`, `src 10.0.0.1`, `dst 10.0.0.2:50000`,
//! `time > 5`, what the sequence analysis found (`late`, `dup`, `gap`, `gap > 3`) and the
//! ack analysis settled (`never_acked`, `rtt > 50`: after a pass of their own),
//! Wireshark's names (`ip.src`, `udp.dstport`, `frame.number`, `frame.time_relative`),
//! and any dissected field by its path (`scene.objects.at_rest == true`,
//! `input.weapon == railgun`, `chat.text contains "gg"`), combined with `&&`/`and`,
//! `||`/`or`, `!`/`not` and parentheses. Compiled once against the definition; it reads
//! the engine's [`PacketEvent`], the one packet model, so a flag it tests is the very
//! verdict `analyze` counted.
//!
//! A path names every occurrence of a field (`objects.position.x`: each object's), or one
//! (`objects[3].position.x`). As in Wireshark, a comparison holds when any occurrence
//! satisfies it and `!=` when none is equal (`!(a == b)`); `all PATH OP VALUE` asks every
//! occurrence (and at least one). Floats compare at their resolution: a compressed float
//! equals a value within half its step, an f32 equals the value rounded to f32.

use gpcap_dissect::paths::{Holds, PathInfo, Step, catalog, is_occurrence, nearest, steps, strip_indices};
use gpcap_dissect::{Dissection, FaultKind, Program, Value};
use gpcap_engine::ack_facts::{AckFacts, CopyVerdict, Settled};
use gpcap_engine::seq::SeqEvent;
use gpcap_engine::{Kind, PacketEvent};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

mod ast;
mod eval;
mod fields;
mod layers;
mod lex;
mod names;
mod parse;
mod path;
#[cfg(test)]
mod tests;
mod time;
mod wire;
use ast::*;
use eval::*;
pub use layers::Stacked;
use lex::*;
use names::*;
use parse::*;
pub use path::FieldPath;
use time::*;

/// A compiled filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    root: Node,
    pub text: String,
    /// It reads what only the engine knows (dissected fields, acks), not the TUI's index.
    needs_engine: bool,
    /// The first frame's time, for `time` (set by [`Filter::start`]).
    origin: Option<i64>,
    /// It reads `rtt` or `never_acked`: known only after the run ([`Filter::set_acks`]).
    needs_acks: bool,
    acks: Option<std::sync::Arc<AckFacts>>,
    /// The layers the filter names, to read them in each packet.
    stacked: Option<Stacked>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct FilterError {
    pub message: String,
    /// 1-based.
    pub column: usize,
}

impl Filter {
    /// Compiles `text` against the definition (type names, enums and field paths);
    /// without one, only the fields every packet has can be named.
    pub fn parse(text: &str, program: Option<&Program>) -> Result<Filter, FilterError> {
        Self::parse_in(text, program, &[])
    }

    /// As [`Filter::parse`], with the definitions stacked inside `program` (outermost
    /// first): `NAME.PATH` reads PATH in the datagrams of the layer named NAME.
    pub fn parse_stacked(
        text: &str,
        program: Option<&Arc<Program>>,
        layers: &[Arc<Program>],
    ) -> Result<Filter, FilterError> {
        let mut f = Self::parse_in(text, program.map(|p| &**p), layers)?;
        if let Some(outer) = program.filter(|_| f.root.names_layer()) {
            f.stacked = Some(Stacked {
                outer: outer.clone(),
                layers: layers.to_vec(),
            });
        }
        Ok(f)
    }

    fn parse_in(
        text: &str,
        program: Option<&Program>,
        layers: &[Arc<Program>],
    ) -> Result<Filter, FilterError> {
        if text.trim().is_empty() {
            return Ok(Filter::all());
        }
        let mut p = Parser {
            toks: tokenize(text)?,
            pos: 0,
            program,
            paths: program.map(catalog).unwrap_or_default(),
            layers: if program.is_some() { layers } else { &[] },
            needs_engine: false,
            needs_acks: false,
            len: text.chars().count(),
            depth: 0,
        };
        let root = p.or()?;
        if p.pos < p.toks.len() {
            return Err(p.err("unexpected text after the filter"));
        }
        Ok(Filter {
            root,
            text: text.to_string(),
            needs_engine: p.needs_engine,
            origin: None,
            needs_acks: p.needs_acks,
            acks: None,
            stacked: None,
        })
    }

    /// The filter reads `rtt` or `never_acked`, which the ack analysis settles only after
    /// later packets: give it [`Filter::set_acks`] from a pass of its own first
    /// ([`crate::run::scans::ack_facts`]).
    pub fn needs_acks(&self) -> bool {
        self.needs_acks
    }

    /// What the ack analysis' pass settled, when it was given.
    pub fn ack_facts(&self) -> Option<std::sync::Arc<AckFacts>> {
        self.acks.clone()
    }

    pub fn set_acks(&mut self, facts: std::sync::Arc<AckFacts>) {
        self.acks = Some(facts);
    }

    /// Sets the time `time` counts from: the first frame's, which every caller passes
    /// first (later calls change nothing).
    pub fn start(&mut self, first_ts_ns: i64) {
        self.origin.get_or_insert(first_ts_ns);
    }

    /// The filter reads dissected fields or acks: it needs the engine's field tree (the
    /// TUI's index holds neither).
    pub fn needs_engine(&self) -> bool {
        self.needs_engine
    }

    pub fn all() -> Filter {
        Filter {
            root: Node::True,
            text: String::new(),
            needs_engine: false,
            origin: None,
            needs_acks: false,
            acks: None,
            stacked: None,
        }
    }

    /// The verdict on `e` when no field tree or ack could change it (a field test of
    /// another packet type, a flag that settles an `&&`), `None` when it needs them: what
    /// spares a scan dissecting packets the filter cannot select. `e` is a game packet
    /// without its tree, whose packet type is known.
    pub fn decided(&self, e: &PacketEvent) -> Option<bool> {
        let cx = Context {
            origin: self.origin.unwrap_or(e.ts_ns),
            acks: self.acks.as_deref(),
            stacked: self.stacked.as_ref(),
        };
        decide(&self.root, e, &cx)
    }

    /// The filter reads an inner layer (`-d A -d B`, keys) somewhere.
    pub fn reads_layers(&self) -> bool {
        self.root.names_layer()
    }

    /// The filter reads the frame's own bytes (its headers, its lengths) somewhere.
    pub fn reads_frames(&self) -> bool {
        self.root.reads_frames()
    }

    pub fn is_all(&self) -> bool {
        self.root == Node::True
    }

    pub fn matches(&self, e: &PacketEvent) -> bool {
        let cx = Context {
            origin: self.origin.unwrap_or(e.ts_ns),
            acks: self.acks.as_deref(),
            stacked: self.stacked.as_ref(),
        };
        eval(&self.root, e, &cx)
    }
}
