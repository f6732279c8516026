//! The reassembly section as a tap of its own: how each reassembled packet validated,
//! the fragments each flow's table saw by fragment count, the attacks it refused, the
//! messages sent in one fragment, and the reassembly memory's peak. It counts as the
//! engine reports them, merges across shards and closes into the report's `reassembly`
//! once, at the end (the totals, loss and finding are derived there, with the flows; a
//! sharded run's peak is the shards' together, set after it).

use super::report::ReassemblyReport;
use gpcap_engine::{FlowEnd, Status};

#[derive(Clone, Default)]
pub(super) struct ReassemblyTap {
    counts: ReassemblyReport,
}

impl ReassemblyTap {
    /// A packet joined from all its fragments, validated with `status`. True: it is
    /// malformed, a fault of the report's to count.
    pub(super) fn reassembled(&mut self, status: Status) -> bool {
        let r = &mut self.counts;
        r.completed += 1;
        match status {
            Status::CrcMismatch | Status::TooShort => r.crc_fail += 1,
            Status::Ok => r.dissected_ok += 1,
            _ => {
                r.malformed += 1;
                return true;
            }
        }
        false
    }

    /// A flow's reassembly table at its end: what it saw by fragment count, refused, and
    /// took whole.
    pub(super) fn flow_end(&mut self, end: &FlowEnd) {
        let r = &mut self.counts;
        r.attacks.add(&end.attacks);
        r.single_fragment_messages += end.single_fragment_messages;
        for (n, cs) in &end.reassembly {
            r.by_count.entry(*n).or_default().add(cs);
        }
    }

    /// The most memory the reassembly tables held at once.
    pub(super) fn peak(&mut self, bytes: u64) {
        self.counts.peak_bytes = bytes;
    }

    /// Adds a shard's counts.
    pub(super) fn merge(&mut self, o: ReassemblyTap) {
        self.counts.merge(o.counts);
    }

    /// The section's counts, for the report to derive its totals from.
    pub(super) fn finish(self) -> ReassemblyReport {
        self.counts
    }
}
