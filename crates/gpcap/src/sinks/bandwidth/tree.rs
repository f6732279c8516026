//! A packet counted from its field tree: each field's bits into its row, and the
//! values the estimates need.

use super::*;

/// A packet being counted: its row keys, its flow's previous packet of the type, the
/// bits its fields covered.
pub(super) struct Counting {
    pub(super) type_id: u32,
    pub(super) dir: u8,
    pub(super) total: u64,
    pub(super) data_at: Option<u64>,
    /// Where the flow and type's previous packet is kept (None: past the cap).
    pub(super) state: Option<u32>,
    pub(super) keep: bool,
    pub(super) prev: Previous,
    pub(super) covered: u64,
}

/// The message type of the message holding bit `at` (NONE outside messages).
pub(super) fn message_of(messages: &[gpcap_dissect::MessageInfo], at: u64) -> u32 {
    messages
        .iter()
        .find(|m| at >= m.bit_offset && at < m.bit_offset + m.bit_len.max(1))
        .map_or(NONE, |m| m.type_id.unwrap_or(NONE - 1))
}

impl Bandwidth {
    /// The bits of a game datagram (or reassembled packet) field by field.
    pub(super) fn packet_bits(&mut self, e: &PacketEvent<'_>, d: &Dissection) {
        let mut at = self.begin_packet(e);
        let mut paths = std::mem::take(&mut self.field_paths);
        paths.clear();
        let mut children = std::mem::take(&mut self.children);
        children.clear();
        children.resize(d.fields.len(), 0);
        for f in &d.fields {
            if let Some(c) = children.get_mut(f.parent as usize) {
                *c += f.bit_len;
            }
        }
        for (i, f) in d.fields.iter().enumerate() {
            let parent = paths.get(f.parent as usize).copied().unwrap_or(0);
            // Packets of a type mostly repeat their tree: the field at the same index
            // under the same parent path has the same path as last time.
            let pid = match self.field_cache.get(i) {
                Some(&(p, l, pid)) if p == parent && l == f.label => pid,
                _ => {
                    let pid = self.label_path(parent, f.label);
                    if self.field_cache.len() <= i {
                        self.field_cache.resize(i + 1, (NONE, Label::Index(0), 0));
                    }
                    self.field_cache[i] = (parent, f.label, pid);
                    pid
                }
            };
            paths.push(pid);
            if at.data_at.is_some_and(|a| f.bit_offset >= a) {
                continue;
            }
            // Bits of the field its children do not cover (all of a leaf's).
            let own = f.bit_len.saturating_sub(children.get(i).copied().unwrap_or(0));
            let msg_type = message_of(&d.messages, f.bit_offset);
            let value = (f.bit_len == own).then_some((f.raw, f.value));
            self.count_field(&mut at, pid, msg_type, f.node, f.kind, own, value);
        }
        self.field_paths = paths;
        self.children = children;
        self.end_packet_bits(at, d.fault.as_ref().map(|f| f.kind));
    }

    /// Where a packet's counting starts: its type and direction counted, its flow's
    /// previous packet of the type taken out.
    pub(super) fn begin_packet(&mut self, e: &PacketEvent<'_>) -> Counting {
        let type_id = e.packet_type.unwrap_or(NONE);
        let dir = match (
            self.type_dirs.get(type_id as usize),
            self.dense_packets.get_mut(type_id as usize),
        ) {
            (Some(&dir), Some(n)) => {
                *n += 1;
                dir
            }
            _ => {
                let dir = self.direction(e.packet_type);
                *self.type_packets.entry((dir, type_id)).or_default() += 1;
                dir
            }
        };
        let total = e.payload.len() as u64 * 8;
        // A fragment's data (from its first byte) belongs to the packet it is put back into.
        let data_at = match (e.kind, e.fragment) {
            (Kind::Game, Some(f)) => Some((f.data_offset as u64 * 8).min(total)),
            _ => None,
        };
        let state = e.flow_index.and_then(|f| self.state_of(f, type_id));
        let prev = state
            .and_then(|i| self.states.get_mut(i as usize))
            .map(std::mem::take)
            .unwrap_or_default();
        prev.prefetch();
        Counting {
            type_id,
            dir,
            total,
            data_at,
            state,
            keep: state.is_some(),
            prev,
            covered: 0,
        }
    }

    /// The packets counted by index into `type_packets`.
    pub(super) fn fold_types(&mut self) {
        for (t, n) in self.dense_packets.iter_mut().enumerate() {
            if *n > 0 {
                let dir = self.type_dirs.get(t).copied().unwrap_or(0);
                *self.type_packets.entry((dir, t as u32)).or_default() += std::mem::take(n);
            }
        }
    }

