//! Protocols inside the protocol (`dissect-as`, several `-d`): each inner layer is an
//! export of its own under the capture's `layer=NAME/`, with its own definition's tables, fed the
//! packets that layer's engine read in each outer packet (`PacketEvent::carried`), and
//! ending with that engine's statistics for its report tables (as `analyze --json`'s
//! `layers[]`).

use super::{Export, ExportError, MAX_NAME, partition_value};
use crate::sinks::analysis::Statistics;
use gpcap_engine::carried::{Anchor, each};
use gpcap_engine::layers::LayerStats;
use gpcap_engine::{Config, PacketEvent, Summary};
use std::path::Path;

/// The partition key naming a layer's directory.
pub(super) const KEY: &str = "layer";

/// Whether anything inside the protocol can be read: an encrypted protocol needs keys
/// (without them it carries nothing, and writes no layer tables).
pub fn layers_readable(cfg: &Config) -> bool {
    let encrypted = cfg
        .program
        .as_ref()
        .is_some_and(|p| p.params.encryption.is_some());
    !encrypted || cfg.stack.as_ref().is_some_and(|s| s.secrets.is_some())
}

/// The inner layers' exports, outermost first.
#[derive(Default)]
pub(super) struct Layers {
    exports: Vec<Export>,
}

impl Layers {
    /// An export per inner layer of `cfg`'s stack, in `dir/layer=NAME/` (tables of the
    /// same names, the layer's own schemas); none when nothing inside can be read.
    pub fn new(
        dir: &Path,
        keys: &[(String, String)],
        capture: &str,
        cfg: &Config,
    ) -> Result<Layers, ExportError> {
        let mut out = Layers::default();
        let Some(stack) = cfg.stack.as_ref().filter(|_| layers_readable(cfg)) else {
            return Ok(out);
        };
        let refuse = |reason: String| ExportError {
            path: dir.display().to_string(),
            reason,
        };
        if let Some((k, v)) = keys.iter().find(|(k, _)| k.eq_ignore_ascii_case(KEY)) {
            return Err(refuse(format!(
                "--partition {k}={v}: `{KEY}` names the inner layers' directories; choose another key"
            )));
        }
        for p in &stack.layers {
            let name = &p.params.name;
            if name.is_empty() || out.exports.iter().any(|x| x.layer_name() == name) {
                continue;
            }
            let at = format!("{KEY}={}", partition_value(name));
            if at.len() > MAX_NAME {
                return Err(refuse(format!(
                    "layer {name} is named in {} bytes as a directory, over {MAX_NAME}: shorten its name",
                    at.len()
                )));
            }
            let cfg = Config::from_program(p.clone());
            let dir = dir.join(at);
            let program = gpcap_engine::layers::shown_program(&cfg);
            super::check_names(&dir, keys, capture, program.as_ref())?;
            out.exports.push(Export::at(&dir, keys, capture, cfg)?);
        }
        Ok(out)
    }

    /// Hands what inner layers read in `e` to their exports, at any depth.
    pub fn packet(&mut self, e: &PacketEvent<'_>) {
        if self.exports.is_empty() || e.carried.is_empty() {
            return;
        }
        let exports = &mut self.exports;
        each(e.carried, Anchor::DATAGRAM, &mut |c, _| {
            if let Some(x) = exports.iter_mut().find(|x| x.layer_name() == c.name()) {
                x.rows_of(&c.event());
            }
        });
    }

    /// Each layer's report tables (flows, reassembly…) are its own engine's; a layer
    /// inside an inner layer ends with that layer's statistics.
    pub fn finish(&mut self, summary: &Summary) {
        // The engine hands each layer's sink back as it made it: here, statistics.
        let layers: Vec<(String, Statistics)> = (summary.layers.iter())
            .filter_map(|LayerStats(name, sink)| {
                let stats = sink.clone().into_any().downcast::<Statistics>().ok()?;
                Some((name.clone(), *stats))
            })
            .collect();
        self.take_stats(&layers, 0);
    }

    fn take_stats(&mut self, layers: &[(String, Statistics)], depth: usize) {
        // As deep as a stack goes (16 definitions).
        if depth > 16 {
            return;
        }
        for (name, stats) in layers {
            if let Some(x) = self.exports.iter_mut().find(|x| x.layer_name() == name) {
                x.stats = stats.clone();
            }
            self.take_stats(stats.layers(), depth + 1);
        }
    }

    /// The first inner export's failure (which stays in it).
    pub fn failure(&mut self) -> Option<ExportError> {
        self.exports.iter_mut().find_map(Export::failure)
    }

    /// Every layer's export, to be closed with the outer one.
    pub fn take(&mut self) -> Vec<Export> {
        std::mem::take(&mut self.exports)
    }
}

/// A layer's directory name (`layer=reliable`).
pub(super) fn dir_name(name: &str) -> String {
    format!("{KEY}={}", partition_value(name))
}
