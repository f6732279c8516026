//! The fields in scope for expressions, as the compiler walks a path.

use super::*;

/// The fields declared so far on the path being compiled, newest last, with a count per
/// name, so that looking up a name not in scope costs nothing (a 1 MiB definition
/// declares 65,535 fields, each looked up as it is declared).
#[derive(Debug, Default, Clone)]
pub(super) struct Scope {
    fields: Vec<(String, Option<u16>)>,
    names: HashMap<String, u32>,
}

impl Scope {
    pub(super) fn push(&mut self, name: String, slot: Option<u16>) {
        *self.names.entry(name.clone()).or_default() += 1;
        self.fields.push((name, slot));
    }

    pub(super) fn clear(&mut self) {
        self.fields.clear();
        self.names.clear();
    }

    pub(super) fn len(&self) -> usize {
        self.fields.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub(super) fn truncate(&mut self, len: usize) {
        for (name, _) in self.fields.drain(len.min(self.fields.len())..) {
            if let Some(c) = self.names.get_mut(&name) {
                *c -= 1;
                if *c == 0 {
                    self.names.remove(&name);
                }
            }
        }
    }

    /// The slot of the newest field of that name (None inside: not an integer field).
    pub(super) fn find(&self, name: &str) -> Option<Option<u16>> {
        if !self.names.contains_key(name) {
            return None;
        }
        self.fields.iter().rev().find(|(n, _)| n == name).map(|(_, s)| *s)
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(n, _)| n.as_str())
    }
}