    /// One field's own bits into its row, and its value when the bits are all its own.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn count_field(
        &mut self,
        at: &mut Counting,
        pid: u32,
        msg_type: u32,
        node: u32,
        kind: &'static str,
        own: u64,
        value: Option<(u64, Value)>,
    ) {
        if own == 0 {
            return;
        }
        let cat = self.category(kind, node);
        let row = self.row(Key {
            dir: at.dir,
            type_id: at.type_id,
            msg_type,
            path: pid,
            cat,
        });
        self.count_row(at, row, cat, node, kind, own, value);
    }

    /// [`Self::count_field`] into row `row` of category `cat`, known.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn count_row(
        &mut self,
        at: &mut Counting,
        row: usize,
        cat: Category,
        node: u32,
        kind: &'static str,
        own: u64,
        value: Option<(u64, Value)>,
    ) {
        self.add_to(row, own);
        at.covered += own;
        if cat.has_values()
            && let Some((raw, v)) = value
            && let Some(value) = self.values(row, node, kind, raw, v)
        {
            self.delta(&mut at.prev, at.keep, row, value);
        }
    }

    /// The end of a packet's counting: its previous values kept, what no field covered
    /// counted as what it is.
    pub(super) fn end_packet_bits(&mut self, mut at: Counting, fault: Option<FaultKind>) {
        self.end_packet(&mut at.prev);
        if let Some(slot) = at.state.and_then(|i| self.states.get_mut(i as usize)) {
            *slot = at.prev;
        }
        let (dir, type_id, total) = (at.dir, at.type_id, at.total);
        let data = at.data_at.map_or(0, |a| total - a);
        self.frag_data += data;
        let rest = total.saturating_sub(at.covered + data);
        let cat = match fault {
            Some(FaultKind::TrailingBytes) => Category::Trailing,
            Some(_) => Category::Malformed,
            None if rest < 8 => Category::FinalByte,
            None => Category::Trailing,
        };
        let name = match cat {
            Category::Trailing => "(trailing bytes)",
            Category::Malformed => "(malformed remainder)",
            _ => "(unused bits of the last byte)",
        };
        self.overhead(dir, type_id, name, cat, rest);
    }

    pub(super) fn category(&self, kind: &str, node: u32) -> Category {
        match kind {
            "align" => return Category::Padding,
            "check" => return Category::Check,
            _ => {}
        }
        match self.places.get(node as usize) {
            Some(Place::Header) => Category::Header,
            Some(Place::Fragment) => Category::FragmentHeader,
            Some(Place::MessageHeader) => Category::MessageHeader,
            _ => Category::Field,
        }
    }

    /// The value estimates of one occurrence.
    pub(super) fn values(
        &mut self,
        row: usize,
        node: u32,
        kind: &'static str,
        raw: u64,
        v: Value,
    ) -> Option<(i128, bool)> {
        if self.rows[row].kind.is_empty() {
            let step = match self
                .program
                .as_deref()
                .and_then(|p| p.nodes.get(node as usize))
                .map(|n| &n.kind)
            {
                Some(NodeKind::CompressedFloat(cf) | NodeKind::CompressedVector(cf)) if cf.max_int > 0 => {
                    f64::from(cf.max - cf.min) / f64::from(cf.max_int)
                }
                _ => 0.0,
            };
            self.rows[row].kind = kind;
            self.rows[row].step = step;
        }
        let int = match v {
            Value::Int(i) => Some(i128::from(i)),
            Value::UInt(u) => Some(i128::from(u)),
            Value::Bool(b) => Some(i128::from(b)),
            Value::Float(_) if kind == "compressed-float" => Some(i128::from(raw)),
            _ => None,
        };
        let float = match v {
            Value::Float(f) => Some(f64::from(f)),
            Value::Double(f) => Some(f),
            _ => None,
        };
        let r = &mut self.rows[row];
        if let Some(f) = float {
            r.floats.get_or_insert_with(Default::default).add(f);
        }
        let q = match (float, r.resolution) {
            (Some(f), Some((res, _))) if f.is_finite() && res > 0.0 => {
                let q = (f / res).round();
                if q.abs() >= 4.6e18 {
                    // Not read at the declared resolution instead: said, not replaced.
                    r.past_range += 1;
                    return None;
                }
                Some(q as i128)
            }
            _ => None,
        };
        match (q, int) {
            (Some(q), _) => {
                r.quantized.get_or_insert_with(Default::default).add(q);
                Some((q, true))
            }
            (None, Some(i)) => {
                r.ints.get_or_insert_with(Default::default).add(i);
                Some((i, false))
            }
            _ => None,
        }
    }
}
