//! The selected packet's detail (its tree and bytes, read back from the capture or
//! replayed with keys and inner layers) and each row's Info and Type texts.

use super::*;

/// The selected packet, read back from the file and dissected with fields recorded.
pub struct Detail {
    pub row: Row,
    pub frame: Vec<u8>,
    /// Where the UDP payload sits in `frame`.
    pub payload: Option<(usize, usize)>,
    pub dissection: Option<Dissection>,
    pub note: Option<String>,
    /// What inner layers read in it, as rows of the tree after the fields that carried
    /// it (field indices past the fault: see [`Detail::layer_row`]).
    pub layer_rows: Vec<crate::layered::LayerRow>,
    /// The frame's link, IP and UDP headers: the tree's first rows (ids from
    /// [`HEADER_ROWS`]); none for bytes no single frame holds.
    pub headers: Vec<gpcap_wire::decode::headers::HeaderLayer>,
}

/// Tree row ids of the frame's headers: `HEADER_ROWS + layer × 1024`, plus one more than
/// the field's index for a field (the layer's title has none) — far past any field of a
/// dissection.
pub const HEADER_ROWS: usize = 1 << 40;

/// A header's tree row: its layer, and the field (None: the layer's title).
pub fn header_row(id: usize) -> Option<(usize, Option<usize>)> {
    let k = id.checked_sub(HEADER_ROWS)?;
    Some((k / 1024, (k % 1024).checked_sub(1)))
}

impl Detail {
    /// The header and field at a tree row id.
    pub fn header_at(
        &self,
        id: usize,
    ) -> Option<(
        &gpcap_wire::decode::headers::HeaderLayer,
        Option<&gpcap_wire::decode::headers::HeaderField>,
    )> {
        let (layer, field) = header_row(id)?;
        let l = self.headers.get(layer)?;
        match field {
            None => Some((l, None)),
            Some(f) => Some((l, Some(l.fields.get(f)?))),
        }
    }

    /// Where the UDP payload (or the packet shown) starts in `frame`, in bits: the
    /// dissection's offsets count from there.
    pub fn payload_bit(&self) -> u64 {
        self.payload.map_or(0, |(a, _)| a as u64 * 8)
    }

    /// The inner layers' row at tree index `i` (indices past the outer fields' fault).
    pub fn layer_row(&self, i: usize) -> Option<&crate::layered::LayerRow> {
        let n = self.dissection.as_ref()?.fields.len();
        self.layer_rows.get(i.checked_sub(n + 1)?)
    }

    /// A detail that only says why the packet cannot be shown.
    fn unavailable(row: Row, note: String) -> Self {
        Detail {
            row,
            frame: Vec::new(),
            payload: None,
            dissection: None,
            note: Some(note),
            layer_rows: Vec::new(),
            headers: Vec::new(),
        }
    }

    pub fn payload(&self) -> &[u8] {
        match self.payload {
            Some((a, b)) => self.frame.get(a..b).unwrap_or(&[]),
            None => &[],
        }
    }
}

/// Info column texts kept for rows already summarised (a screenful is dissected per
/// frame at most once).
const INFO_CACHE: usize = 4096;

impl App {
    pub(crate) fn load_detail(&mut self) {
        self.field = 0;
        self.tree_scroll = 0;
        self.collapsed.clear();
        let ix = std::mem::take(&mut self.index);
        self.detail = match self.view.get(self.selected) {
            Some(&row) => self.detail_of(&ix, row).map(|d| self.layered(&ix, row, d)),
            None => None,
        };
        self.index = ix;
        self.select_pending_path();
    }

    /// With keys or inner layers, the detail as the run read it: the plaintext in place
    /// of the ciphertext, its tree, and what inner layers read in it.
    pub(super) fn layered(&mut self, ix: &Index, row: u32, mut d: Detail) -> Detail {
        if self.cfg.stack.is_none() || ix.store.is_some() || !d.row.has(status::GAME) {
            return d;
        }
        let replay = self
            .replay
            .get_or_insert_with(|| gpcap::run::seek::Replay::new(ix.path.clone(), self.cfg.clone()));
        let got = match replay.row(row) {
            Ok(Some(got)) => got,
            Ok(None) => return d,
            Err(e) => {
                d.note = Some(format!("cannot read it as the run did: {e}"));
                return d;
            }
        };
        let (a, b) = d.payload.unwrap_or((0, 0));
        if let Some(at) = d.frame.get_mut(a..b).and_then(|s| s.get_mut(..got.payload.len()))
            && at != &got.payload[..]
        {
            at.copy_from_slice(&got.payload);
            d.note = Some("decrypted: the bytes are the plaintext (the MAC as captured)".into());
        }
        if let Some(tree) = got.tree {
            d.layer_rows = crate::layered::rows(&tree, &got.carried);
            d.dissection = Some(tree);
        }
        d
    }

