//! Dissector definitions (`dissectors/*.kdl`): the language, its compiler and the
//! interpreter that runs the compiled program on the shared bit reader.
//!
//! A crate of its own above `gpcap-wire` (the bit reader and the checksums it names as
//! `bits` and `validate`): nothing here can reach the engine, a sink or a report. The
//! modules the library above names (`program`, `paths`, `plan`, `leaves`, …) are public;
//! the compiler and the interpreter are reached through the re-exports below.

use gpcap_wire::{bits, validate};

pub(crate) mod compile;
pub(crate) mod diag;
pub(crate) mod exec;
pub(crate) mod expand;
pub mod expr;
pub mod leaves;
pub(crate) mod model;
pub mod native;
pub mod paths;
pub mod plan;
pub mod prims;
pub mod program;
pub mod source;
pub(crate) mod strings;

pub use compile::{compile, describe, load};
pub use diag::{DefinitionError, render};
pub use exec::Dissector;
pub use leaves::LeafLog;
pub use model::{
    AckItem, AckKind, Dissection, Fault, FaultKind, Field, FragmentInfo, Label, MAX_ACK_ITEMS,
    MAX_MESSAGE_STREAMS, MessageFragment, MessageInfo, ROOT, RunPart, StreamSeq, Value,
};
pub use paths::{Holds, PathInfo, catalog, label_name, path_of};
pub use program::{Program, Role};
