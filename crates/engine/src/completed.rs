//! Messages a datagram completed (from fragments that count, or from a run of them in a
//! stream), kept until they follow the datagram's own event: both ways of putting
//! messages together hand them here.

/// Messages the datagram just read completed, waiting to follow its event.
#[derive(Debug, Clone, Default)]
pub struct Completed {
    /// (bytes, frames of its fragments) per message; `len` of them are this datagram's.
    pub(super) messages: Vec<(Vec<u8>, Vec<u64>)>,
    /// The message type each is read as (`reassembled-as`), or none: bytes.
    pub(super) types: Vec<Option<u32>>,
    pub(super) len: usize,
    /// The field tree of the message being emitted.
    pub(super) dissection: gpcap_dissect::Dissection,
}

impl Completed {
    /// Keeps a message the datagram completed, read as `as_type` or as bytes.
    pub fn keep(&mut self, bytes: &[u8], frames: &[u64], as_type: Option<u32>) {
        if self.messages.len() <= self.len {
            self.messages.push(Default::default());
        }
        let (b, fr) = &mut self.messages[self.len];
        b.clear();
        b.extend_from_slice(bytes);
        fr.clear();
        fr.extend_from_slice(frames);
        self.types.truncate(self.len);
        self.types.push(as_type);
        self.len += 1;
    }
}
