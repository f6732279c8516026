//! Capture timestamps: pcapng resolutions in powers of ten and of two, and timestamps
//! too large for nanoseconds in an i64 (reproducers F6 and F7 of the correctness sweep).

use gpcap::capture::CaptureReader;

fn block(ty: u32, body: &[u8]) -> Vec<u8> {
    let pad = (4 - body.len() % 4) % 4;
    let len = (12 + body.len() + pad) as u32;
    let mut b = Vec::new();
    b.extend(ty.to_le_bytes());
    b.extend(len.to_le_bytes());
    b.extend(body);
    b.extend(vec![0; pad]);
    b.extend(len.to_le_bytes());
    b
}

/// A pcapng file: one Ethernet interface with `if_tsresol` = `tsresol`, and a packet at
/// each of `units`.
fn pcapng(tsresol: u8, units: &[u64]) -> Vec<u8> {
    let mut shb = Vec::new();
    shb.extend(0x1A2B_3C4Du32.to_le_bytes());
    shb.extend(1u16.to_le_bytes());
    shb.extend(0u16.to_le_bytes());
    shb.extend((-1i64).to_le_bytes());
    let mut out = block(0x0A0D_0D0A, &shb);
    let mut idb = Vec::new();
    idb.extend(1u16.to_le_bytes());
    idb.extend(0u16.to_le_bytes());
    idb.extend(65535u32.to_le_bytes());
    idb.extend([9, 0, 1, 0, tsresol, 0, 0, 0]); // if_tsresol
    idb.extend([0, 0, 0, 0]); // end of options
    out.extend(block(1, &idb));
    for &u in units {
        let data = [0u8; 14];
        let mut epb = Vec::new();
        epb.extend(0u32.to_le_bytes());
        epb.extend(((u >> 32) as u32).to_le_bytes());
        epb.extend((u as u32).to_le_bytes());
        epb.extend((data.len() as u32).to_le_bytes());
        epb.extend((data.len() as u32).to_le_bytes());
        epb.extend(data);
        out.extend(block(6, &epb));
    }
    out
}

fn times(bytes: Vec<u8>) -> Vec<i64> {
    let mut r = CaptureReader::from_read("t.pcapng", std::io::Cursor::new(bytes)).unwrap();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        out.push(f.ts_ns);
    }
    out
}

#[test]
fn power_of_two_resolution() {
    // 0x8A: units of 2^-10 s; 10240 units are 10 s (they were read as microseconds).
    assert_eq!(times(pcapng(0x8A, &[0, 10_240])), vec![0, 10_000_000_000]);
    // 0x80: whole seconds.
    assert_eq!(times(pcapng(0x80, &[3])), vec![3_000_000_000]);
}

#[test]
fn power_of_ten_resolutions() {
    assert_eq!(times(pcapng(6, &[1_500_000])), vec![1_500_000_000]);
    assert_eq!(times(pcapng(9, &[42])), vec![42]);
    assert_eq!(times(pcapng(0, &[7])), vec![7_000_000_000]);
}

#[test]
fn timestamps_past_the_nanosecond_range_saturate_and_durations_never_go_negative() {
    // Whole seconds around 2^54: their nanoseconds exceed an i64 (they used to wrap).
    let t = times(pcapng(0, &[(1 << 54) - 1, 1 << 54]));
    assert_eq!(t, vec![i64::MAX, i64::MAX]);
    let path = std::env::temp_dir().join(format!("gpcap-ts-{}.pcapng", std::process::id()));
    std::fs::write(&path, pcapng(0, &[(1 << 54) - 1, 1 << 54])).unwrap();
    let mut a = gpcap::analysis::Analyzer::new(gpcap::analysis::Config::default());
    let mut r = CaptureReader::open(&path).unwrap();
    a.begin_file("t.pcapng");
    while let Some(f) = r.next_frame().unwrap() {
        a.frame(&f);
    }
    let report = a.finish();
    let _ = std::fs::remove_file(&path);
    assert!(report.capture.duration_s >= 0.0, "{}", report.capture.duration_s);
}
