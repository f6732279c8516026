//! Fragmented packets put together ahead of the ordered stage. A validation worker that
//! finds every fragment of a packet inside its batch joins them and validates the
//! packet there, on any core. The ordered stage still alone decides what completes
//! (duplicates, staleness, budgets, count changes) and takes the worker's verdict only
//! for the very bytes it joined itself: validation is a function of the bytes, so the
//! report cannot change. It only moves work off the one stage that cannot run in
//! parallel (a third of its time on the 1 GB benchmark, where fragments are 30% of bytes).

use super::batch::Batch;
use super::event::PackedFlow;
use super::reassembly::MAX_FRAGMENT_COUNT;
use super::{Prepared, Status, Validator, Verdict};
use hashbrown::HashMap;

/// No fragment of that id yet.
const MISSING: u32 = u32::MAX;

/// What was found in a batch's frames ahead of the ordered stage: one [`Prepared`] a
/// frame, and the fragmented packets a worker joined.
#[derive(Default)]
pub struct Found {
    pub pre: Vec<Prepared>,
    pub joined: Joined,
    /// The plaintexts workers opened (see [`Prepared`]'s `opened`).
    pub plain: Vec<u8>,
}

impl Found {
    pub fn clear(&mut self) {
        self.pre.clear();
        self.joined.clear();
        self.plain.clear();
    }
}

/// The packets a worker joined from one batch's fragments, with their verdicts.
#[derive(Default)]
pub struct Joined {
    bytes: Vec<u8>,
    /// (start, length) in `bytes`, and the verdict.
    packets: Vec<(usize, usize, Verdict)>,
}

impl Joined {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.packets.clear();
    }

    /// The verdict on `packet`, if `index` (from a frame's [`Prepared::joined`]) names a
    /// packet a worker joined with exactly these bytes.
    #[inline]
    pub fn verdict(&self, index: u32, packet: &[u8]) -> Option<Verdict> {
        let &(start, len, v) = self.packets.get(index as usize)?;
        (self.bytes.get(start..start + len)? == packet).then_some(v)
    }
}

/// One packet's fragments seen so far in the batch: the frame carrying each id.
struct Group {
    frames: Vec<u32>,
    received: u32,
}

/// A worker's fragments in waiting, by flow, sequence and fragment count. Its memory is
/// kept from batch to batch.
#[derive(Default)]
pub struct Joiner {
    groups: HashMap<(PackedFlow, u16, u32), Group>,
    spare: Vec<Vec<u32>>,
}

impl Joiner {
    /// Joins and validates every packet whose fragments all lie in `batch` (whose
    /// frames `pre` describes), and marks it on the frame that completes it.
    pub fn join(&mut self, batch: &Batch, pre: &mut [Prepared], validator: &mut Validator, out: &mut Joined) {
        out.clear();
        if !pre
            .iter()
            .any(|p| p.verdict.is_some_and(|v| v.fragment.is_some()))
        {
            return;
        }
        for i in 0..pre.len().min(batch.len()) {
            let (Some(udp), Some(v)) = (pre[i].udp, pre[i].verdict) else {
                continue;
            };
            let (Some(frag), Some(sequence), Status::Ok | Status::Malformed) =
                (v.fragment, v.sequence, v.status)
            else {
                continue;
            };
            // What the ordered stage refuses outright never completes there either.
            if frag.count == 0 || frag.count > MAX_FRAGMENT_COUNT || frag.id >= frag.count {
                continue;
            }
            let key = (
                PackedFlow::new(udp.ip.src, udp.ip.dst, udp.ports.0, udp.ports.1),
                sequence as u16,
                frag.count,
            );
            let spare = &mut self.spare;
            let g = self.groups.entry(key).or_insert_with(|| {
                let mut frames = spare.pop().unwrap_or_default();
                frames.clear();
                frames.resize(frag.count as usize, MISSING);
                Group { frames, received: 0 }
            });
            let Some(slot) = g.frames.get_mut(frag.id as usize) else {
                continue;
            };
            if *slot != MISSING {
                continue;
            }
            *slot = i as u32;
            g.received += 1;
            if g.received < frag.count {
                continue;
            }
            // Every fragment is here: the packet, as the ordered stage would join it.
            let start = out.bytes.len();
            for &at in &g.frames {
                if let Some(data) = fragment_data(batch, pre, at) {
                    out.bytes.extend_from_slice(data);
                }
            }
            let verdict = validator.reassembled(&out.bytes[start..]);
            pre[i].joined = Some(out.packets.len() as u32);
            out.packets.push((start, out.bytes.len() - start, verdict));
            // Later copies of the same fragments start again, as the ordered stage
            // would count them duplicates.
            if let Some(g) = self.groups.remove(&key) {
                self.spare.push(g.frames);
            }
        }
        for (_, g) in self.groups.drain() {
            self.spare.push(g.frames);
        }
    }
}

/// The fragment data frame `at` of the batch carries.
fn fragment_data<'b>(batch: &'b Batch, pre: &[Prepared], at: u32) -> Option<&'b [u8]> {
    let p = pre.get(at as usize)?;
    let (udp, frag) = (p.udp?, p.verdict?.fragment?);
    let payload = batch
        .frame_data(at as usize)?
        .get(udp.start as usize..(udp.start + udp.len) as usize)?;
    payload.get(frag.data_offset..frag.data_offset + frag.data_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's verdict stands only for the bytes it joined: any other packet the
    /// ordered stage put together at that frame is validated there again.
    #[test]
    fn a_joined_verdict_holds_only_for_the_same_bytes() {
        let verdict = Verdict {
            status: Status::Malformed,
            sequence: Some(7),
            ..Verdict::default()
        };
        let mut j = Joined::default();
        j.bytes.extend_from_slice(b"abcdef");
        j.packets.push((0, 3, Verdict::default()));
        j.packets.push((3, 3, verdict));
        assert_eq!(j.verdict(1, b"def"), Some(verdict));
        assert_eq!(j.verdict(0, b"abc"), Some(Verdict::default()));
        assert_eq!(j.verdict(1, b"abc"), None);
        assert_eq!(j.verdict(1, b"de"), None);
        assert_eq!(j.verdict(1, b"defg"), None);
        assert_eq!(j.verdict(2, b"def"), None);
        j.clear();
        assert_eq!(j.verdict(1, b"def"), None);
    }
}
