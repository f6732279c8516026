//! Read throughput of the shared bit reader (fields/s, mixed widths 1–32) and CRC
//! throughput (bytes/s) on 64- and 1200-byte payloads.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpcap::bits::{BitReader, BitWriter};
use gpcap::validate::{ProtocolId, packet_crc};
use std::hint::black_box;

fn widths(n: usize) -> Vec<u32> {
    // A fixed pseudo-random mix of widths 1..=32.
    let mut x = 0x2545_f491u32;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x % 32 + 1
        })
        .collect()
}

fn read_fields(c: &mut Criterion) {
    let ws = widths(4096);
    let mut w = BitWriter::new();
    for (i, &n) in ws.iter().enumerate() {
        let v = (i as u32).wrapping_mul(2_654_435_761) & (u32::MAX >> (32 - n));
        w.write_bits(v, n).unwrap();
    }
    let data = w.finish();
    let mut g = c.benchmark_group("bit_reader");
    g.throughput(Throughput::Elements(ws.len() as u64));
    g.bench_function("read_mixed_1_32", |b| {
        b.iter(|| {
            let mut r = BitReader::new(black_box(&data));
            let mut acc = 0u32;
            for &n in &ws {
                acc ^= r.read_bits(n).unwrap_or(0);
            }
            acc
        })
    });
    g.finish();
}

fn crc(c: &mut Criterion) {
    let id = ProtocolId::new32(0x5566_7788);
    let mut g = c.benchmark_group("crc");
    for size in [64usize, 1200] {
        let data: Vec<u8> = (0..size).map(|i| i as u8).collect();
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(format!("protocol_crc_{size}"), |b| {
            b.iter(|| packet_crc(id, black_box(&data)))
        });
    }
    g.finish();
}

criterion_group!(benches, read_fields, crc);
criterion_main!(benches);
