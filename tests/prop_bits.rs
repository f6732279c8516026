//! Property tests of the shared reader/writer: every primitive round-trips, the measuring
//! stream predicts the written size exactly, and no byte string panics any reader.

use gpcap::bits::*;
use gpcap::validate::{self, article};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Bits(u32, u32),
    Bool(bool),
    Int(i64, i64, i64),
    U64(u64),
    Float(u32),
    Double(u64),
    Compressed(f32, f32, f32, f32),
    Vector([u32; 3]),
    Quat([u32; 4]),
    Smallest(u32, [f32; 4]),
    Align,
    Bytes(Vec<u8>),
    Str(Vec<u8>, u32),
    Check(u32),
    Indices(Vec<i64>, i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u32..=32)
            .prop_flat_map(|n| (Just(n), 0..=(u32::MAX >> (32 - n))))
            .prop_map(|(n, v)| Op::Bits(n, v)),
        any::<bool>().prop_map(Op::Bool),
        (-100_000i64..100_000, 0i64..=u32::MAX as i64)
            .prop_flat_map(|(min, span)| (Just(min), Just(min + span), min..=min + span))
            .prop_map(|(a, b, v)| Op::Int(a, b, v)),
        any::<u64>().prop_map(Op::U64),
        any::<u32>().prop_map(Op::Float),
        any::<u64>().prop_map(Op::Double),
        (
            -1000.0f32..1000.0,
            0.5f32..2000.0,
            0.001f32..1.0,
            -3000.0f32..3000.0
        )
            .prop_map(|(min, d, res, v)| Op::Compressed(min, min + d, res, v)),
        any::<[u32; 3]>().prop_map(Op::Vector),
        any::<[u32; 4]>().prop_map(Op::Quat),
        (
            2u32..=10,
            [-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0]
        )
            .prop_map(|(b, q)| Op::Smallest(b, q)),
        Just(Op::Align),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Op::Bytes),
        (proptest::collection::vec(any::<u8>(), 0..40), 0u32..20).prop_map(|(s, extra)| {
            let max = s.len() as u32 + 1 + extra;
            Op::Str(s, max)
        }),
        any::<u32>().prop_map(Op::Check),
        (proptest::collection::btree_set(0i64..1000, 0..40), 1000i64..5000)
            .prop_map(|(set, max)| Op::Indices(set.into_iter().collect(), max)),
    ]
}

fn normalize(q: [f32; 4]) -> [f32; 4] {
    let n = q.iter().map(|c| c * c).sum::<f32>().sqrt();
    if n < 1e-3 {
        [0.0, 0.0, 0.0, 1.0]
    } else {
        q.map(|c| c / n)
    }
}

