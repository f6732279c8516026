//! Dissector definitions (`dissectors/*.kdl`): the language, its compiler and the
//! interpreter that runs the compiled program on the shared bit reader.

pub mod compile;
pub mod diag;
pub mod exec;
pub mod expand;
pub mod expr;
pub mod paths;
pub mod plan;
pub mod prims;
pub mod program;
pub mod strings;

pub use compile::{compile, load};
pub use diag::{DefinitionError, render};
pub use exec::{
    Dissection, Dissector, Fault, FaultKind, Field, FragmentInfo, Label, MessageFragment, MessageInfo, ROOT,
    StreamSeq, Value, label_name,
};
pub use program::{Program, Role};
