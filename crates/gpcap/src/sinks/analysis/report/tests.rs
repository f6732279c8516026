//! Merging, finalizing and the figures small reports must give.

use super::{LossScope, Timeline};

/// The scope keeps, in JSON, the words it had when it was a string.
#[test]
fn the_loss_scope_serializes_as_its_old_words() {
    let json = |s| serde_json::to_string(&s).unwrap();
    assert_eq!(json(LossScope::None), r#""""#);
    assert_eq!(json(LossScope::SameFlows), r#""same flows""#);
    assert_eq!(
        json(LossScope::NeverFragmenting),
        r#""flows that never fragment""#
    );
}

/// The second a timestamp falls in, remembered or not, is the one the division gives:
/// in order, out of order, less than a second before the start, long before it, past
/// the day kept, and after the start moved.
#[test]
fn a_remembered_second_is_the_divided_one() {
    const NS: i64 = 1_000_000_000;
    let start = 5 * NS + 123;
    let offsets = [
        0,
        1,
        NS - 1,
        NS,
        NS + 7,
        -1,
        1 - NS,
        -NS,
        -5 * NS,
        3 * NS,
        NS - 1,
        2 * NS,
        86_399 * NS,
        86_400 * NS,
        0,
        i64::MIN / 2,
    ];
    let mut t = Timeline {
        start_ns: Some(start),
        ..Timeline::default()
    };
    for (i, d) in offsets.into_iter().enumerate() {
        let hit = t.slot(start + d).map(|s| s.datagrams += 1 << i).is_some();
        // Earlier than the start moves it back by whole seconds (a day at most).
        let now = t.start_ns.unwrap();
        let want = usize::try_from((start + d - now) / NS)
            .ok()
            .filter(|&s| s < super::TIMELINE_MAX);
        assert_eq!(hit, want.is_some(), "offset {d}");
        let got = want.map(|s| t.seconds[s].datagrams >> i & 1);
        assert_eq!(got, want.map(|_| 1), "offset {d}");
    }
    // Another start (shards set it before reading): nothing remembered from the old one.
    t.start_ns = Some(start + NS);
    let before = t.seconds[0].datagrams;
    t.slot(start + NS + 10).unwrap().datagrams += 1;
    assert_eq!(t.seconds[0].datagrams, before + 1);
}
