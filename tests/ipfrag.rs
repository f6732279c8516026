//! IP defragmentation: pieces in any order give back the datagram; overlapping pieces
//! are refused and counted. (Its cost per piece no longer grows with the pieces already
//! held — reproducer F5; measured by `scripts/bench`, not here.)

use gpcap::decode::IpDefrag;
use gpcap::decode::IpInfo;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr};

fn ip(offset: u32, more: bool) -> IpInfo {
    IpInfo {
        version: 4,
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        total_len: 0,
        header_len: 20,
        dont_fragment: false,
        id: 7,
        frag_offset: offset,
        more_fragments: more,
        vlan: None,
    }
}

/// Pieces of `data`, each a multiple of 8 bytes but the last, from `sizes` (in 8-byte
/// units).
fn pieces(data: &[u8], sizes: &[usize]) -> Vec<(u32, bool, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    for &s in sizes {
        if at >= data.len() {
            break;
        }
        let end = (at + s * 8).min(data.len());
        out.push((at as u32, end < data.len(), data[at..end].to_vec()));
        at = end;
    }
    if at < data.len() {
        out.push((at as u32, false, data[at..].to_vec()));
    }
    out
}

proptest! {
    #[test]
    fn pieces_in_any_order_give_back_the_datagram(
        data in proptest::collection::vec(any::<u8>(), 1..3000),
        sizes in proptest::collection::vec(1usize..20, 1..400),
        order in any::<u64>(),
        duplicate in any::<bool>(),
    ) {
        let mut ps = pieces(&data, &sizes);
        // A deterministic shuffle.
        let mut x = order | 1;
        for i in (1..ps.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            ps.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let n = ps.len();
        if duplicate && n > 1 {
            // Resent before the datagram completes: an overlap, refused.
            let copy = ps[0].clone();
            ps.insert(1, copy);
        }
        let mut d = IpDefrag::default();
        let mut done = None;
        for (k, (off, more, p)) in ps.iter().enumerate() {
            if let Some(r) = d.push(k as i64, &ip(*off, *more), 17, p) {
                prop_assert!(done.is_none());
                done = Some(r);
            }
        }
        let r = done.expect("complete");
        prop_assert_eq!(&r.data, &data);
        prop_assert_eq!(r.fragments as usize, n);
        prop_assert_eq!(d.stats.bad_fragments, (duplicate && n > 1) as u64);
    }
}

#[test]
fn overlapping_pieces_are_refused() {
    let mut d = IpDefrag::default();
    assert!(d.push(0, &ip(0, true), 17, &[1; 16]).is_none());
    assert!(d.push(1, &ip(8, true), 17, &[2; 16]).is_none()); // overlaps 8..16
    assert_eq!(d.stats.bad_fragments, 1);
    assert!(d.push(2, &ip(32, false), 17, &[4; 4]).is_none()); // a gap at 16..32
    let r = d.push(3, &ip(16, true), 17, &[3; 16]).expect("complete");
    assert_eq!(r.data.len(), 36);
    assert_eq!(&r.data[16..32], &[3; 16]);
}