    /// Selects in the tree the field the Bandwidth tab chose (`objects.position.x`: its
    /// first occurrence), so that the dump highlights its bits; once found.
    pub(super) fn select_pending_path(&mut self) {
        let (Some(want), Some(d), Some(p)) = (&self.pending_path, &self.detail, &self.program) else {
            return;
        };
        let Some(dis) = d.dissection.as_ref() else { return };
        let found = (0..dis.fields.len()).find(|&i| {
            let path = gpcap_dissect::paths::path_of(p, dis, i);
            let bare: String = path
                .split('.')
                .map(|s| s.split('[').next().unwrap_or(s))
                .collect::<Vec<_>>()
                .join(".");
            bare == *want
        });
        if let Some(i) = found {
            self.field = i;
            self.focus = Focus::Tree;
            self.pending_path = None;
        }
    }

    /// Rows of the field tree: visible fields (collapsed groups hide their children),
    /// then the fault, as the index one past the last field.
    pub fn visible_fields(&self) -> Vec<usize> {
        let Some(d) = self.detail.as_ref().and_then(|d| d.dissection.as_ref()) else {
            return Vec::new();
        };
        let rows = self.detail.as_ref().map_or(&[][..], |d| &d.layer_rows[..]);
        let mut out = Vec::new();
        // The frame's headers first, each one line until opened (Space, Enter).
        for (k, l) in self.detail.iter().flat_map(|d| d.headers.iter()).enumerate() {
            out.push(HEADER_ROWS + k * 1024);
            if self.headers_open.contains(&(k as u32)) {
                out.extend((0..l.fields.len().min(1023)).map(|f| HEADER_ROWS + k * 1024 + f + 1));
            }
        }
        let mut hidden_below: Option<u16> = None;
        for (i, f) in d.fields.iter().enumerate() {
            if let Some(depth) = hidden_below {
                if f.depth > depth {
                    continue;
                }
                hidden_below = None;
            }
            out.push(i);
            if self.collapsed.contains(&(i as u32)) {
                hidden_below = Some(f.depth);
                continue;
            }
            // What inner layers read in this field, right under it.
            let first = rows.partition_point(|r| r.after < i);
            let n = rows[first..].iter().take_while(|r| r.after == i).count();
            out.extend((first..first + n).map(|k| d.fields.len() + 1 + k));
        }
        if d.fault.is_some() {
            out.push(d.fields.len());
        }
        out
    }

    /// The selected tree field: its path, its value as people read it, and the field.
    pub(super) fn tree_field(&self) -> Option<(String, String, gpcap_dissect::Field)> {
        let d = self.detail.as_ref()?;
        let dis = d.dissection.as_ref()?;
        let p = self.program.as_ref()?;
        let f = *dis.fields.get(self.field)?;
        let value = gpcap::present::tree::value_text(p, &f, d.payload());
        Some((gpcap_dissect::paths::path_of(p, dis, self.field), value, f))
    }

    /// Space or Enter in the tree: a header opens or closes, a group folds or unfolds.
    pub(super) fn fold(&mut self) {
        if let Some((layer, None)) = header_row(self.field) {
            let k = layer as u32;
            if !self.headers_open.remove(&k) {
                self.headers_open.insert(k);
            }
            return;
        }
        let f = self.field as u32;
        if !self.collapsed.remove(&f) {
            self.collapsed.insert(f);
        }
    }

    /// A header field as a filter term, Wireshark's way (`ip.ttl == 64`).
    fn header_term(&self) -> Option<String> {
        use gpcap_wire::decode::headers::HeaderValue;
        let (l, f) = self.detail.as_ref()?.header_at(self.field)?;
        let Some(f) = f else {
            return Some(l.proto.to_string());
        };
        Some(match f.value {
            HeaderValue::Num(n) => format!("{} == {n}", f.name),
            HeaderValue::Mac(m) => format!("{} == {}", f.name, gpcap::present::headers::mac(m)),
            HeaderValue::Ip(ip) => format!("{} == {ip}", f.name),
        })
    }

