//! Dissector definitions (`dissectors/*.kdl`): the language, its compiler and the
//! interpreter that runs the compiled program on the shared bit reader.

pub mod compile;
pub mod diag;
pub mod exec;
pub mod expand;
pub mod expr;
pub mod leaves;
pub mod model;
pub mod paths;
pub mod plan;
pub mod prims;
pub mod program;
pub mod strings;

pub use compile::{compile, load};
pub use diag::{DefinitionError, render};
pub use exec::Dissector;
pub use model::{
    Dissection, Fault, FaultKind, Field, FragmentInfo, Label, MessageFragment, MessageInfo, ROOT, StreamSeq,
    Value,
};
pub use paths::{label_name, path_of};
pub use program::{Program, Role};
