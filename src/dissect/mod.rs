//! Dissector definitions (`dissectors/*.kdl`): the language, its compiler and the
//! interpreter that runs the compiled program on the shared bit reader.

pub(crate) mod compile;
pub(crate) mod diag;
pub(crate) mod exec;
pub(crate) mod expand;
pub(crate) mod expr;
pub(crate) mod leaves;
pub(crate) mod model;
pub mod native;
pub(crate) mod paths;
pub(crate) mod plan;
pub(crate) mod prims;
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