    /// Filters on the selected field's value (`and`: added to the filter).
    pub(super) fn apply_field(&mut self, and: bool) {
        let layer = (self.detail.as_ref())
            .and_then(|d| d.layer_row(self.field))
            .and_then(|r| r.term.clone())
            .or_else(|| self.header_term());
        let term = match layer {
            Some(term) => term,
            None => {
                let Some((path, _, f)) = self.tree_field() else {
                    return;
                };
                let Some(p) = self.program.clone() else { return };
                let Some(d) = self.detail.as_ref() else { return };
                let path = gpcap_dissect::paths::strip_indices(&path);
                match filter_value(&p, &f, d.payload()) {
                    Some(v) => format!("{path} == {v}"),
                    None => path,
                }
            }
        };
        let text = if and && !self.filter.is_all() {
            format!("({}) && {term}", self.filter.text)
        } else {
            term
        };
        self.apply_filter(&text);
    }

    /// A row read back from the file (or the live store, or the kept bytes) and dissected
    /// with fields recorded.
    pub(super) fn detail_of(&mut self, ix: &Index, row_index: u32) -> Option<Detail> {
        let row = ix.rows.get(row_index as usize)?;
        let rebuilt;
        let kept = match ix.kept.get(&row_index) {
            Some(k) => Some(k),
            // Not kept: put back together from its fragments' frames.
            None if row.has(status::REASSEMBLED)
                && ix.fragments.of(row_index).is_some()
                && self.fragments_whole() =>
            {
                match gpcap::sinks::index::put_back(ix, &mut self.validator, row_index) {
                    Ok(k) => {
                        rebuilt = k;
                        Some(&rebuilt)
                    }
                    Err(e) => {
                        let note = format!("a reassembled packet whose bytes cannot be read back: {e}");
                        return Some(Detail::unavailable(row, note));
                    }
                }
            }
            None => None,
        };
        if let Some(kept) = kept {
            return Some(self.detail_kept(row, kept));
        }
        if row.has(status::REASSEMBLED) {
            let note = "a reassembled packet whose bytes were not kept (16 MiB of them are)".into();
            return Some(Detail::unavailable(row, note));
        }
        let read = self.read_frame(ix, &row);
        let frame = match read {
            Ok(f) => f,
            Err(e) => {
                let note = format!("cannot read frame {}: {e}", row.frame);
                return Some(Detail::unavailable(row, note));
            }
        };
        let (payload, note) = payload_of(&row, &frame);
        let headers = gpcap_wire::decode::headers::layers(row.linktype as i32, &frame);
        let dissection = match payload {
            Some((a, b)) if self.program.is_some() && row.has(status::GAME) => {
                self.validator.datagram(&frame[a..b]);
                Some(self.validator.dissection.clone())
            }
            _ => None,
        };
        Some(Detail {
            row,
            frame,
            payload,
            dissection,
            note,
            layer_rows: Vec::new(),
            headers,
        })
    }

    /// Bytes no single frame holds, kept by the index: a datagram rebuilt from IP
    /// fragments, or a packet reassembled from game fragments.
    fn detail_kept(&mut self, row: Row, kept: &gpcap::sinks::index::Kept) -> Detail {
        let p = kept.payload.clone();
        let reassembled = row.has(status::REASSEMBLED);
        let dissection = match self.program.as_deref() {
            // A message from fragments inside messages: its type's fields, or bytes.
            Some(prog) if reassembled && prog.messages.is_some() => {
                reassembled_as(prog, row.ptype).map(|t| {
                    let mut d = Dissection::default();
                    self.validator.message(t, &p, &mut d);
                    d
                })
            }
            Some(_) => {
                if reassembled {
                    self.validator.reassembled(&p);
                } else {
                    self.validator.datagram(&p);
                }
                Some(self.validator.dissection.clone())
            }
            None => None,
        };
        let note = if reassembled {
            let frames: Vec<String> = kept.fragment_frames.iter().map(|f| f.to_string()).collect();
            format!(
                "reassembled from {} fragments (frames {}); the bytes are the whole packet",
                frames.len(),
                frames.join(", ")
            )
        } else {
            "rebuilt from IP fragments; the bytes are the UDP payload".into()
        };
        let len = p.len();
        Detail {
            row,
            frame: p,
            payload: Some((0, len)),
            dissection,
            note: Some(note),
            layer_rows: Vec::new(),
            headers: Vec::new(),
        }
    }

