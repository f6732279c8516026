//! The stateless part of the engine: checksum, header and body of one datagram, with no
//! knowledge of flows or order — so it can run for any frame on any core.

use super::config::Config;
use super::event::Status;
use gpcap_dissect::{Dissection, Dissector, FaultKind, FragmentInfo};
use gpcap_wire::validate::{self, CrcSeed, CrcStatus, HeaderFormat};

/// What validation found in one datagram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    pub crc: Option<CrcStatus>,
    pub sequence: Option<u64>,
    pub packet_type: Option<u32>,
    pub fragment: Option<FragmentInfo>,
    pub fault: Option<FaultKind>,
    /// The ack roles (definitions that declare them).
    pub ack: Option<u32>,
    pub ack_bits: Option<u32>,
    /// A declared checksum waits for a value the conversation learnt (`stand-in`):
    /// the engine, which knows the conversation, settles it.
    pub crc_pending: bool,
}

/// Validates datagrams; reuses its buffers, so it allocates nothing once warm.
#[derive(Clone)]
pub struct Validator {
    /// The checksum's constant prefix, hashed once.
    crc: Option<CrcSeed>,
    format: HeaderFormat,
    dissector: Option<Dissector>,
    /// The field tree of the last datagram (recorded only when asked for).
    pub dissection: Dissection,
}

impl Validator {
    /// `record`: keep the field tree of every datagram (dissect, detail views); without
    /// it bodies are only validated, which is much faster.
    pub fn new(cfg: &Config, record: bool) -> Self {
        Validator {
            // A protocol without a checksum is recognised by its header alone.
            crc: cfg
                .protocol_id
                .filter(|_| cfg.checksum == super::config::Checksum::Crc32)
                .map(CrcSeed::new),
            format: cfg.format,
            dissector: cfg.program.clone().map(|p| {
                let mut d = Dissector::new(p);
                d.record = record;
                d
            }),
            dissection: Dissection::default(),
        }
    }

    pub fn records(&self) -> bool {
        self.dissector.as_ref().is_some_and(|d| d.record)
    }

    /// Checksum, then header (and body with a definition). A datagram that fails its
    /// checksum is still dissected when fields are recorded, so it can be shown, but its
    /// header values are not trusted (the verdict carries none). Inlined into its two
    /// callers, so the verdict is not read back from memory before it has landed.
    #[inline]
    pub fn datagram(&mut self, payload: &[u8]) -> Verdict {
        let mut v = Verdict::default();
        self.dissection.fields.clear();
        self.dissection.messages.clear();
        if let Some(seed) = &self.crc {
            let crc = seed.verify(payload);
            v.crc = Some(crc);
            let failed = match crc {
                CrcStatus::Ok => None,
                CrcStatus::Mismatch { .. } => Some(Status::CrcMismatch),
                CrcStatus::TooShort { .. } => Some(Status::TooShort),
            };
            if let Some(status) = failed {
                v.status = status;
                if self.records()
                    && let Some(d) = &mut self.dissector
                {
                    d.dissect_into(payload, &mut self.dissection);
                }
                return v;
            }
        }
        match &mut self.dissector {
            Some(d) => {
                let unsequenced = d.program().sequence_optional;
                d.dissect_into(payload, &mut self.dissection);
                let x = &self.dissection;
                match (x.sequence, x.packet_type) {
                    // With messages, or kinds without one, a datagram sequence is optional.
                    (seq, Some(t)) if seq.is_some() || unsequenced => {
                        v.sequence = seq;
                        v.packet_type = Some(t);
                        v.fragment = x.fragment;
                        v.ack = x.ack;
                        v.ack_bits = x.ack_bits;
                        v.fault = x.fault.as_ref().map(|f| f.kind);
                        v.status = if v.fault.is_some() {
                            Status::Malformed
                        } else {
                            Status::Ok
                        };
                    }
                    _ => {
                        v.status = Status::BadHeader;
                        v.fault = Some(x.fault.as_ref().map_or(FaultKind::PastEnd, |f| f.kind));
                    }
                }
                if v.status != Status::BadHeader && d.program().params.rule.is_some() {
                    if self.dissection.crc_stand_in {
                        v.crc_pending = true;
                    } else {
                        self.settle(&mut v, payload, None);
                    }
                }
            }
            None => match validate::read_header(payload, &self.format) {
                Ok(h) => {
                    v.status = Status::Ok;
                    v.sequence = Some(h.header.sequence as u64);
                    v.packet_type = Some(h.header.packet_type);
                    v.fragment = h.fragment.map(|fh| FragmentInfo {
                        id: fh.fragment_id,
                        count: fh.num_fragments,
                        data_offset: h.body_offset,
                        data_len: payload.len().saturating_sub(h.body_offset),
                        lead: 0,
                    });
                }
                Err(e) => {
                    v.status = Status::BadHeader;
                    v.fault = Some(FaultKind::from_error(&e.kind));
                }
            },
        }
        v
    }

