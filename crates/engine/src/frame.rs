//! A frame into the engine: decoded once, its IP fragments joined, its UDP datagram
//! found and tracked in its flow.

use super::*;

impl Engine {
    /// Runs one frame through the stateful stage only, with what a worker already found
    /// in it (see [`Engine::prepare`]): the frame is not decoded again, and a whole UDP
    /// datagram's verdict is not computed again.
    /// `joined`: the packets workers joined from the frame's batch; `plain`, the
    /// plaintexts they opened in it.
    pub fn frame_with<S: Sink + ?Sized>(
        &mut self,
        f: &Frame<'_>,
        pre: &Prepared,
        (joined, plain): (&Joined, &[u8]),
        sink: &mut S,
    ) -> Result<Flow, SinkError> {
        let mut sink = Watch::new(sink);
        match &pre.udp {
            Some(u) => {
                let payload = f
                    .data
                    .get(u.start as usize..(u.start + u.len) as usize)
                    .unwrap_or(&[]);
                let decoded = Decoded::Udp {
                    ip: u.ip,
                    src_port: u.ports.0,
                    dst_port: u.ports.1,
                    payload,
                    truncated: u.truncated,
                };
                // Read where the worker left it: a copy staged on the stack first was
                // read back before its stores had landed (store forwarding stalls).
                let preset = Preset {
                    verdict: pre.verdict.as_ref(),
                    joined: pre.joined.map(|i| (joined, i)),
                    opened: pre.opened.as_ref().map(|o| (o, plain)),
                };
                self.frame_decoded(f, decoded, preset, &mut sink)
            }
            None => self.frame_decoded(f, decode(f.linktype, f.data), Preset::default(), &mut sink),
        }
        sink.outcome()
    }

    /// The stateless part of a frame, for a worker to compute ahead of the engine: its
    /// UDP datagram found by decoding, and the verdict on it when it is whole and on the
    /// protocol's ports (validation is a function of the payload alone).
    #[inline]
    pub fn prepare(ports: &PortSet, validator: &mut Validator, f: &Frame<'_>) -> Prepared {
        let decoded = decode(f.linktype, f.data);
        let mut pre = Prepared::decoded(f, &decoded);
        if let Decoded::Udp {
            src_port,
            dst_port,
            payload,
            truncated: false,
            ..
        } = decoded
            && !f.snaplen_truncated()
            && ports.on_port(src_port, dst_port)
        {
            pre.verdict = Some(validator.datagram(payload));
        }
        pre
    }

    /// Runs one frame through both stages and hands its events to `sink`; whether the
    /// sink asked to stop, or why it failed.
    pub fn frame<S: Sink + ?Sized>(&mut self, f: &Frame<'_>, sink: &mut S) -> Result<Flow, SinkError> {
        let mut sink = Watch::new(sink);
        self.frame_decoded(f, decode(f.linktype, f.data), Preset::default(), &mut sink);
        sink.outcome()
    }

    /// `preset`: what a worker computed on the whole datagram, if anything.
    pub(super) fn frame_decoded<S: Sink + ?Sized>(
        &mut self,
        f: &Frame<'_>,
        decoded: Decoded<'_>,
        preset: Preset<'_>,
        sink: &mut Watch<'_, S>,
    ) {
        let held = self.budget.used;
        self.budget.frame_start();
        let mut e = PacketEvent::new(f, self.file);
        let snap_cut = f.snaplen_truncated();
        match decoded {
            Decoded::Udp {
                ip,
                src_port,
                dst_port,
                payload,
                truncated,
            } => {
                e.layer = Layer::Udp;
                self.datagram(
                    &mut e,
                    f,
                    ip,
                    (src_port, dst_port),
                    payload,
                    truncated || snap_cut,
                    1,
                    preset,
                    sink,
                );
            }
            Decoded::IpFragment {
                ip,
                protocol,
                payload,
            } => {
                e.kind = Kind::IpPiece;
                e.layer = Layer::IpPiece { protocol };
                e.ip = Some(ip);
                self.ip_pieces += 1;
                let mut done = false;
                if let Some(r) = self.defrag.push(f.ts_ns, &ip, protocol, payload) {
                    if r.protocol == 17 {
                        match udp_from_reassembled(r.ip, &r.data) {
                            Decoded::Udp {
                                ip,
                                src_port,
                                dst_port,
                                payload,
                                truncated,
                            } => {
                                // The layer stays `IpPiece`: this frame carried the last piece.
                                let mut e = e;
                                self.datagram(
                                    &mut e,
                                    f,
                                    ip,
                                    (src_port, dst_port),
                                    payload,
                                    truncated,
                                    r.fragments,
                                    Preset::default(),
                                    sink,
                                );
                                done = true;
                            }
                            _ => e.layer = Layer::RebuiltBadUdp,
                        }
                    } else {
                        e.layer = Layer::RebuiltNotUdp;
                    }
                }
                if self.ip_pieces.is_multiple_of(1024) {
                    self.defrag.expire(f.ts_ns);
                }
                if !done {
                    sink.pass(&e);
                }
            }
            Decoded::Icmp(icmp) => {
                e.kind = Kind::Icmp;
                e.layer = Layer::Icmp(icmp);
                sink.pass(&e);
            }
            Decoded::Other(what) => {
                e.layer = Layer::Other(what);
                sink.pass(&e);
            }
            Decoded::Malformed { layer, ref reason } => {
                e.kind = Kind::BadFrame;
                e.layer = Layer::Malformed { layer, reason };
                e.truncated = snap_cut;
                sink.pass(&e);
            }
            Decoded::UnsupportedLink(t) => {
                e.layer = Layer::UnsupportedLink(t);
                sink.pass(&e);
            }
        }
        if let Some(log) = &mut self.memory_log
            && (self.budget.frame_peak != held || self.budget.used != held)
        {
            log.push(MemoryMark {
                at: (self.file, f.number),
                high: self.budget.frame_peak,
                after: self.budget.used,
            });
        }
    }

    /// The flow's index, tracking it if there is room.
    #[inline]
    pub(super) fn track(
        &mut self,
        packed: PackedFlow,
        key: impl FnOnce() -> FlowId,
        frame: u64,
    ) -> Option<u32> {
        for (last, i) in self.recent.iter().flatten() {
            if *last == packed {
                return Some(*i);
            }
        }
        if let Some(&i) = self.flow_index.get(&packed) {
            self.recent = [Some((packed, i)), self.recent[0]];
            return Some(i);
        }
        if self.flows.len() >= self.cfg.max_flows {
            return None;
        }
        let i = self.flows.len() as u32;
        self.flow_index.insert(packed, i);
        self.recent = [Some((packed, i)), self.recent[0]];
        self.flows.push(FlowState {
            key: key(),
            seq: SeqTracker::new(self.cfg.sequence_bits()),
            spaces: Vec::new(),
            frags: FlowReassembly::default(),
            first_frame: frame,
            streams: None,
            messages: None,
            runs: None,
        });
        Some(i)
    }
}
