//! The interpreter's byte-level primitives: most-significant-bit-first values, whole-byte
//! integers in either order, LEB128 varints and text. None of them is in the validation
//! plan's runs: the plan falls back here, which is only slower.

use super::*;
use crate::bits::msb::{VarintError, read_byte_int, read_msb, read_varint, unzigzag};

impl Exec<'_> {
    /// A past-end fault at `h`, `needed` bits from where the field starts.
    fn short(&self, out: &mut Dissection, r: &BitReader, h: &Here, needed: u64) -> Stop {
        let e = BitError::new(
            ErrorKind::PastEnd {
                needed,
                available: r.bits_remaining(),
            },
            h.at,
        );
        self.read_fault(out, e, h.parent, h.label)
    }

    /// The field read from where `r` stands, `bits` long.
    #[allow(clippy::too_many_arguments)]
    fn word_field(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        bits: u64,
        raw: u64,
        slot: i64,
        value: Value,
    ) -> Step {
        let at = r.bits_read();
        r.skip_bits(bits)
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        self.set_slot(h.id, slot);
        self.push(
            out, h.id, h.label, h.kind, h.parent, h.depth, at, bits, raw, value,
        )?;
        Ok(())
    }

    /// Whole-byte primitives start on a byte, as `bytes` does.
    fn aligned(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here) -> Result<Here, Stop> {
        self.align(r, out, h.id, h.parent, h.depth)?;
        Ok(Here {
            at: r.bits_read(),
            ..*h
        })
    }

    /// A value read most significant bit first.
    pub(super) fn msb(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, m: Msb) -> Step {
        let w = m.width();
        let Some(raw) = read_msb(r.data(), h.at, w) else {
            return Err(self.short(out, r, h, w as u64));
        };
        let (slot, value) = match m {
            Msb::Bits(_) | Msb::Uint64 => (raw as i64, Value::UInt(raw)),
            Msb::Bool => (raw as i64, Value::Bool(raw != 0)),
            Msb::Float => (raw as i64, Value::Float(f32::from_bits(raw as u32))),
            Msb::Double => (raw as i64, Value::Double(f64::from_bits(raw))),
            Msb::Int { min, max } => {
                let v = min.wrapping_add(raw as i64);
                if v > max {
                    let e = BitError::new(ErrorKind::OutOfRange { value: v, min, max }, h.at);
                    return Err(self.read_fault(out, e, h.parent, h.label));
                }
                (v, Value::Int(v))
            }
        };
        self.word_field(r, out, h, w as u64, raw, slot, value)
    }

    /// `be-uint`, `be-int`, `le-int`: whole bytes in a stated order.
    pub(super) fn byte_int(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        h: &Here,
        c: Count,
        big: bool,
        signed: bool,
    ) -> Step {
        let n = self.count(out, c, h)?;
        let h = &self.aligned(r, out, h)?;
        if !(1..=8).contains(&n) {
            let field = self.path(out, h.parent, h.label);
            return self.fault(
                out,
                FaultKind::OutOfRange,
                field,
                h.at,
                format!("{} of {n} bytes: 1 to 8 are allowed", h.kind),
            );
        }
        let Some(v) = read_byte_int(r.data(), h.at, n as u32, big, signed) else {
            return Err(self.short(out, r, h, n * 8));
        };
        let value = if signed {
            Value::Int(v)
        } else {
            Value::UInt(v as u64)
        };
        let raw = v as u64 & (u64::MAX >> (64 - 8 * n));
        self.word_field(r, out, h, n * 8, raw, v, value)
    }

    /// An unsigned LEB128, or a zigzag-encoded signed one.
    pub(super) fn varint(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, zigzag: bool) -> Step {
        let h = &self.aligned(r, out, h)?;
        let (raw, len) = match read_varint(r.data(), h.at) {
            Ok(x) => x,
            Err(VarintError::PastEnd) => {
                let avail = r.bits_remaining().div_ceil(8) + 1;
                return Err(self.short(out, r, h, avail * 8));
            }
            Err(VarintError::TooLong) => {
                let field = self.path(out, h.parent, h.label);
                return self.fault(
                    out,
                    FaultKind::OutOfRange,
                    field,
                    h.at,
                    "varint longer than 10 bytes or over 64 bits".into(),
                );
            }
        };
        let (slot, value) = if zigzag {
            let v = unzigzag(raw);
            (v, Value::Int(v))
        } else {
            (raw as i64, Value::UInt(raw))
        };
        self.word_field(r, out, h, len as u64 * 8, raw, slot, value)
    }

    /// `text NAME LEN`: align, then LEN bytes shown as text.
    pub(super) fn text(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, len: Count) -> Step {
        self.bytes(r, out, h, len)
    }

    /// `cstring NAME MAX`: align, then bytes up to and including a NUL, MAX at most.
    pub(super) fn cstring(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, max: u32) -> Step {
        self.align(r, out, h.id, h.parent, h.depth)?;
        let at = r.bits_read();
        let rest = r.data().get((at / 8) as usize..).unwrap_or(&[]);
        let window = &rest[..rest.len().min(max as usize)];
        let Some(nul) = window.iter().position(|&b| b == 0) else {
            let field = self.path(out, h.parent, h.label);
            let why = if rest.len() < max as usize {
                format!("no NUL before the end of the datagram ({} bytes)", rest.len())
            } else {
                format!("no NUL in the first {max} bytes")
            };
            let kind = if rest.len() < max as usize {
                FaultKind::PastEnd
            } else {
                FaultKind::OutOfRange
            };
            return self.fault(out, kind, field, at, why);
        };
        let _ = r
            .read_bytes(nul + 1)
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        self.push_bytes_spanning(out, h, at, nul, (nul as u64 + 1) * 8)
    }

    /// The datagram's messages, one after another to its end: each its header, then the
    /// body of the type the header names.
    pub(super) fn messages(&mut self, r: &mut BitReader, out: &mut Dissection, node: NodeId) -> Step {
        let p = self.program;
        let Kind::Messages { header } = p.nodes[node as usize].kind else {
            return Ok(());
        };
        let at = r.bits_read();
        let group = self.push(
            out,
            node,
            Label::Node(node),
            "messages",
            ROOT,
            0,
            at,
            0,
            0,
            Value::None,
        )?;
        // Where they end: the datagram's end, a count, or a length in bytes.
        let (count, end) = match p.params.messages_end {
            None => (u64::MAX, r.bits_read() + r.bits_remaining()),
            Some(MessagesEnd::Count(e)) => {
                let n = self.eval_at(out, e, group, Label::Part("count"), at)?.max(0) as u64;
                (n, r.bits_read() + r.bits_remaining())
            }
            Some(MessagesEnd::Length(e)) => {
                let n = self.eval_at(out, e, group, Label::Part("length"), at)?.max(0) as u64;
                let end = at.saturating_add(n.saturating_mul(8));
                if n > r.bits_remaining() / 8 {
                    let field = self.path(out, group, Label::Part("length"));
                    let reason = format!(
                        "the messages' length {n} runs past the datagram ({} bytes left)",
                        r.bits_remaining() / 8
                    );
                    return self.fault(out, FaultKind::PastEnd, field, at, reason);
                }
                (u64::MAX, end)
            }
        };
        let mut i = 0u32;
        let res = loop {
            if i as u64 >= count || r.bits_read() + 8 > end {
                break self.messages_tail(r, out, group, i, count);
            }
            if i as u64 >= p.limits.max_elements {
                let reason = format!("more than {} messages in one datagram", p.limits.max_elements);
                break self.limit(out, group, Label::Index(i), r.bits_read(), reason);
            }
            let before = r.bits_read();
            let res = self.message(r, out, node, header, group, i);
            i += 1;
            if res.is_err() {
                break res;
            }
            if r.bits_read() == before {
                // It would be read again at the same bit, to the limit: not a message.
                out.messages.pop();
                let field = self.path(out, group, Label::Index(i - 1));
                let reason = format!("message {} read no bits: the messages cannot advance", i - 1);
                break self.fault(out, FaultKind::Limit, field, before, reason);
            }
            if r.bits_read() > end {
                let field = self.path(out, group, Label::Index(i - 1));
                let reason = format!("message {} runs past the messages' length", i - 1);
                break self.fault(out, FaultKind::OutOfRange, field, r.bits_read(), reason);
            }
        };
        self.close(out, group, r, Value::UInt(i as u64));
        res
    }

    /// After the messages a count or a length ends: bytes left in the datagram are
    /// trailing (to its end, nothing can be left).
    fn messages_tail(&mut self, r: &BitReader, out: &mut Dissection, group: u32, i: u32, count: u64) -> Step {
        let p = self.program;
        if p.params.messages_end.is_none() {
            return Ok(());
        }
        let (kind, reason) = if (i as u64) < count && count != u64::MAX {
            (
                FaultKind::PastEnd,
                format!("the datagram ended after {i} of {count} messages"),
            )
        } else if r.bits_remaining() >= 8 {
            let left = r.bits_remaining() / 8;
            (
                FaultKind::TrailingBytes,
                format!("{left} bytes after the messages"),
            )
        } else {
            return Ok(());
        };
        let field = self.path(out, group, Label::Index(i));
        self.fault(out, kind, field, r.bits_read(), reason)
    }

    fn message(
        &mut self,
        r: &mut BitReader,
        out: &mut Dissection,
        node: NodeId,
        header: Block,
        group: u32,
        i: u32,
    ) -> Step {
        let (p, start) = (self.program, r.bits_read());
        let element = self.push(
            out,
            node,
            Label::Index(i),
            "message",
            group,
            1,
            start,
            0,
            0,
            Value::None,
        )?;
        // The type role is each message's own, and so are the ack items it reads.
        let type_slot = Role::Type.slot().unwrap_or(0);
        self.seen &= !(1u32 << type_slot);
        self.items_from = out.ack_items.len();
        self.last_ack = LastAck::None;
        out.messages.push(MessageInfo {
            type_id: None,
            bit_offset: start,
            bit_len: 0,
            streams: [None; MAX_MESSAGE_STREAMS],
            fragment: None,
            send_time: None,
            ack: None,
            echo: None,
        });
        let res = self.block(r, out, header, element, 2).and_then(|_| {
            let typed = self.role(Role::Type).is_some();
            let ty = self.role(Role::Type).unwrap_or(0) as u32;
            if let Some(m) = out.messages.last_mut() {
                m.type_id = Some(ty.saturating_add(self.program.message_base));
            }
            // A message whose header has no type field has no body but type 0's.
            if !typed && p.packet(p.message_base).is_none_or(|d| !d.message) {
                return Ok(());
            }
            self.message_body(r, out, ty, element)
        });
        if let Some(m) = out.messages.last_mut() {
            m.bit_len = r.bits_read() - start;
        }
        self.place_run(out);
        self.close(out, element, r, Value::None);
        res
    }

    /// The body of message type `ty` (as its header's type field says).
    fn message_body(&mut self, r: &mut BitReader, out: &mut Dissection, ty: u32, element: u32) -> Step {
        let p = self.program;
        match p.packet(ty.saturating_add(p.message_base)).filter(|d| d.message) {
            Some(def) => self.block(r, out, def.body, element, 2),
            None => {
                let at = r.bits_read();
                let field = self.path(out, element, Label::Part("type"));
                self.fault(
                    out,
                    FaultKind::UnknownType,
                    field,
                    at,
                    format!("no message is defined for type {ty}"),
                )
            }
        }
    }

    /// A message's sequence field was read: its stream, key values and sequence.
    pub(super) fn stream_seq(&mut self, out: &mut Dissection, id: NodeId, si: u8) {
        let p = self.program;
        let (Some(def), Some(slot)) = (p.params.streams.get(si as usize), p.nodes[id as usize].slot) else {
            return;
        };
        let mut key = [0i64; 2];
        for (k, (_, s)) in key.iter_mut().zip(&def.key) {
            *k = self.slot(*s);
        }
        let sequence = self.slot(slot) as u64;
        let send_time = out.send_time;
        if let Some(m) = out.messages.last_mut() {
            // A path reads at most MAX_MESSAGE_STREAMS, each stream once (`check`).
            let send_time = m.send_time.or(send_time);
            if let Some(free) = m.streams.iter_mut().find(|s| s.is_none()) {
                *free = Some(StreamSeq {
                    stream: si,
                    key,
                    sequence,
                });
            }
            m.send_time = send_time;
        }
    }

    /// A message's ack of a stream's sequence was read: the stream, key values and
    /// the sequence acked.
    pub(super) fn stream_ack(&mut self, out: &mut Dissection, id: NodeId, si: u8) {
        let p = self.program;
        let (Some(def), Some(slot)) = (p.params.streams.get(si as usize), p.nodes[id as usize].slot) else {
            return;
        };
        let mut key = [0i64; 2];
        for (k, (_, s)) in key.iter_mut().zip(&def.key) {
            *k = self.slot(*s);
        }
        let sequence = self.slot(slot) as u64;
        self.last_ack = LastAck::Single;
        if let Some(m) = out.messages.last_mut() {
            m.ack = Some(StreamSeq {
                stream: si,
                key,
                sequence,
            });
        }
    }

    /// A cumulative ack, a range's start or end, or a NAK's, was read: an ack item of the
    /// stream `si` (the datagram's sequence without one). A range's end closes the
    /// newest range of its kind.
    pub(super) fn ack_item(
        &mut self,
        out: &mut Dissection,
        (id, parent, at): (NodeId, u32, u64),
        role: Role,
        si: Option<u8>,
    ) -> Step {
        let p = self.program;
        let Some(slot) = p.nodes[id as usize].slot else {
            return Ok(());
        };
        let v = self.slot(slot) as u64;
        let kind = match role {
            Role::AckBelow => AckKind::Below,
            Role::AckUpTo => AckKind::UpTo,
            Role::AckRangeStart => AckKind::Range,
            Role::NakRangeStart => AckKind::Nak,
            Role::AckRangeEnd | Role::NakRangeEnd => {
                let kind = if role == Role::AckRangeEnd {
                    AckKind::Range
                } else {
                    AckKind::Nak
                };
                let from = self.items_from.min(out.ack_items.len());
                if let Some(item) = out.ack_items[from..].iter_mut().rev().find(|i| i.kind == kind) {
                    item.last = v;
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        if out.ack_items.len() >= MAX_ACK_ITEMS {
            let reason =
                format!("more than {MAX_ACK_ITEMS} cumulative acks, ranges and NAKs in one datagram");
            return self.limit(out, parent, Label::Node(id), at, reason);
        }
        let stream = si.and_then(|si| {
            let def = p.params.streams.get(si as usize)?;
            let mut key = [0i64; 2];
            for (k, (_, s)) in key.iter_mut().zip(&def.key) {
                *k = self.slot(*s);
            }
            Some((si, key))
        });
        out.ack_items.push(AckItem {
            stream,
            kind,
            first: v,
            last: v,
            echo: None,
        });
        self.last_ack = LastAck::Item(out.ack_items.len() - 1);
        Ok(())
    }

    /// An echoed send time: of the ack read last in this message (or datagram) — its
    /// single ack, or an ack item.
    pub(super) fn echo(&mut self, out: &mut Dissection, id: NodeId) {
        let v = self.node_value(id);
        let from = self.items_from.min(out.ack_items.len());
        match self.last_ack {
            LastAck::Item(i) if i >= from => {
                if let Some(item) = out.ack_items.get_mut(i) {
                    item.echo = v;
                }
            }
            _ => {
                if let Some(m) = out.messages.last_mut() {
                    m.echo = v;
                }
            }
        }
    }

    /// An integer field's value as just read, when it fits 32 bits.
    pub(super) fn node_value(&self, id: NodeId) -> Option<u32> {
        let slot = self.program.nodes[id as usize].slot?;
        u32::try_from(self.slot(slot)).ok()
    }
}

impl Exec<'_> {
    /// `bytes name COUNT`: align, then COUNT bytes (zero-copy).
    pub(super) fn bytes(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, count: Count) -> Step {
        let n = self.count(out, count, h)?;
        self.align(r, out, h.id, h.parent, h.depth)?;
        let at = r.bits_read();
        let len = usize::try_from(n).unwrap_or(usize::MAX);
        let b = r
            .read_bytes(len)
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        self.push_bytes(out, h, at, b.len())
    }

    /// `check magic="HEX"`: align, then the magic's bytes, compared whole.
    pub(super) fn magic(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, want: &[u8]) -> Step {
        self.align(r, out, h.id, h.parent, h.depth)?;
        let at = r.bits_read();
        let got = r
            .read_bytes(want.len())
            .map_err(|e| self.read_fault(out, e, h.parent, h.label))?;
        if got != want {
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
            let reason = format!("the magic is {}, not {}", hex(got), hex(want));
            self.push_bytes(out, h, at, want.len())?;
            let field = self.path(out, h.parent, h.label);
            return self.fault(out, FaultKind::Check, field, at, reason);
        }
        self.push_bytes(out, h, at, want.len())
    }

    /// The field of `len` bytes read at bit `at` (zero-copy: an offset into the datagram).
    pub(super) fn push_bytes(&self, out: &mut Dissection, h: &Here, at: u64, len: usize) -> Step {
        self.push_bytes_spanning(out, h, at, len, len as u64 * 8)
    }

    /// The field whose value is `len` bytes at bit `at`, spanning `bits` on the wire
    /// (a `cstring`'s NUL is read but not shown).
    fn push_bytes_spanning(&self, out: &mut Dissection, h: &Here, at: u64, len: usize, bits: u64) -> Step {
        let value = Value::Bytes {
            offset: (at / 8) as usize,
            len,
        };
        self.push(out, h.id, h.label, h.kind, h.parent, h.depth, at, bits, 0, value)?;
        Ok(())
    }

    /// `string name MAX`: a length in `int(0, MAX-1)`, align, the bytes.
    pub(super) fn string(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, max: u32) -> Step {
        let g = self.open(out, h, Value::None)?;
        let ll = Label::Part("length");
        let top = max as i64 - 1;
        let width = crate::bits::int_width(0, top).unwrap_or(0);
        let len = self.bits(r, out, width, g, ll)?;
        self.push(
            out,
            h.id,
            ll,
            "int",
            g,
            h.depth + 1,
            h.at,
            width as u64,
            len as u64,
            Value::Int(len as i64),
        )?;
        if len as i64 > top {
            let e = BitError::new(
                ErrorKind::OutOfRange {
                    value: len as i64,
                    min: 0,
                    max: top,
                },
                h.at,
            );
            return Err(self.read_fault(out, e, g, ll));
        }
        self.align(r, out, h.id, g, h.depth + 1)?;
        let at = r.bits_read();
        let dl = Label::Part("data");
        let b = r
            .read_bytes(len as usize)
            .map_err(|e| self.read_fault(out, e, g, dl))?;
        let value = Value::Bytes {
            offset: (at / 8) as usize,
            len: b.len(),
        };
        self.push(
            out,
            h.id,
            dl,
            "bytes",
            g,
            h.depth + 1,
            at,
            b.len() as u64 * 8,
            0,
            value,
        )?;
        self.close(out, g, r, value);
        Ok(())
    }

    /// `le-uint name BYTES`: 1 to 8 bytes, lowest first.
    pub(super) fn le_uint(&mut self, r: &mut BitReader, out: &mut Dissection, h: &Here, c: Count) -> Step {
        let n = self.count(out, c, h)?;
        if !(1..=8).contains(&n) {
            return self.fault(
                out,
                FaultKind::OutOfRange,
                self.path(out, h.parent, h.label),
                h.at,
                format!("le-uint of {n} bytes: 1 to 8 are allowed"),
            );
        }
        let mut v = 0u64;
        for i in 0..n {
            v |= (self.bits(r, out, 8, h.parent, h.label)? as u64) << (8 * i);
        }
        self.set_slot(h.id, v as i64);
        self.push(
            out,
            h.id,
            h.label,
            h.kind,
            h.parent,
            h.depth,
            h.at,
            n * 8,
            v,
            Value::UInt(v),
        )?;
        Ok(())
    }
}
