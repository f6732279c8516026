//! The validation section as a tap of its own: each datagram's verdict (checksum, length,
//! header), the packets and fragments that passed, the faults of bodies by cause with
//! their first examples, and the first datagram the description failed on. It counts
//! as packets come, merges across shards and closes into the report's `validation`,
//! `malformed` and `first_failure` once, at the end; nothing else counts into them
//! (`Report::finalize` adds the derived `wrong_direction`).

use super::Config;
use super::flow::{CRC_SAMPLES, FlowState};
use super::report::{FirstFailure, MALFORMED_EXAMPLES, Malformed, MalformedExample, Report, Validation};
use gpcap_dissect::FaultKind;
use gpcap_engine::{PacketEvent, Status};
use gpcap_wire::decode::FlowId;

#[derive(Clone, Default)]
pub(super) struct ValidationTap {
    counts: Validation,
    malformed: Malformed,
    first_failure: Option<FirstFailure>,
}

impl ValidationTap {
    /// The datagram's verdict. False: nothing more to count (cut short, failed its
    /// checksum, too short, unverified, or a header that did not read).
    #[inline(always)]
    pub(super) fn verdict(&mut self, flow: &mut FlowState, cfg: &Config, e: &PacketEvent) -> bool {
        let s = &mut flow.stats;
        let v = &mut self.counts;
        v.examined += 1;
        match e.status {
            Status::Truncated => {
                s.truncated += 1;
                v.truncated += 1;
                return false;
            }
            Status::CrcMismatch => {
                s.crc_fail += 1;
                v.crc_mismatch += 1;
                if cfg.checksum.is_crc32() && flow.crc_ids.len() < CRC_SAMPLES {
                    flow.crc_ids.extend(gpcap_engine::identify::solve32(e.payload));
                }
                return false;
            }
            Status::TooShort => {
                s.too_short += 1;
                v.too_short += 1;
                return false;
            }
            Status::Unverified => {
                v.crc_unverified += 1;
                return false;
            }
            _ => {}
        }
        // A checksum declared by field is checked after the header is read: a header that
        // cannot be read leaves it unchecked, not ok.
        if e.crc.is_some() || cfg.checksum != gpcap_dissect::program::Checksum::Field {
            v.crc_ok += 1;
            s.crc_ok += 1;
        }
        if e.status != Status::BadHeader {
            return true;
        }
        let code = e.fault.map_or("header", |f| f.code());
        *v.header_errors.entry(code.into()).or_default() += 1;
        s.malformed += 1;
        s.header_errors += 1;
        self.first_failure(e, code);
        false
    }

    /// A packet whose body read with `kind` of fault, of flow `key`; `fit`: a fault of
    /// the description's (not a key that did not open the body, nor a replay).
    #[inline(always)]
    pub(super) fn fault(&mut self, e: &PacketEvent, kind: FaultKind, key: FlowId, fit: bool) {
        self.count_fault(kind, e.frame, key);
        if fit {
            self.first_failure(e, kind.code());
        }
    }

    /// One more packet that passed, whole.
    #[inline(always)]
    pub(super) fn packet(&mut self) {
        self.counts.packets += 1;
    }

    /// One more fragment that passed.
    #[inline(always)]
    pub(super) fn fragment(&mut self) {
        self.counts.fragments += 1;
    }

    /// A fault counted by cause, with the first examples.
    pub(super) fn count_fault(&mut self, kind: FaultKind, frame: u64, flow: FlowId) {
        let m = &mut self.malformed;
        m.total += 1;
        *m.by_cause.entry(kind.code().into()).or_default() += 1;
        if m.examples.len() < MALFORMED_EXAMPLES {
            m.examples.push(MalformedExample {
                frame,
                flow,
                cause: kind.code().into(),
            });
        }
    }

    /// Keeps the earliest datagram the description failed on.
    fn first_failure(&mut self, e: &PacketEvent, cause: &str) {
        if self.first_failure.is_none() {
            self.first_failure = Some(FirstFailure {
                file: e.file,
                frame: e.frame,
                cause: cause.to_string(),
                field: None,
                bit: None,
            });
        }
    }

    /// Adds a shard's counts; the examples and the first failure kept are the earliest.
    pub(super) fn merge(&mut self, o: ValidationTap) {
        self.counts.merge(o.counts);
        self.malformed.merge(o.malformed);
        self.first_failure = super::report::earliest(self.first_failure.take(), o.first_failure);
    }

    /// Writes the section into the report.
    pub(super) fn finish(self, r: &mut Report) {
        r.validation = self.counts;
        r.malformed = self.malformed;
        r.first_failure = self.first_failure;
    }
}
