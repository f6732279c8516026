//! Field paths, in one place: every path a definition can produce (`catalog`), a
//! field's path rendered from the tree (`render`), and a path a user wrote resolved to
//! steps and matched against a dissection (`steps`). The display filter, Info templates,
//! the compiler's checks, printers and the TUI all go through here.

mod catalog;
mod render;
mod steps;

pub use catalog::distance;
pub use catalog::{Holds, PathInfo, catalog, nearest};
pub(crate) use render::{ancestors, render_path};
pub use render::{label_name, path_of};
pub use steps::{Step, is_occurrence, steps, strip_indices};

/// A path in a packet type's `info` template as the catalog names it: a message type's
/// template names the message's own fields (`{sn}` is `messages.sn`, of that message).
pub fn info_path(p: &crate::Program, d: &crate::program::PacketDef, path: &str) -> String {
    if d.message && p.messages.is_some() && !path.starts_with("messages.") && path != "messages" {
        format!("messages.{path}")
    } else {
        path.to_string()
    }
}
