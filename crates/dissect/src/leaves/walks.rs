//! Which packet types are worth walking: a type every datagram of which so far made
//! the walk give up (a node only the interpreter reads) is read into a tree straight
//! away, not walked and then read (example-shooter.kdl's profile was ~10% slower).
//! Either way the figures are the same.

/// Walks given up on a type, none read, before its datagrams go straight to a tree.
const HOPELESS: u32 = 64;

/// Types whose walks are tallied (others are always walked).
const TALLIED: usize = 1 << 12;

/// By packet type: datagrams the walk read, and gave up on.
#[derive(Debug, Clone, Default)]
pub struct Walks(Vec<(u32, u32)>);

impl Walks {
    /// Whether to walk a datagram of type `ty`.
    pub fn worth(&self, ty: u32) -> bool {
        self.0
            .get(ty as usize)
            .is_none_or(|&(read, gave_up)| read > 0 || gave_up < HOPELESS)
    }

    /// A datagram of type `ty` walked: `read`, or given up on.
    pub fn tally(&mut self, ty: u32, read: bool) {
        let i = ty as usize;
        if i >= TALLIED {
            return;
        }
        if self.0.len() <= i {
            self.0.resize(i + 1, (0, 0));
        }
        let w = &mut self.0[i];
        if read {
            w.0 = w.0.saturating_add(1);
        } else {
            w.1 = w.1.saturating_add(1);
        }
    }
}