    /// The frame's bytes, from the live store or the capture file.
    fn read_frame(&mut self, ix: &Index, row: &Row) -> Result<Vec<u8>, String> {
        match &ix.store {
            Some(store) => store
                .get(row.frame)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "no longer held in memory".to_string()),
            None => {
                if self.reader.is_none() {
                    match FrameAt::open(&ix.path) {
                        Ok(r) => self.reader = Some(r),
                        Err(e) => return Err(e.to_string()),
                    }
                }
                match &self.reader {
                    Some(r) => r.frame(row.offset).map(|f| f.data).map_err(|e| e.to_string()),
                    None => Err("no reader".into()),
                }
            }
        }
    }

    /// A reassembled packet is its fragments' datagram bodies end to end (no messages).
    pub(super) fn fragments_whole(&self) -> bool {
        self.program
            .as_deref()
            .is_some_and(|p| p.messages.is_none() && p.params.message_fragments.is_empty())
    }

    /// The Info column of a row: what [`gpcap::present::info`] says of it as read (with
    /// keys and inner layers, as the run read it), or a summary of what it is;
    /// dissected once and kept.
    pub fn info_of(&mut self, ix: &Index, row_index: u32) -> String {
        self.describe_row(ix, row_index).0
    }

    /// The Type column of a datagram of messages (no packet type): its message types.
    pub fn message_types_of(&mut self, ix: &Index, row_index: u32) -> Option<String> {
        self.describe_row(ix, row_index).1
    }

    /// Row `row_index`'s Info line and message types when [`prepare`](Self::prepare)
    /// (or an earlier look) has read them: what drawing shows, without reading anything.
    pub(crate) fn described(&self, row_index: u32) -> Option<&(String, Option<String>)> {
        self.info.get(&row_index)
    }

    /// Reads the Info lines (and message types) of the packet rows the next frame shows
    /// in a list of `height` rows, so that drawing finds them all (a frame never shows
    /// more than a screen's rows, far fewer than the cache holds).
    pub(crate) fn prepare(&mut self, height: usize) {
        if self.tab != super::Tab::Packets {
            return;
        }
        let info = !self.hidden.contains(&super::Column::Info);
        let types = !self.hidden.contains(&super::Column::Type);
        if !info && !types {
            return;
        }
        let scroll = crate::ui::list_scroll(self.scroll, self.selected, height);
        let rows: Vec<u32> = self.view.iter().skip(scroll).take(height).copied().collect();
        if self.info.len() + rows.len() > INFO_CACHE {
            self.info.clear();
        }
        let ix = std::mem::take(&mut self.index);
        for row in rows {
            let Some(r) = ix.rows.get(row as usize) else {
                continue;
            };
            let typed = crate::ui::game_row(&r) && r.ptype == u16::MAX;
            if info || (types && typed) {
                self.describe_row(&ix, row);
            }
        }
        self.index = ix;
    }

    pub(super) fn describe_row(&mut self, ix: &Index, row_index: u32) -> (String, Option<String>) {
        if let Some(s) = self.info.get(&row_index) {
            return s.clone();
        }
        let text = self.make_info(ix, row_index);
        if self.info.len() >= INFO_CACHE {
            self.info.clear();
        }
        self.info.insert(row_index, text.clone());
        text
    }

    pub(super) fn make_info(&mut self, ix: &Index, row_index: u32) -> (String, Option<String>) {
        let Some(r) = ix.rows.get(row_index as usize) else {
            return Default::default();
        };
        let said = |s: String| (s, None);
        if r.has(status::REASSEMBLED) {
            return said(format!("reassembled from {} fragments", r.frag_count));
        }
        if r.has(status::CRC_FAIL) {
            return said("crc_mismatch: not the protocol's, or damaged".into());
        }
        if r.frag_count > 0 {
            return said(format!(
                "fragment {} of {} (seq {})",
                r.frag_id, r.frag_count, r.seq
            ));
        }
        if let Some(i) = ix.icmp.get(&row_index) {
            return said(i.info.clone());
        }
        if r.has(status::OTHER_UDP) {
            // What it is, by its ports, and that it is not the game's.
            let f = ix.flows.get(r.flow as usize);
            let service = f.and_then(|f| gpcap_wire::decode::services::service(f.src.port(), f.dst.port()));
            return said(match (service, f) {
                (Some(s), Some(f)) => format!(
                    "{s} (udp {} → {}), not on the protocol's ports",
                    f.src.port(),
                    f.dst.port()
                ),
                (None, Some(f)) => format!(
                    "udp {} → {}, not on the protocol's ports",
                    f.src.port(),
                    f.dst.port()
                ),
                _ => "udp, not on the protocol's ports".into(),
            });
        }
        if !r.has(status::GAME) {
            return said(crate::ui::status_of(&r).0.to_string());
        }
        let Some(p) = self.program.clone() else {
            return said(match r.fault() {
                Some(k) => format!("malformed: {}", k.code()),
                None => String::new(),
            });
        };
        if let Some(got) = self.replayed(ix, row_index) {
            let Some(tree) = &got.tree else {
                return Default::default();
            };
            let types = gpcap::present::info::message_types(&p, tree);
            return (
                self.describe.describe(&p, tree, &got.payload, &got.carried),
                types,
            );
        }
        let Some(d) = self.detail_of(ix, row_index) else {
            return Default::default();
        };
        let Some(dis) = d.dissection.as_ref() else {
            return said(d.note.unwrap_or_default());
        };
        let types = gpcap::present::info::message_types(&p, dis);
        (self.describe.describe(&p, dis, d.payload(), &[]), types)
    }

    /// With keys or inner layers, a game row as the run read it (`None` without them, for
    /// a live capture, or when the capture cannot be read again).
    pub(super) fn replayed(&mut self, ix: &Index, row: u32) -> Option<gpcap::run::seek::Replayed> {
        if self.cfg.stack.is_none() || ix.store.is_some() {
            return None;
        }
        let replay = self
            .replay
            .get_or_insert_with(|| gpcap::run::seek::Replay::new(ix.path.clone(), self.cfg.clone()));
        replay.row(row).ok().flatten()
    }
}