    /// Checks a declared checksum with `stand_in` (zeros when `None`) in its field; a
    /// mismatch takes back the header values, as the articles' CRC does.
    pub fn settle(&mut self, v: &mut Verdict, payload: &[u8], stand_in: Option<&[u8]>) {
        v.crc_pending = false;
        let Some(d) = &self.dissector else { return };
        let p = d.program();
        let (Some(rule), Some(at), Some(stored)) =
            (&p.params.rule, self.dissection.crc_at, self.dissection.crc)
        else {
            return;
        };
        let crc = validate::declared::verify(
            rule.algorithm,
            rule.prefix,
            p.params.protocol_id,
            payload,
            at,
            stored,
            stand_in,
        );
        v.crc = Some(crc);
        let status = match crc {
            CrcStatus::Ok => return,
            CrcStatus::Mismatch { .. } => Status::CrcMismatch,
            CrcStatus::TooShort { .. } => Status::TooShort,
        };
        *v = Verdict {
            status,
            crc: Some(crc),
            ..Verdict::default()
        };
    }

    /// The checksum needs a value this conversation has not shown yet: the datagram
    /// cannot be validated (the fault is located at the field, for `dissect`).
    pub fn unlearnt(&mut self, v: &mut Verdict) {
        let name = self
            .dissector
            .as_ref()
            .and_then(|d| {
                let p = d.program();
                let i = p.params.rule.as_ref()?.stand_in?;
                p.params.remembered.get(i as usize).cloned()
            })
            .unwrap_or_default();
        *v = Verdict {
            status: Status::Unverified,
            fault: Some(FaultKind::Check),
            ..Verdict::default()
        };
        self.dissection.fault = Some(gpcap_dissect::Fault {
            kind: FaultKind::Check,
            field: "checksum".into(),
            bit: self.dissection.crc_at.unwrap_or(0),
            reason: format!("the checksum needs `{name}`, which this conversation has not sent yet"),
        });
    }

    /// A message put back together from fragments inside messages, read as message
    /// type `ty` into `out` (the datagram's own dissection stays as it is).
    pub fn message(&mut self, ty: u32, bytes: &[u8], out: &mut Dissection) -> Verdict {
        let Some(d) = &mut self.dissector else {
            return Verdict::default();
        };
        d.dissect_message_into(ty, bytes, out);
        let fault = out.fault.as_ref().map(|f| f.kind);
        Verdict {
            status: if fault.is_some() {
                Status::Malformed
            } else {
                Status::Ok
            },
            packet_type: Some(ty),
            fault,
            ..Verdict::default()
        }
    }

    /// A packet put back together from fragments: validated and dissected like any other.
    pub fn reassembled(&mut self, packet: &[u8]) -> Verdict {
        let mut v = Verdict::default();
        self.dissection.fields.clear();
        if let Some(seed) = &self.crc {
            let crc = seed.verify(packet);
            v.crc = Some(crc);
            if crc != CrcStatus::Ok {
                v.status = Status::CrcMismatch;
                return v;
            }
        }
        match &mut self.dissector {
            Some(d) => {
                d.dissect_into(packet, &mut self.dissection);
                let x = &self.dissection;
                v.sequence = x.sequence;
                v.packet_type = x.packet_type;
                v.ack = x.ack;
                v.ack_bits = x.ack_bits;
                v.fault = x.fault.as_ref().map(|f| f.kind);
            }
            None => match validate::read_header(packet, &self.format) {
                Ok(h) => {
                    v.sequence = Some(h.header.sequence as u64);
                    v.packet_type = Some(h.header.packet_type);
                }
                Err(_) => v.fault = Some(FaultKind::PastEnd),
            },
        }
        v.status = if v.fault.is_some() {
            Status::Malformed
        } else {
            Status::Ok
        };
        v
    }
}
