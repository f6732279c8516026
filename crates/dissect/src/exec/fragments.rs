//! A message's fragment (ENet's SEND_FRAGMENT): its group, number, count, offset and
//! total read from the message's role fields once its data is read, and the two faults
//! no reassembly could mend, located at the data.

use super::*;

impl Exec<'_> {
    /// The data of a message's fragment was read (`start`, `len` in bits): records the
    /// fragment on the message, then refuses a total over `max-message-size` or data
    /// that runs past the total.
    pub(super) fn message_fragment(
        &mut self,
        out: &mut Dissection,
        id: NodeId,
        parent: u32,
        start: u64,
        len: u64,
    ) -> Step {
        let p = self.program;
        // In the messages block the message's type is not read yet: its roles are any
        // type's.
        let ty = out
            .messages
            .last()
            .and_then(|m| m.type_id)
            .unwrap_or(MessageFragmentDef::ANY);
        let Some(def) = p.params.message_fragment(ty) else {
            return Ok(());
        };
        let mut key = [0i64; 3];
        for (k, (_, s)) in key.iter_mut().zip(&def.key) {
            *k = self.slot(*s);
        }
        let word = |v: i64| u32::try_from(v).ok();
        let bytes = (len / 8) as u32;
        if def.remaining.is_some() || def.first.is_some() {
            return self.run_fragment(out, (id, parent, start), def, bytes);
        }
        let number = self.role(Role::FragmentId).unwrap_or(0);
        let count = self.role(Role::FragmentCount).unwrap_or(0);
        let offset = def.offset.map(|s| self.slot(s));
        let total = def.total.map(|s| self.slot(s));
        let fields = [Some(number), Some(count), offset, total];
        let fault = if fields.iter().flatten().any(|&v| word(v).is_none()) {
            Some("a fragment's number, count, offset and total are 32-bit".to_string())
        } else if let Some(t) = total.filter(|&t| t as u64 > p.params.max_message_size as u64) {
            Some(format!(
                "the message's total length {t} is over max-message-size {}",
                p.params.max_message_size
            ))
        } else if let (Some(o), Some(t)) = (offset, total)
            && o as u64 + bytes as u64 > t as u64
        {
            Some(format!(
                "fragment data at byte offset {o} ({bytes} bytes) runs past the message's total length {t}"
            ))
        } else {
            None
        };
        if let Some(m) = out.messages.last_mut() {
            m.fragment = Some(MessageFragment {
                key,
                id: word(number).unwrap_or(u32::MAX),
                count: word(count).unwrap_or(u32::MAX),
                offset: offset.map(|o| word(o).unwrap_or(u32::MAX)),
                total: total.map(|t| word(t).unwrap_or(u32::MAX)),
                data_at: (start / 8) as u32,
                data_len: bytes,
                run: None,
            });
        }
        match fault {
            Some(reason) => {
                let field = self.path(out, parent, Label::Node(id));
                self.fault(out, FaultKind::OutOfRange, field, start, reason)
            }
            None => Ok(()),
        }
    }
}

impl Exec<'_> {
    /// A count-down or flagged fragment's data was read: what it says of its message.
    /// Its place in the stream is the message's first stream sequence, taken when the
    /// message is read whole ([`Exec::place_run`]). A remaining count past 32 bits is a
    /// fault at the data.
    fn run_fragment(
        &mut self,
        out: &mut Dissection,
        (id, parent, start): (NodeId, u32, u64),
        def: &MessageFragmentDef,
        bytes: u32,
    ) -> Step {
        let remaining = def.remaining.map(|s| u32::try_from(self.slot(s)));
        let (first, last) = match remaining {
            Some(Ok(r)) => (false, r == 0),
            _ => (
                def.first.is_some_and(|s| self.slot(s) != 0),
                def.last.is_some_and(|s| self.slot(s) != 0),
            ),
        };
        if let Some(m) = out.messages.last_mut() {
            m.fragment = Some(MessageFragment {
                key: [0; 3],
                id: 0,
                count: 0,
                offset: None,
                total: None,
                data_at: (start / 8) as u32,
                data_len: bytes,
                run: Some(RunPart {
                    stream: 0,
                    key: [0; 2],
                    sequence: 0,
                    remaining: remaining.and_then(Result::ok),
                    first,
                    last,
                }),
            });
        }
        if matches!(remaining, Some(Err(_))) {
            let field = self.path(out, parent, Label::Node(id));
            let reason = "a fragment's remaining count is 32-bit".to_string();
            return self.fault(out, FaultKind::OutOfRange, field, start, reason);
        }
        Ok(())
    }

    /// A message read whole: a count-down or flagged fragment takes its place in the
    /// message's first stream (none: it is not placed, and not reassembled).
    pub(super) fn place_run(&self, out: &mut Dissection) {
        let Some(m) = out.messages.last_mut() else { return };
        let stream = m.streams[0];
        if let Some(f) = m.fragment.as_mut()
            && f.run.is_some()
        {
            match stream {
                Some(s) => {
                    if let Some(r) = f.run.as_mut() {
                        (r.stream, r.key, r.sequence) = (s.stream, s.key, s.sequence);
                    }
                }
                None => m.fragment = None,
            }
        }
    }
}
