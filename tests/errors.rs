//! Errors are typed values a program can match on, and read in words as they always did.

use gpcap::capture::{CaptureErrorKind, CaptureReader, IoOp, Malformed, NotACapture, Truncation};
use std::path::PathBuf;

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpcap-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_file_that_is_not_a_capture_says_so_by_kind_and_in_words() {
    let p = temp("not.pcap", b"this is not a capture at all, just text");
    let e = CaptureReader::open(&p).err().expect("not a capture");
    assert_eq!(e.kind, CaptureErrorKind::NotACapture(NotACapture::UnknownMagic));
    assert_eq!(
        e.to_string(),
        format!(
            "{}: not a pcap or pcapng file (unknown magic) at byte offset 0 (after frame 0)",
            p.display()
        )
    );
}

#[test]
fn a_missing_file_is_an_io_error_that_keeps_the_io_error() {
    let p = std::env::temp_dir().join("gpcap-errors-no-such-file.pcap");
    let e = CaptureReader::open(&p).err().expect("no such file");
    match &e.kind {
        CaptureErrorKind::Io { op, error } => {
            assert_eq!(*op, IoOp::Open);
            assert_eq!(error.error().kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains(": cannot open: "), "{e}");
}

#[test]
fn a_cut_last_record_is_a_truncation_with_its_byte_count_and_offset() {
    let whole = std::fs::read("captures/clean.pcap").unwrap();
    // The global header and the first record's header, plus 5 bytes of its data.
    let first_len = u32::from_le_bytes(whole[32..36].try_into().unwrap()) as usize;
    assert!(first_len > 5);
    let p = temp("cut.pcap", &whole[..24 + 16 + 5]);
    let mut r = CaptureReader::open(&p).unwrap();
    while r.next_frame().unwrap().is_some() {}
    let tail = r.truncated_tail.clone().expect("truncated");
    assert_eq!(
        tail.kind,
        CaptureErrorKind::Truncated(Truncation::LastRecord { bytes: 21 })
    );
    assert_eq!((tail.offset, tail.frame), (24, 0));
    assert!(tail.to_string().ends_with(
        ": last record truncated (21 bytes of an incomplete record) at byte offset 24 (after frame 0)"
    ));
}

#[test]
fn a_corrupt_record_header_is_malformed_not_truncated() {
    let mut whole = std::fs::read("captures/clean.pcap").unwrap();
    // The first record claims 1 GiB captured.
    whole[32..36].copy_from_slice(&(1u32 << 30).to_le_bytes());
    let p = temp("corrupt.pcap", &whole);
    let mut r = CaptureReader::open(&p).unwrap();
    let e = loop {
        match r.next_frame() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("read to the end"),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(
            e.kind,
            CaptureErrorKind::Malformed(Malformed::CorruptHeader { .. } | Malformed::TooLarge { .. })
        ),
        "{e:?}"
    );
}

#[test]
fn a_report_keeps_the_error_as_json_printed_it() {
    let e = gpcap::CaptureError::at_start("x.pcap", NotACapture::TooShort.into());
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"file":"x.pcap","offset":0,"frame":0,"message":"file too short to hold a capture header"}"#
    );
}

#[test]
fn a_gate_that_does_not_parse_is_its_own_error() {
    use gpcap::analysis::gates::{Gate, GateError};
    let e = Gate::parse("frag-loss=2").unwrap_err();
    assert_eq!(e, GateError::FragLossRate("frag-loss=2".into()));
    let e: gpcap::Error = e.into();
    assert_eq!(
        e.to_string(),
        "--fail-on frag-loss=2: frag-loss=RATE takes a rate from 0 to 1, e.g. frag-loss=0.05"
    );
}
