//! Field paths, in one place: every path a definition can produce (`catalog`), a
//! field's path rendered from the tree (`render`), and a path a user wrote resolved to
//! steps and matched against a dissection (`steps`). The display filter, Info templates,
//! the compiler's checks, printers and the TUI all go through here.

mod catalog;
mod render;
mod steps;

pub(crate) use catalog::distance;
pub use catalog::{Holds, PathInfo, catalog, nearest};
pub(crate) use render::{ancestors, render_path};
pub use render::{label_name, path_of};
pub use steps::{Step, is_occurrence, steps, strip_indices};
