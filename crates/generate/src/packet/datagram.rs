//! Whole datagrams: a packet or a header with its sequence and CRC, and a packet cut
//! into the articles' fragments or a definition's own.

use super::*;

impl PacketWriter<'_> {
    pub(super) fn finish(&mut self, mut w: Out) -> Result<Vec<u8>, GenError> {
        // Most-significant-first bits short of a byte: the byte's low bits are zero.
        if self.msb.1 != 0 {
            let (acc, n) = std::mem::take(&mut self.msb);
            w.writer.write_bits((acc << (8 - n)) as u32, 8)?;
        }
        let mut bytes = w.finish();
        if self.p.params.checksum == gpcap_dissect::program::Checksum::None {
            return Ok(bytes);
        }
        let id = self.p.params.protocol_id.ok_or(GenError::NoProtocolId)?;
        write_crc(id, &mut bytes);
        if let (Some(i), Some(crc)) = (self.crc_leaf, gpcap_wire::validate::stored_crc(&bytes))
            && let Some(l) = self.leaves.get_mut(i)
        {
            l.2 = crc as u64;
        }
        Ok(bytes)
    }

    pub(super) fn start(&mut self) {
        self.msb = (0, 0);
        self.slots.iter_mut().for_each(|s| *s = 0);
        self.leaves.clear();
        self.crc_leaf = None;
    }

    /// A complete packet of `type_id` with `sequence`, CRC included.
    pub fn packet(&mut self, rng: &mut Rng, type_id: u32, sequence: u64) -> Result<Vec<u8>, GenError> {
        let def = self.p.packet(type_id).ok_or(GenError::UnknownType(type_id))?;
        let body = def.body;
        let roles = Roles {
            sequence: Some(sequence),
            packet_type: Some(type_id as u64),
            ..Roles::default()
        };
        let mut w = self.header(rng, &roles, false)?;
        self.header_bytes = w.bits_processed().div_ceil(8) as usize;
        self.block(&mut w, rng, body, &roles)?;
        if let Some(magic) = self.p.params.end_check {
            self.align(&mut w)?;
            self.bits(&mut w, magic, 32)?;
        }
        self.finish(w)
    }

    /// The header, written again with other random values until `fragment when` is
    /// `fragment` (a condition cannot be solved, but a few tries satisfy any that
    /// tests a flag).
    pub(super) fn header(&mut self, rng: &mut Rng, roles: &Roles, fragment: bool) -> Result<Out, GenError> {
        for _ in 0..64 {
            self.start();
            let mut w = Out::default();
            self.block(&mut w, rng, self.p.header, roles)?;
            let Some(when) = self.p.fragment_when else {
                return Ok(w);
            };
            let holds = eval(self.p.expr(when), &self.slots).map_err(|_| GenError::DivisionByZero)? != 0;
            if holds == fragment {
                return Ok(w);
            }
        }
        Err(GenError::FragmentCondition(fragment))
    }

    /// Whether the fragment's data describes what it starts with (`rest data
    /// role=fragment-data { … }`): fragment 0 then carries the packet header.
    pub(super) fn data_describes_header(&self) -> bool {
        self.p.fragment.is_some_and(|f| {
            self.p
                .block(f)
                .iter()
                .any(|&id| matches!(self.p.nodes[id as usize].kind, Kind::Rest { body } if body.len > 0))
        })
    }

    /// Bytes fragment 0 carries beyond `fragment-size`: the last packet's header, when
    /// the fragment's data describes it.
    pub(super) fn fragment_lead(&self) -> usize {
        if self.data_describes_header() {
            self.header_bytes
        } else {
            0
        }
    }

    /// A packet header for the start of fragment 0's data when the definition says
    /// fragment 0 carries it (empty otherwise, drawing nothing from `rng`).
    pub fn fragment_header(&mut self, rng: &mut Rng) -> Result<Vec<u8>, GenError> {
        if !self.data_describes_header() {
            return Ok(Vec::new());
        }
        let ty = self.types().first().copied().ok_or(GenError::UnknownType(0))?;
        let packet = self.packet(rng, ty, 0)?;
        Ok(packet[..self.header_bytes.min(packet.len())].to_vec())
    }

    /// The sequence the last packet's header carries (its role slot).
    pub fn sequence_written(&self) -> Option<i64> {
        let s = Role::Sequence.slot()?;
        self.slots.get(s as usize).copied()
    }

    /// The largest packet the sender can send: what its fragments can carry, or what
    /// fits a UDP datagram when it does not fragment.
    pub fn max_packet(&self, no_fragment: bool) -> usize {
        let fmt = self.p.params.format;
        if self.p.fragment.is_some() && !no_fragment {
            (fmt.fragment_size * fmt.max_fragments) as usize
        } else {
            65_000
        }
    }

    /// A packet of `type_id` about `scale` elements large, shrunk (a quarter each time,
    /// eight tries) until it fits in `max` bytes; the last try is returned either way.
    pub fn packet_within(
        &mut self,
        rng: &mut Rng,
        type_id: u32,
        sequence: u64,
        mut scale: u64,
        max: usize,
    ) -> Result<Vec<u8>, GenError> {
        let mut packet = Vec::new();
        for _ in 0..8 {
            self.scale = scale;
            packet = self.packet(rng, type_id, sequence)?;
            if packet.len() <= max {
                break;
            }
            scale /= 4;
        }
        Ok(packet)
    }

    /// Whether the sender splits `packet` into fragments (over the MTU budget, with a
    /// fragment layout, and fragmenting at all).
    pub fn splits(&self, packet: &[u8], no_fragment: bool) -> bool {
        self.p.fragment.is_some() && !no_fragment && packet.len() > self.p.params.format.mtu_budget as usize
    }

    /// The fragment datagrams that carry `packet`, each with its (id, count).
    pub fn fragments_of(
        &mut self,
        rng: &mut Rng,
        sequence: u64,
        packet: &[u8],
    ) -> Result<Vec<Datagram>, GenError> {
        let size = (self.p.params.format.fragment_size as usize).max(1);
        let lead = self.fragment_lead().min(packet.len());
        let n = (packet.len() - lead).div_ceil(size).max(1) as u32;
        let mut v = Vec::with_capacity(n as usize);
        let (first, rest) = packet.split_at((lead + size).min(packet.len()));
        let chunks = std::iter::once(first).chain(rest.chunks(size));
        for (i, c) in chunks.enumerate() {
            v.push((self.fragment(rng, sequence, i as u32, n, c)?, Some((i as u32, n))));
        }
        Ok(v)
    }

    /// One fragment datagram carrying `data`.
    pub fn fragment(
        &mut self,
        rng: &mut Rng,
        sequence: u64,
        id: u32,
        count: u32,
        data: &[u8],
    ) -> Result<Vec<u8>, GenError> {
        let Some(frag) = self.p.fragment else {
            return Err(GenError::UnknownType(FRAGMENT_TYPE));
        };
        let encoded = match self.p.params.format.count_encoding {
            CountEncoding::Count => count,
            CountEncoding::CountMinusOne => count.wrapping_sub(1) & 0xff,
        };
        let roles = Roles {
            sequence: Some(sequence),
            packet_type: self.p.fragment_when.is_none().then_some(FRAGMENT_TYPE as u64),
            fragment_id: Some(id as u64),
            fragment_count: Some(encoded as u64),
            data: Some(data.to_vec()),
        };
        let mut w = self.header(rng, &roles, true)?;
        self.block(&mut w, rng, frag, &roles)?;
        self.finish(w)
    }
}
