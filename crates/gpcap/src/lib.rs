//! gpcap: a packet analyzer for the bitpacked UDP protocols of real-time games.
//!
//! # Using the library
//!
//! The surface below is what programs are meant to call; it is re-exported here and
//! stays put:
//!
//! - [`load_definition`] / [`compile_definition`]: a definition (`dissectors/*.kdl`)
//!   compiled into a [`Program`];
//! - [`dissect_payload`] (or a [`Dissector`] kept across payloads): one payload's
//!   [`Dissection`], every [`Field`] with its bit offset, width and [`Value`];
//! - [`run`]: captures through the engine into a [`Sink`] of your own, one
//!   [`PacketEvent`] per datagram and per reassembled packet; the sink says what it
//!   [`Needs`] (field trees) and when to stop ([`Flow`]);
//! - [`analyze`]: captures into the [`Report`] `gpcap analyze --json` prints, on every
//!   core (serial, pipelined or sharded: [`Mode`]; shards add up through [`Merge`]);
//! - [`Error`]: what failed, as typed values (a definition's mistakes, a capture's
//!   read error with its byte offset, an I/O failure).
//!
//! The engine's and the run's enums ([`Error`], [`Flow`], [`Kind`], [`Status`],
//! [`Mode`]) and the report's structs are `#[non_exhaustive]`: a new variant or figure
//! does not break a program that matches with a `_` arm and reads fields by name.
//! [`Error`] has the same variants whatever the features.
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
//! let program = gpcap::load_definition("dissectors/article.kdl")?;
//! let report = gpcap::analyze(&["captures/article.pcap".into()], gpcap::Config::from_program(program), None)?;
//! println!("{} valid packets", report.validation.packets);
//! # Ok::<(), gpcap::Error>(())
//! ```
//!
//! The repository's `examples/` (beside the `gpcap` binary) has a custom sink and a
//! payload dissected from your own code (`cargo run --example count_types`). Build with `default-features = false` for the
//! pipeline alone (add `export` for Parquet datasets, `tables` for the report's tables,
//! `crypto` for netcode.io's decryption, `live` for live capture); the terminal UI is the `gpcap-tui` crate above
//! this one, the command line the `gpcap` binary above both.
//!
//! # How it is built
//!
//! The pipeline, one module each, none of which prints:
//! [`capture`] (pcap/pcapng records) → [`decode`] (link/IP/UDP, IP defragmentation) →
//! [`validate`] (checksum, header, sequence numbers) → [`dissect`] (definitions run on the
//! shared [`bits`] reader) → the engine (one [`PacketEvent`] per frame and per
//! reassembled packet, into a [`Sink`]) → [`sinks`] (statistics and the report, the
//! TUI's index, printers, writers), fed by [`run`] (serial, pipelined or sharded runs
//! over captures, chosen there) → presentation ([`present`] text and JSON; the terminal UI in
//! `gpcap-tui`). [`generate`] writes traffic from a definition; [`identify`]
//! recovers protocol ids.
//!
//! The engine and the filter are private: what a caller needs of them is re-exported
//! here ([`Engine`] to feed frames of your own, [`Config`], [`Filter`]) or in a small
//! documented module ([`resolve`], [`layers`], [`reassembly`], [`limits`]); their
//! batches, prepared frames, joins and flow tables are not reachable from outside. The
//! other modules are public for the `gpcap` binary, the TUI and the tests; outside the surface
//! above they change without notice. Their own submodules are crate-private unless
//! something outside the crate names them: what the binary or a test needs is
//! re-exported by the parent module (`capture::PcapWriter`, `generate::PacketWriter`).

mod api;
pub use gpcap_decrypt as decrypt;
pub use gpcap_dissect as dissect;
use gpcap_engine as engine;
pub use gpcap_wire::{bits, capture, decode, validate};
pub(crate) mod error;
mod filter;
pub use gpcap_engine::identify;
pub use gpcap_generate as generate;
#[cfg(feature = "live")]
pub mod live;
pub mod present;
mod print;
pub mod run;
pub mod sinks;
pub mod wireshark;

pub use api::{analyze, analyze_with_progress, compile_definition, dissect_payload, load_definition, run};
pub use capture::CaptureError;
pub use dissect::{
    DefinitionError, Dissection, Dissector, Fault, FaultKind, Field, Label, Program, Value, label_name,
};
/// A consumer of the engine's events: one that stops the run at the tenth game packet.
/// A sink that can fail (a write) returns its error instead (a [`SinkError`]), and the
/// run ends with it ([`Error::Sink`]).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).expect("the repository");
/// use gpcap::{Flow, PacketEvent, Sink, SinkError};
/// /// Stops the run at the tenth game packet.
/// struct FirstTen(u32);
/// impl Sink for FirstTen {
///     fn packet(&mut self, e: &PacketEvent<'_>) -> Result<Flow, SinkError> {
///         self.0 += e.is_game() as u32;
///         Ok(Flow::stop_if(self.0 >= 10))
///     }
/// }
/// let cfg = gpcap::Config::from_program(gpcap::load_definition("dissectors/article.kdl")?);
/// let mut s = FirstTen(0);
/// gpcap::run(&["captures/article.pcap".into()], cfg, &mut s)?;
/// assert_eq!(s.0, 10);
/// # Ok::<(), gpcap::Error>(())
/// ```
pub use engine::Sink;
pub use engine::{
    Config, Engine, FileEnd, Flow, FlowEnd, Kind, Needs, PacketEvent, SinkError, Status, Summary,
};
pub use error::{Error, Thread};
pub use filter::{Filter, FilterError};
pub use run::{FileOutcome, Merge, Mode, run_threads};
pub use sinks::analysis;
pub use sinks::analysis::{Report, Statistics};

/// Which protocol a run reads: from a definition or flags ([`Choice`](resolve::Choice)),
/// else identified from the traffic, and the [`Config`] that results.
pub mod resolve {
    pub use gpcap_engine::resolve::{Choice, Resolved, resolve};
}

/// Stacked definitions (`-d outer.kdl -d inner.kdl`): the layers a [`Config`] carries,
/// and the program whose fields a packet shows.
pub mod layers {
    pub use gpcap_engine::layers::{Stack, shown_program};
}

/// The articles' fragment reassembly, one flow's table at a time: the rules (id or
/// count out of range, count changed, oversize, short non-last, duplicate, stale) and
/// the memory budget, usable apart from the engine (the tests and the fuzz target
/// drive it fragment by fragment).
pub mod reassembly {
    pub use gpcap_engine::reassembly::{
        AttackCounters, BUFFER_ENTRIES, Budget, CountStats, FlowReassembly, FragmentIn, MAX_FRAGMENT_COUNT,
        Outcome,
    };
}

/// The engine's bounds: flows tracked, the memory of their state, frames a batch.
pub mod limits {
    pub use gpcap_engine::{BATCH_FRAMES, FLOW_STATE_BUDGET, MAX_FLOWS};
}