/// The message type a reassembled message of row type `ptype` was read as, when the
/// definition names one (`reassembled-as`).
fn reassembled_as(p: &Program, ptype: u16) -> Option<u32> {
    let t = ptype as u32;
    p.params
        .message_fragments
        .iter()
        .any(|f| f.reassembled_as == Some(t))
        .then_some(t)
}

/// A field's value as a filter writes it: enum names, quoted text, floats at their
/// resolution; `None` for groups (the filter tests that the field is there).
pub(crate) fn filter_value(p: &Program, f: &gpcap_dissect::Field, payload: &[u8]) -> Option<String> {
    use gpcap_dissect::Value;
    let enum_name = match (f.label, p.nodes.get(f.node as usize).and_then(|n| n.enum_id)) {
        (gpcap_dissect::Label::Node(_), Some(e)) => match f.value {
            Value::Int(v) => p.enum_name(e, v),
            Value::UInt(v) => p.enum_name(e, v as i64),
            _ => None,
        },
        _ => None,
    };
    if let Some(n) = enum_name {
        return Some(n.to_string());
    }
    match f.value {
        Value::Int(v) => Some(v.to_string()),
        Value::UInt(v) => Some(v.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Float(_) | Value::Double(_) => Some(gpcap::present::tree::value_text(p, f, payload)),
        Value::Bytes { offset, len } => {
            let b = payload.get(offset..offset + len)?;
            let s = String::from_utf8_lossy(b);
            Some(format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
        }
        _ => None,
    }
}

/// Where the UDP payload is in `frame`, or a note saying why there is none to dissect.
fn payload_of(row: &Row, frame: &[u8]) -> (Option<(usize, usize)>, Option<String>) {
    let mut payload = None;
    let mut note = None;
    match decode(row.linktype as i32, frame) {
        Decoded::Udp { payload: p, .. } => {
            let start = p.as_ptr() as usize - frame.as_ptr() as usize;
            payload = Some((start, start + p.len()));
        }
        Decoded::IpFragment { .. } => {
            note = Some("an IP fragment: the datagram is analyzed when its last fragment arrives".into())
        }
        Decoded::Icmp(i) => note = Some(format!("ICMP: the path MTU is {} (from {})", i.mtu, i.from)),
        Decoded::Other(what) => note = Some(format!("not UDP: {what}")),
        Decoded::Malformed { layer, reason } => note = Some(format!("malformed {layer} header: {reason}")),
        Decoded::UnsupportedLink(t) => note = Some(format!("link type {t} is not decoded")),
    }
    if row.has(status::IP_FRAG) {
        note = Some("rebuilt from IP fragments: this frame holds only the last piece".into());
        payload = None;
    }
    (payload, note)
}
