//! The fields in scope for expressions, as the compiler walks a path: a block sees the
//! fields declared before it on its path — the header's in the messages block and in
//! every body, the messages block's in each message's body, the fields around a
//! struct's use in the struct.

use super::*;

/// A name a struct's body found outside it: (name, slot, where in the scope).
type Hit = (String, Option<u16>, usize);

/// The fields declared so far on the path being compiled, newest last, with a count per
/// name, so that looking up a name not in scope costs nothing (a 1 MiB definition
/// declares 65,535 fields, each looked up as it is declared).
#[derive(Debug, Default, Clone)]
pub(super) struct Scope {
    fields: Vec<(String, Option<u16>)>,
    names: HashMap<String, u32>,
    /// Fields below this index are outside the struct being compiled: a name found
    /// there is one of its dependencies (recorded in `hits`).
    base: usize,
    hits: std::cell::RefCell<Vec<Hit>>,
}

impl Scope {
    pub(super) fn push(&mut self, name: String, slot: Option<u16>) {
        *self.names.entry(name.clone()).or_default() += 1;
        self.fields.push((name, slot));
    }

    pub(super) fn clear(&mut self) {
        self.fields.clear();
        self.names.clear();
        self.base = 0;
        self.hits.get_mut().clear();
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
        let (at, (_, slot)) = self
            .fields
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (n, _))| n == name)?;
        if at < self.base {
            self.hits.borrow_mut().push((name.to_string(), *slot, at));
        }
        Some(*slot)
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(n, _)| n.as_str())
    }

    /// Starts a struct's body here: names found below are its dependencies. Returns
    /// what [`Scope::leave_struct`] restores.
    pub(super) fn enter_struct(&mut self) -> (usize, Vec<Hit>) {
        let saved = (self.base, std::mem::take(self.hits.get_mut()));
        self.base = self.fields.len();
        saved
    }

    /// Ends a struct's body: its fields leave the scope, and the names it found outside
    /// are returned (as name and slot); those outside an enclosing struct too stay its
    /// dependencies.
    pub(super) fn leave_struct(
        &mut self,
        (base, mut outer): (usize, Vec<Hit>),
    ) -> Vec<(String, Option<u16>)> {
        let start = self.base;
        self.truncate(start);
        let hits = std::mem::take(self.hits.get_mut());
        self.base = base;
        outer.extend(hits.iter().filter(|h| h.2 < base).cloned());
        *self.hits.get_mut() = outer;
        let mut deps: Vec<(String, Option<u16>)> = hits.into_iter().map(|(n, s, _)| (n, s)).collect();
        deps.sort();
        deps.dedup();
        deps
    }

    /// Whether each name resolves here as it did where a struct was compiled.
    pub(super) fn resolves_as(&self, deps: &[(String, Option<u16>)]) -> bool {
        deps.iter().all(|(n, s)| self.find(n) == Some(*s))
    }
}
