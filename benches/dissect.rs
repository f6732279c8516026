//! Dissection throughput on scene packets (packets/s; fields/s printed once), with field
//! recording (dissect, TUI) and without (analyze's validation pass).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gpcap::dissect::{self, Dissection, Dissector};
use std::hint::black_box;
use std::sync::Arc;

fn scene() -> Vec<u8> {
    let line = include_str!("../tests/fixtures/vectors.jsonl")
        .lines()
        .find(|l| l.contains("\"scene-2\""))
        .expect("scene-2 vector");
    let v: serde_json::Value = serde_json::from_str(line).expect("json");
    let h = v["hex"].as_str().expect("hex");
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
        .collect()
}

fn bench(c: &mut Criterion) {
    let program = Arc::new(
        dissect::compile("article.kdl", include_str!("../dissectors/article.kdl")).expect("definition"),
    );
    let data = scene();
    let mut d = Dissector::new(program.clone());
    let mut out = Dissection::default();
    d.dissect_into(&data, &mut out);
    assert!(out.fault.is_none());
    let fields = out.fields.len() as u64;
    eprintln!("scene-2: {} bytes, {fields} fields", data.len());
    let mut g = c.benchmark_group("dissect_scene");
    g.throughput(Throughput::Elements(1));
    g.bench_function("record_fields", |b| {
        b.iter(|| {
            d.dissect_into(black_box(&data), &mut out);
            out.fields.len()
        })
    });
    let mut fast = Dissector::new(program);
    fast.record = false;
    g.bench_function("validate_only", |b| {
        b.iter(|| {
            fast.dissect_into(black_box(&data), &mut out);
            out.fault.is_none()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("dissect_scene_fields");
    g.throughput(Throughput::Elements(fields));
    g.bench_function("record_fields", |b| {
        b.iter(|| {
            d.dissect_into(black_box(&data), &mut out);
            out.fields.len()
        })
    });
    // analyze's pass: the same fields validated, not recorded (fields/s, #16's measure).
    g.bench_function("validate_only", |b| {
        b.iter(|| {
            fast.dissect_into(black_box(&data), &mut out);
            out.fault.is_none()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
