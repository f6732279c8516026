//! The "article" profile of `../shared/conformance/README.md` written by hand with the
//! unified serialize functions: the reference the dissector definitions are checked
//! against, and the way tests and benchmarks make real packets.

use super::crc::{ProtocolId, write_crc};
use super::header::{FRAGMENT_TYPE, Header, HeaderFormat, serialize_header};
use crate::bits::*;

pub const PROTOCOL_ID: ProtocolId = ProtocolId::new32(0x5566_7788);
pub const MAX_OBJECTS: i64 = 1024;
pub const MISC_BODY: u32 = hash_string("misc body");

pub fn format() -> HeaderFormat {
    HeaderFormat::default()
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacketA {
    pub a: i32,
    pub b: i32,
    pub c: i32,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacketB {
    pub items: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacketC {
    pub position: [f32; 3],
    pub at_rest: bool,
    pub velocity: [f32; 3],
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    pub index: i64,
    pub position: [f32; 3],
    pub orientation: [f32; 4],
    pub at_rest: bool,
    pub linear_velocity: [f32; 3],
    pub angular_velocity: [f32; 3],
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scene {
    pub objects: Vec<Object>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Misc {
    pub name: Vec<u8>,
    pub id: u64,
    pub t: f64,
    pub blob: Vec<u8>,
    pub flags: [bool; 5],
    pub health: f32,
    pub big: i32,
    pub raw: u32,
    pub values: [Option<u8>; 16],
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    A(PacketA),
    B(PacketB),
    C(PacketC),
    Scene(Scene),
    Misc(Misc),
}

impl Body {
    pub fn packet_type(&self) -> u32 {
        match self {
            Body::A(_) => 1,
            Body::B(_) => 2,
            Body::C(_) => 3,
            Body::Scene(_) => 4,
            Body::Misc(_) => 5,
        }
    }

    fn empty(packet_type: u32) -> Option<Body> {
        Some(match packet_type {
            1 => Body::A(PacketA::default()),
            2 => Body::B(PacketB::default()),
            3 => Body::C(PacketC::default()),
            4 => Body::Scene(Scene::default()),
            5 => Body::Misc(Misc::default()),
            _ => return None,
        })
    }
}

impl PacketA {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        serialize_int32(s, &mut self.a, -10, 10)?;
        serialize_int32(s, &mut self.b, -20, 20)?;
        serialize_int32(s, &mut self.c, -30, 30)
    }
}

impl PacketB {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        let mut n = self.items.len() as i64;
        s.int(&mut n, 0, 16384)?;
        if S::IS_READING {
            self.items.clear();
            self.items.resize(n as usize, 0);
        }
        for item in self.items.iter_mut() {
            serialize_int32(s, item, -100, 100)?;
        }
        Ok(())
    }
}

impl PacketC {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        serialize_vector(s, &mut self.position)?;
        serialize_bool(s, &mut self.at_rest)?;
        if !self.at_rest {
            serialize_vector(s, &mut self.velocity)?;
        } else if S::IS_READING {
            self.velocity = [0.0; 3];
        }
        Ok(())
    }
}

impl Object {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        serialize_compressed_vector(s, &mut self.position, -1000.0, 1000.0, 0.001)?;
        serialize_smallest_three(s, &mut self.orientation, 10)?;
        serialize_bool(s, &mut self.at_rest)?;
        if !self.at_rest {
            serialize_compressed_vector(s, &mut self.linear_velocity, -10.0, 10.0, 0.01)?;
            serialize_compressed_vector(s, &mut self.angular_velocity, -20.0, 20.0, 0.01)?;
        }
        Ok(())
    }
}

impl Scene {
    /// Objects by relative index, ended by the sentinel `MAX_OBJECTS`. Reading is bounded:
    /// indices strictly ascend and may not pass the sentinel.
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        let mut previous = -1i64;
        if S::IS_WRITING {
            for o in self.objects.iter_mut() {
                let mut index = o.index;
                serialize_relative_index(s, &mut previous, &mut index, MAX_OBJECTS)?;
                o.serialize(s)?;
            }
            let mut end = MAX_OBJECTS;
            return serialize_relative_index(s, &mut previous, &mut end, MAX_OBJECTS);
        }
        self.objects.clear();
        loop {
            let mut index = 0;
            serialize_relative_index(s, &mut previous, &mut index, MAX_OBJECTS)?;
            if index == MAX_OBJECTS {
                return Ok(());
            }
            let mut o = Object {
                index,
                ..Object::default()
            };
            o.serialize(s)?;
            self.objects.push(o);
        }
    }
}

