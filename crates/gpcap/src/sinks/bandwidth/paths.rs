//! Field paths as the profile's rows name them: interned, built a step at a time from
//! the tree's labels or the plan's nodes, and found again by their text.

use super::*;

/// Where the profile stands, per node: which block a definition node belongs to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Place {
    Body,
    Header,
    Fragment,
    MessageHeader,
}

/// Node names as `'static` strings: a definition's names leak once per distinct name
/// (bounded by the definition, which is loaded once per run).
pub(super) fn intern(name: &str) -> &'static str {
    use std::sync::Mutex;
    static NAMES: Mutex<Option<hashbrown::HashSet<&'static str>>> = Mutex::new(None);
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let set = g.get_or_insert_with(Default::default);
    if let Some(s) = set.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_string().into_boxed_str());
    set.insert(s);
    s
}

/// Which block each node belongs to (header, fragment header, message header, body).
pub(super) fn places(p: &Program) -> Vec<Place> {
    let mut out = vec![Place::Body; p.nodes.len()];
    let mut mark = |b, place| {
        let mut stack = vec![b];
        let mut steps = 0;
        while let Some(b) = stack.pop() {
            steps += 1;
            if steps > 1 << 20 {
                break;
            }
            for &id in p.block(b) {
                if let Some(slot) = out.get_mut(id as usize) {
                    if *slot != Place::Body {
                        continue;
                    }
                    *slot = place;
                }
                if let Some(n) = p.nodes.get(id as usize)
                    && !matches!(n.kind, NodeKind::Rest { .. })
                {
                    stack.extend(n.kind.blocks());
                }
            }
        }
    };
    mark(p.header, Place::Header);
    if let Some(f) = p.fragment {
        mark(f, Place::Fragment);
    }
    if let Some(h) = p.message_header() {
        mark(h, Place::MessageHeader);
    }
    out
}

impl Bandwidth {
    /// Interns path `name` under `parent`: a node's (by id), or a part's.
    pub(super) fn path_id(&mut self, parent: u32, name: &'static str, node: u32) -> u32 {
        let code = if node != NONE {
            node
        } else {
            let same = |p: &&str| std::ptr::eq(p.as_ptr(), name.as_ptr()) && p.len() == name.len();
            let found = self.parts.iter().position(same);
            let i = match found.or_else(|| self.parts.iter().position(|p| *p == name)) {
                Some(i) => i,
                None => {
                    self.parts.push(name);
                    self.parts.len() - 1
                }
            };
            NONE - 1 - i as u32
        };
        if let Some(&id) = self.path_ids.get(&(parent, code)) {
            return id;
        }
        let text = match self.paths.get(parent as usize).filter(|p| !p.is_empty()) {
            Some(p) => format!("{p}.{name}"),
            None => name.to_string(),
        };
        // One id per text: two nodes of one name (`ack` of two packet types, the two
        // branches of an `if`) are one path, in every shard alike.
        let id = self.path_by_text(&text);
        self.path_ids.insert((parent, code), id);
        id
    }

    /// [`Self::path_id`] of a part, through [`Self::part_cache`].
    pub(super) fn part_path(&mut self, parent: u32, name: &'static str) -> u32 {
        let (at, len) = (name.as_ptr() as usize, name.len());
        let h = (u64::from(parent) << 32 ^ at as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h >> 56) as usize % PART_CACHE;
        if let Some(&(p, a, l, pid)) = self.part_cache.get(i)
            && (p, a, l) == (parent, at, len)
        {
            return pid;
        }
        let pid = self.path_id(parent, name, NONE);
        if let Some(c) = self.part_cache.get_mut(i) {
            *c = (parent, at, len, pid);
        }
        pid
    }

    /// A named path outside the field tree (`(link/IP/UDP headers)`).
    pub(super) fn named(&mut self, name: &'static str) -> u32 {
        self.path_id(0, name, NONE)
    }

    /// The path of a field labelled `label` under path `parent`.
    pub(super) fn label_path(&mut self, parent: u32, label: Label) -> u32 {
        match label {
            Label::Index(_) => parent,
            Label::Node(id) => match self.node_paths.get(id as usize) {
                // A node is mostly met under one parent path: no lookup then.
                Some(&(p, pid)) if p == parent => pid,
                _ => {
                    let name = self.node_name(id);
                    let pid = self.path_id(parent, name, id);
                    if let Some(c) = self.node_paths.get_mut(id as usize) {
                        *c = (parent, pid);
                    }
                    pid
                }
            },
            Label::Part(s) => self.part_path(parent, s),
        }
    }

    pub(super) fn node_name(&self, id: u32) -> &'static str {
        self.names.get(id as usize).copied().unwrap_or("?")
    }

    /// The id of a path given as text (merging shards, whose ids differ).
    pub(super) fn path_by_text(&mut self, text: &str) -> u32 {
        if let Some(&i) = self.text_ids.get(text) {
            return i;
        }
        let id = self.paths.len() as u32;
        self.paths.push(text.to_string());
        self.text_ids.insert(text.to_string(), id);
        id
    }
}
