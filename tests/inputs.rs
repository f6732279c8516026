//! Inputs cut or damaged: every complete frame is kept and where reading stopped is said
//! in words (reproducer F1 of the correctness sweep).

use gpcap::capture::CaptureReader;
use std::io::Write;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn read_all(bytes: Vec<u8>) -> (u64, Option<String>) {
    let mut r = CaptureReader::from_read("cut.pcap.gz", std::io::Cursor::new(bytes)).unwrap();
    let mut n = 0;
    while let Some(_f) = r.next_frame().unwrap() {
        n += 1;
    }
    (n, r.truncated_tail.map(|t| t.to_string()))
}

/// Regression: a cut gzip capture under ~32 KiB compressed was rejected whole ("ReadError
/// at byte offset 0") although thousands of complete records precede the cut.
#[test]
fn a_cut_gzip_capture_keeps_every_complete_frame() {
    let plain = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/captures/clean.pcap")).unwrap();
    let whole = read_all(plain.clone()).0;
    let gz = gzip(&plain);
    assert_eq!(read_all(gz.clone()), (whole, None));
    for cut in [gz.len() / 2, 20_000, 5_000] {
        let (frames, tail) = read_all(gz[..cut].to_vec());
        assert!(
            frames > 0 && frames < whole,
            "cut at {cut}: {frames} of {whole} frames"
        );
        let tail = tail.unwrap_or_else(|| panic!("cut at {cut}: no word of the cut"));
        assert!(
            tail.contains("cut.pcap.gz") && tail.contains("byte offset"),
            "{tail}"
        );
    }
}

/// A gzip stream cut exactly between records says the stream was cut.
#[test]
fn a_gzip_stream_cut_between_records_says_so() {
    let plain = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/captures/clean.pcap")).unwrap();
    // Compress the header and the first records, and cut the stream's trailer off.
    let first = 24 + 16 + u32::from_le_bytes(plain[32..36].try_into().unwrap()) as usize;
    let gz = gzip(&plain[..first]);
    let (frames, tail) = read_all(gz[..gz.len() - 8].to_vec());
    assert_eq!(frames, 1);
    assert!(tail.is_some_and(|t| t.contains("gzip stream is cut short")));
}

/// Regression: damaged records were reported with the parser's internal names
/// ("malformed record (Verify)", "ReadError"); now in words, with the byte offset.
#[test]
fn damaged_records_are_described_in_words() {
    let ng = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/captures/ipv6-sll2.pcapng")).unwrap();
    // Break the second block's trailing length copy, then its type, then its length.
    let first = u32::from_le_bytes(ng[4..8].try_into().unwrap()) as usize;
    let second = u32::from_le_bytes(ng[first + 4..first + 8].try_into().unwrap()) as usize;
    for (at, byte) in [(first + second - 4, 0x55u8), (first + 4, 0x03), (first + 5, 0xff)] {
        let mut bad = ng.clone();
        bad[at] = byte;
        let mut r = CaptureReader::from_read("bad.pcapng", std::io::Cursor::new(bad)).unwrap();
        let mut message = None;
        loop {
            match r.next_frame() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    message = Some(e.to_string());
                    break;
                }
            }
        }
        let m = message
            .or(r.truncated_tail.map(|t| t.to_string()))
            .unwrap_or_default();
        for internal in ["Verify", "NomError", "ReadError", "Incomplete", "Error("] {
            assert!(!m.contains(internal), "byte {at}: {m}");
        }
        if !m.is_empty() {
            assert!(m.contains("byte offset"), "byte {at}: {m}");
        }
    }
}

/// Regression: a pcapng block whose length is not a multiple of 4 (or under 12) was
/// reported as "last record truncated"; it is malformed, said so with its offset, and the
/// frames before it are kept.
#[test]
fn an_unaligned_pcapng_block_length_is_malformed_not_truncated() {
    fn block(kind: u32, body: &[u8]) -> Vec<u8> {
        let n = (12 + body.len()) as u32;
        [&kind.to_le_bytes()[..], &n.to_le_bytes(), body, &n.to_le_bytes()].concat()
    }
    let shb = block(
        0x0A0D_0D0A,
        &[
            0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    );
    let idb = block(1, &[1, 0, 0, 0, 0xff, 0xff, 0, 0]);
    let mut epb_body = vec![0u8; 20];
    epb_body[12] = 60;
    epb_body[16] = 60;
    epb_body.extend([0u8; 60]);
    let epb = block(6, &epb_body);
    for bad_len in [epb.len() as u32 - 2, 8] {
        let mut bad = epb.clone();
        bad[4..8].copy_from_slice(&bad_len.to_le_bytes());
        let file = [&shb[..], &idb, &epb, &epb, &bad, &epb].concat();
        let at = shb.len() + idb.len() + 2 * epb.len();
        let mut r = CaptureReader::from_read("bad.pcapng", std::io::Cursor::new(file)).unwrap();
        let mut frames = 0;
        let e = loop {
            match r.next_frame() {
                Ok(Some(_)) => frames += 1,
                Ok(None) => panic!("length {bad_len}: read to the end, tail {:?}", r.truncated_tail),
                Err(e) => break e.to_string(),
            }
        };
        assert_eq!(frames, 2);
        assert!(r.truncated_tail.is_none());
        assert!(e.contains(&format!("pcapng block length {bad_len}")), "{e}");
        assert!(e.contains("malformed, not cut short"), "{e}");
        assert!(e.contains(&format!("byte offset {at}")), "{e}");
    }
}
