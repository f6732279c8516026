//! Shards merged, and the profile closed into its report.

use super::*;

pub(super) fn merge_opt<T: Default + Clone>(a: &mut Option<T>, b: Option<&T>, f: fn(&mut T, &T)) {
    if let Some(b) = b {
        f(a.get_or_insert_with(T::default), b);
    }
}

pub(super) fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Bandwidth {
    /// One event ([`Sink::packet`]).
    pub(super) fn take(&mut self, e: &PacketEvent<'_>) {
        self.events += 1;
        if e.kind != Kind::Reassembled {
            let bits = e.frame_data.len() as u64 * 8;
            self.captured_bits += bits;
            self.frames += 1;
            if e.ts_ns != 0 || self.first_ns.is_some() {
                self.first_ns = min_opt(self.first_ns, Some(e.ts_ns));
                self.last_ns = self.last_ns.max(Some(e.ts_ns));
            }
        }
        let frame_bits = e.frame_data.len() as u64 * 8;
        match e.kind {
            Kind::Reassembled => {
                // Its bits are its fragments' data: they move from the fragment data row
                // to the packet's fields only when the packet was read field by field (a
                // message put back from fragments inside messages is bare bytes, already
                // counted in its fragments' message fields).
                if let (Status::Ok | Status::Malformed | Status::BadHeader, Some(d)) =
                    (e.status, e.dissection)
                    && !d.fields.is_empty()
                {
                    self.reassembled += e.payload.len() as u64 * 8;
                    self.packet_bits(e, d);
                } else if matches!(e.status, Status::Ok | Status::Malformed | Status::BadHeader)
                    && e.dissection.is_none()
                    && self.fast.is_some()
                {
                    self.packet_untreed(e);
                }
                return;
            }
            Kind::Game => {
                self.game_frames += frame_bits;
                self.game_payload += e.payload.len() as u64 * 8;
                self.header_count += 1;
            }
            Kind::IpPiece => {
                self.game_frames += frame_bits;
                self.header_count += 1;
                return;
            }
            _ => {
                self.overhead(0, NONE, "(other traffic)", Category::OtherTraffic, frame_bits);
                return;
            }
        }
        let payload = e.payload.len() as u64 * 8;
        let failed = match e.status {
            Status::Truncated => Some(("(truncated: not validated)", Category::Truncated)),
            Status::CrcMismatch | Status::TooShort => {
                Some(("(failed the checksum)", Category::ChecksumFailed))
            }
            Status::Unverified => Some(("(checksum not verifiable)", Category::ChecksumUnverified)),
            _ => None,
        };
        match (failed, e.dissection) {
            (None, Some(d)) => self.packet_bits(e, d),
            (None, None) if self.fast.is_some() => self.packet_untreed(e),
            (Some((name, cat)), _) => self.overhead(0, NONE, name, cat, payload),
            (None, None) => self.overhead(0, NONE, "(not dissected)", Category::NotDissected, payload),
        }
    }
}

impl Bandwidth {
    /// Folds in a shard of the same capture (disjoint flows; frames counted once).
    pub fn merge(&mut self, mut o: Bandwidth) {
        self.fold_types();
        o.fold_types();
        self.fold_fast();
        o.fold_fast();
        for r in o.rows {
            let path = o.paths.get(r.key.path as usize).cloned().unwrap_or_default();
            let pid = self.path_by_text(&path);
            let key = Key { path: pid, ..r.key };
            let i = self.row(key);
            let m = &mut self.rows[i];
            if m.kind.is_empty() {
                // A row the other shard met first: what its values are.
                m.kind = r.kind;
                m.step = r.step;
            }
            m.bits += r.bits;
            m.occurrences += r.occurrences;
            m.packets += r.packets;
            m.declared = m.declared.max(r.declared);
            m.past_range += r.past_range;
            merge_opt(&mut m.ints, r.ints.as_ref(), IntStats::merge);
            merge_opt(&mut m.quantized, r.quantized.as_ref(), IntStats::merge);
            merge_opt(&mut m.floats, r.floats.as_ref(), FloatStats::merge);
        }
        if let (Some(f), Some(of)) = (self.fast.as_mut(), o.fast.as_ref()) {
            f.planned += of.planned;
            f.trees += of.trees;
        }
        self.captured_bits += o.captured_bits;
        self.first_ns = min_opt(self.first_ns, o.first_ns);
        self.last_ns = self.last_ns.max(o.last_ns);
        for (k, n) in o.type_packets {
            *self.type_packets.entry(k).or_default() += n;
        }
        self.frames += o.frames;
        self.frag_data += o.frag_data;
        self.reassembled += o.reassembled;
        self.game_frames += o.game_frames;
        self.game_payload += o.game_payload;
        self.header_count += o.header_count;
    }

    /// Whether shards that held these states between them may have decided otherwise
    /// than one profile of the whole capture: together they could have reached a cap
    /// of kept states or previous values (each shard counts only its own), so the
    /// capture must be profiled on one core. Flows are disjoint among shards, so at any
    /// moment the whole's count is the shards' sum, never over the sum of their peaks.
    pub fn shards_may_reach_caps(shards: &[Bandwidth]) -> bool {
        let states: usize = shards.iter().map(|b| b.states.len()).sum();
        let stored: usize = shards.iter().map(|b| b.peak_stored).sum();
        states >= MAX_STATES || stored >= MAX_PREVIOUS
    }

    /// What the rows were counted from: the validation plan's leaves, field trees, or
    /// both (datagrams the plan cannot walk are dissected into a tree).
    pub fn computed_from(&self) -> &'static str {
        match &self.fast {
            Some(f) if f.planned > 0 && f.trees > 0 => "validation plan and field tree",
            Some(f) if f.planned > 0 => "validation plan",
            _ => "field tree",
        }
    }

    /// Closes the rows that are only known at the end: headers, and fragment data that
    /// no completed packet took.
    pub(super) fn close(&mut self) {
        let frag = self.program.as_deref().map_or(NONE, |p| p.fragment_type);
        let headers = self.game_frames.saturating_sub(self.game_payload);
        let row = self.overhead_row(0, NONE, "(link/IP/UDP headers)", Category::LinkHeaders, headers);
        if let Some(i) = row {
            // Summed here, so added once: it occurred once per frame.
            let more = self.header_count.saturating_sub(1);
            self.rows[i].occurrences += more;
            self.rows[i].packets += more;
        }
        let left = self.frag_data.saturating_sub(self.reassembled);
        self.overhead(
            0,
            frag,
            "(fragment data not read as a reassembled packet)",
            Category::FragmentData,
            left,
        );
        self.game_frames = 0;
        self.game_payload = 0;
        self.header_count = 0;
        self.frag_data = 0;
        self.reassembled = 0;
    }

    /// The finished profile.
    pub fn report(mut self) -> BandwidthReport {
        self.fold_types();
        self.fold_fast();
        self.close();
        report::build(&self)
    }
}