impl Misc {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        serialize_string(s, &mut self.name, 32)?;
        serialize_uint64(s, &mut self.id)?;
        serialize_double(s, &mut self.t)?;
        let mut n = self.blob.len() as i64;
        s.int(&mut n, 0, 16)?;
        serialize_byte_vec(s, &mut self.blob, n as usize)?;
        serialize_check(s, MISC_BODY)?;
        for f in self.flags.iter_mut() {
            serialize_bool(s, f)?;
        }
        serialize_compressed_float(s, &mut self.health, 0.0, 100.0, 0.5)?;
        serialize_int32(s, &mut self.big, -100_000, 100_000)?;
        serialize_bits(s, &mut self.raw, 32)?;
        for v in self.values.iter_mut() {
            let mut send = v.is_some();
            serialize_bool(s, &mut send)?;
            if send {
                let mut x = v.unwrap_or(0) as i64;
                s.int(&mut x, 0, 255)?;
                *v = Some(x as u8);
            } else {
                *v = None;
            }
        }
        Ok(())
    }
}

impl Body {
    pub fn serialize<S: Stream>(&mut self, s: &mut S) -> BitResult<()> {
        match self {
            Body::A(p) => p.serialize(s),
            Body::B(p) => p.serialize(s),
            Body::C(p) => p.serialize(s),
            Body::Scene(p) => p.serialize(s),
            Body::Misc(p) => p.serialize(s),
        }
    }
}

/// Header, body and end check of one non-fragment packet.
pub fn serialize_packet<S: Stream>(s: &mut S, header: &mut Header, body: &mut Body) -> BitResult<()> {
    if S::IS_WRITING {
        header.packet_type = body.packet_type();
    }
    serialize_header(s, header, &format())?;
    if S::IS_READING {
        if header.packet_type == FRAGMENT_TYPE {
            return Err(BitError::new(
                ErrorKind::Invalid {
                    what: "fragment where a whole packet was expected",
                },
                48,
            ));
        }
        // `serialize_header` already range-checked the type against num_types.
        *body = Body::empty(header.packet_type).unwrap_or(Body::A(PacketA::default()));
    }
    body.serialize(s)?;
    serialize_check(s, END_OF_PACKET)
}

/// Writes a complete packet with its CRC.
pub fn write_packet(sequence: u16, body: &Body) -> BitResult<Vec<u8>> {
    let mut s = WriteStream::new();
    let mut header = Header {
        crc: 0,
        sequence,
        packet_type: body.packet_type(),
    };
    let mut body = body.clone();
    serialize_packet(&mut s, &mut header, &mut body)?;
    let mut bytes = s.finish();
    write_crc(PROTOCOL_ID, &mut bytes);
    Ok(bytes)
}

/// Reads a complete packet (CRC not checked here).
pub fn read_packet(data: &[u8]) -> BitResult<(Header, Body)> {
    let mut s = ReadStream::new(data);
    let mut header = Header::default();
    let mut body = Body::A(PacketA::default());
    serialize_packet(&mut s, &mut header, &mut body)?;
    Ok((header, body))
}

/// Bytes a packet will take, measured without writing.
pub fn measure_packet(body: &Body) -> BitResult<u64> {
    let mut s = MeasureStream::new();
    let mut header = Header::default();
    let mut body = body.clone();
    serialize_packet(&mut s, &mut header, &mut body)?;
    Ok(s.bytes())
}
