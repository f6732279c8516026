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
//! ```
//! let program = gpcap::load_definition("dissectors/article.kdl")?;
//! let report = gpcap::analyze(&["captures/article.pcap".into()], gpcap::Config::from_program(program), None)?;
//! println!("{} valid packets", report.validation.packets);
//! # Ok::<(), gpcap::Error>(())
//! ```
//!
//! `examples/` has a custom sink and a payload dissected from your own code
//! (`cargo run --example count_types`). Build without the command line with
//! `default-features = false` (add `export` for Parquet datasets, `tui` for the
//! terminal UI's model and drawing).
//!
//! # How it is built
//!
//! The pipeline, one module each, none of which prints:
//! [`capture`] (pcap/pcapng records) → [`decode`] (link/IP/UDP, IP defragmentation) →
//! [`validate`] (checksum, header, sequence numbers) → [`dissect`] (definitions run on the
//! shared [`bits`] reader) → [`engine`] (one event per frame and per reassembled packet)
//! → [`sinks`] (statistics and the report, the TUI's index, printers, writers), fed by
//! [`run`] (serial, pipelined or sharded runs over captures, chosen there) →
//! presentation ([`present`] text and JSON, `tui` with the `tui` feature).
//! [`generate`] writes traffic from a definition; [`identify`] recovers protocol ids.
//! These modules are public for the `gpcap` binary and the tests; outside the surface
//! above they change without notice. Their own submodules are crate-private unless
//! something outside the crate names them: what the binary or a test needs is
//! re-exported by the parent module (`capture::PcapWriter`, `generate::PacketWriter`).

mod api;
pub mod bits;
pub mod capture;
pub mod decode;
pub mod decrypt;
pub mod dissect;
pub mod engine;
pub(crate) mod error;
pub mod filter;
pub mod generate;
pub mod identify;
pub mod live;
pub mod present;
pub mod run;
pub mod sinks;
#[cfg(feature = "tui")]
pub mod tui;
pub mod validate;

pub use api::{analyze, analyze_with_progress, compile_definition, dissect_payload, load_definition, run};
pub use capture::CaptureError;
pub use dissect::{
    DefinitionError, Dissection, Dissector, Fault, FaultKind, Field, Label, Program, Value, label_name,
};
pub use engine::{Config, FileEnd, Flow, FlowEnd, Kind, Needs, PacketEvent, Sink, Status, Summary};
pub use error::{Error, Thread};
pub use run::{FileOutcome, Merge, Mode, run_threads};
pub use sinks::analysis;
pub use sinks::analysis::{Report, Statistics};