/// Runs `ops` through stream `s`; on read, replaces each op's value with what was read.
fn run<S: Stream>(s: &mut S, ops: &mut [Op]) -> BitResult<()> {
    for op in ops.iter_mut() {
        match op {
            Op::Bits(n, v) => serialize_bits(s, v, *n)?,
            Op::Bool(b) => serialize_bool(s, b)?,
            Op::Int(min, max, v) => serialize_int(s, v, *min, *max)?,
            Op::U64(v) => serialize_uint64(s, v)?,
            Op::Float(b) => {
                let mut f = f32::from_bits(*b);
                serialize_float(s, &mut f)?;
                *b = f.to_bits();
            }
            Op::Double(b) => {
                let mut f = f64::from_bits(*b);
                serialize_double(s, &mut f)?;
                *b = f.to_bits();
            }
            Op::Compressed(min, max, res, v) => serialize_compressed_float(s, v, *min, *max, *res)?,
            Op::Vector(v) => {
                let mut f = v.map(f32::from_bits);
                serialize_vector(s, &mut f)?;
                *v = f.map(f32::to_bits);
            }
            Op::Quat(v) => {
                let mut f = v.map(f32::from_bits);
                serialize_quaternion(s, &mut f)?;
                *v = f.map(f32::to_bits);
            }
            Op::Smallest(bits, q) => serialize_smallest_three(s, q, *bits)?,
            Op::Align => serialize_align(s)?,
            Op::Bytes(b) => serialize_byte_vec(s, b, b.len())?,
            Op::Str(b, max) => serialize_string(s, b, *max)?,
            Op::Check(m) => serialize_check(s, *m)?,
            Op::Indices(list, max) => {
                let mut prev = -1;
                if S::IS_WRITING {
                    for i in list.iter_mut() {
                        serialize_relative_index(s, &mut prev, i, *max)?;
                    }
                    let mut end = *max;
                    serialize_relative_index(s, &mut prev, &mut end, *max)?;
                } else {
                    let expected = list.len();
                    list.clear();
                    loop {
                        let mut i = 0;
                        serialize_relative_index(s, &mut prev, &mut i, *max)?;
                        if i == *max || list.len() > expected {
                            break;
                        }
                        list.push(i);
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn write_read_round_trip(mut ops in proptest::collection::vec(op(), 0..30)) {
        for op in ops.iter_mut() {
            if let Op::Smallest(_, q) = op { *q = normalize(*q); }
        }
        let mut w = WriteStream::new();
        run(&mut w, &mut ops).unwrap();
        let written_bits = w.bits_processed();
        let bytes = w.finish();

        let mut m = MeasureStream::new();
        run(&mut m, &mut ops.clone()).unwrap();
        prop_assert_eq!(m.bits_processed(), written_bits);
        prop_assert_eq!(m.bytes() as usize, bytes.len());

        let mut read = ops.clone();
        let mut r = ReadStream::new(&bytes);
        run(&mut r, &mut read).unwrap();
        prop_assert_eq!(r.bits_processed(), written_bits);
        for (a, b) in ops.iter().zip(read.iter()) {
            match (a, b) {
                (Op::Compressed(min, max, res, v), Op::Compressed(_, _, _, got)) => {
                    let cf = CompressedFloat::new(*min, *max, *res).unwrap();
                    prop_assert_eq!(cf.dequantize(cf.quantize(*v)).to_bits(), got.to_bits());
                }
                (Op::Smallest(bits, q), Op::Smallest(_, got)) => {
                    // Same rotation up to sign, each component within one quantum.
                    let tol = 2.0 / ((1u32 << bits) - 1) as f32 * 1.5 + 0.02;
                    let dot: f32 = q.iter().zip(got.iter()).map(|(x, y)| x * y).sum();
                    let sign = if dot < 0.0 { -1.0 } else { 1.0 };
                    for (x, y) in q.iter().zip(got.iter()) {
                        prop_assert!((x * sign - y).abs() <= tol.max(0.2), "{:?} vs {:?}", q, got);
                    }
                }
                _ => prop_assert_eq!(format!("{a:?}"), format!("{b:?}")),
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300), ops in proptest::collection::vec(op(), 0..30)) {
        let mut ops = ops;
        let mut r = ReadStream::new(&data);
        let _ = run(&mut r, &mut ops);
        let _ = article::read_packet(&data);
        let _ = validate::read_header(&data, &article::format());
        let _ = validate::verify_crc(article::PROTOCOL_ID, &data);
        let mut br = BitReader::new(&data);
        for n in [3u32, 32, 0, 17, 33, 1] {
            let _ = br.read_bits(n);
            let _ = br.read_align();
            let _ = br.read_bytes(n as usize);
        }
    }

    /// The seed hashed once per protocol gives the CRC of one pass over id, zeroed CRC
    /// field and the rest (SPEC §1), for 32- and 64-bit ids.
    #[test]
    fn seeded_crc_is_one_pass_over_the_prefixed_packet(id in any::<u64>(), wide in any::<bool>(),
                                                       data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let id = if wide { validate::ProtocolId::new64(id) } else { validate::ProtocolId::new32(id as u32) };
        let (prefix, n) = id.prefix();
        let mut whole = prefix[..n].to_vec();
        whole.extend_from_slice(&[0; 4]);
        whole.extend_from_slice(data.get(4..).unwrap_or(&[]));
        let expected = (data.len() >= 4).then(|| crc32fast::hash(&whole));
        prop_assert_eq!(validate::CrcSeed::new(id).packet_crc(&data), expected);
        prop_assert_eq!(validate::packet_crc(id, &data), expected);
    }

    #[test]
    fn article_packets_round_trip(seq in any::<u16>(), a in -10i32..=10, b in -20i32..=20, c in -30i32..=30,
                                  items in proptest::collection::vec(-100i32..=100, 0..300)) {
        for body in [article::Body::A(article::PacketA { a, b, c }), article::Body::B(article::PacketB { items })] {
            let bytes = article::write_packet(seq, &body).unwrap();
            prop_assert_eq!(validate::verify_crc(article::PROTOCOL_ID, &bytes), validate::CrcStatus::Ok);
            prop_assert_eq!(article::measure_packet(&body).unwrap() as usize, bytes.len());
            let (h, back) = article::read_packet(&bytes).unwrap();
            prop_assert_eq!(h.sequence, seq);
            prop_assert_eq!(back, body);
        }
    }
}

#[test]
fn errors_locate_the_fault() {
    let data = [0xffu8; 2];
    let mut r = BitReader::new(&data);
    r.read_bits(3).unwrap();
    let e = r.read_bits(14).unwrap_err();
    assert_eq!(
        e,
        BitError::new(
            ErrorKind::PastEnd {
                needed: 14,
                available: 13
            },
            3
        )
    );
    assert_eq!(e.to_string(), "past end: needed 14 bits, 13 available at bit 3");
    let e = r.read_align().unwrap_err();
    assert_eq!(
        e,
        BitError::new(ErrorKind::NonZeroPadding { value: 0x1f, bits: 5 }, 3)
    );

    let mut s = ReadStream::new(&[0x1f]);
    let mut v = 0;
    let e = s.int(&mut v, 0, 20).unwrap_err();
    assert_eq!(
        e,
        BitError::new(
            ErrorKind::OutOfRange {
                value: 31,
                min: 0,
                max: 20
            },
            0
        )
    );

    let mut s = ReadStream::new(&[1, 2, 3, 4]);
    let e = serialize_check(&mut s, END_OF_PACKET).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::CheckMismatch {
            expected: 0x9908_ace2,
            got: 0x0403_0201
        }
    );
    assert_eq!(e.kind.code(), "check");
}

#[test]
fn writer_rejects_bad_arguments_without_panic() {
    let mut w = BitWriter::new();
    assert!(w.write_bits(4, 2).is_err());
    assert!(w.write_bits(0, 33).is_err());
    let mut s = WriteStream::new();
    assert!(serialize_int(&mut s, &mut 11, 0, 10).is_err());
    assert!(serialize_int(&mut s, &mut 0, 5, 1).is_err());
    assert!(serialize_int(&mut s, &mut 0, 0, 1 << 33).is_err());
    assert!(serialize_smallest_three(&mut s, &mut [0.0; 4], 11).is_err());
    assert!(serialize_compressed_float(&mut s, &mut 0.0, 1.0, 1.0, 0.1).is_err());
}

#[test]
fn int_width_is_bits_required() {
    assert_eq!(int_width(0, 0), Some(0));
    assert_eq!(int_width(0, 1), Some(1));
    assert_eq!(int_width(0, 5), Some(3));
    assert_eq!(int_width(-10, 10), Some(5));
    assert_eq!(int_width(126, 1025), Some(10));
    assert_eq!(int_width(0, u32::MAX as i64), Some(32));
    assert_eq!(int_width(i64::MIN, i64::MAX), None);
}
