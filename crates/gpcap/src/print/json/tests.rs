use super::*;

/// A float written again comes from memory only at the same resolution and bits.
#[test]
fn remembered_floats_are_the_ones_written() {
    let mut m = Floats::default();
    let cases = [
        (1.5f32, None),
        (1.5, Some(0)),
        (-0.0, None),
        (0.0, None),
        (2.675, Some(2)),
    ];
    for _ in 0..3 {
        for (x, d) in cases {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            assert_eq!(m.write(&mut a, x, d), float(&mut b, x, d));
            assert_eq!(a, b, "{x} at {d:?}");
        }
    }
    let mut w = Vec::new();
    assert!(!m.write(&mut w, f32::NAN, None) && w.is_empty());
}

/// What `float` wrote before it had a fast path: the tree's text, read back as an
/// f64, written by serde_json.
fn slow(x: f32, decimals: Option<usize>) -> Option<String> {
    match float_text(x, decimals).parse::<f64>() {
        Ok(v) if v.is_finite() => Some(serde_json::to_string(&v).unwrap()),
        _ => None,
    }
}

fn fast(x: f32, decimals: Option<usize>) -> Option<String> {
    let mut w = Vec::new();
    float(&mut w, x, decimals).then(|| String::from_utf8(w).unwrap())
}

fn same(x: f32) {
    for d in [
        None,
        Some(0),
        Some(1),
        Some(2),
        Some(3),
        Some(4),
        Some(6),
        Some(9),
    ] {
        assert_eq!(
            fast(x, d),
            slow(x, d),
            "{x:e} ({:#010x}) at {d:?} decimals",
            x.to_bits()
        );
    }
}

#[test]
fn floats_are_written_as_the_text_read_back_was() {
    // Every exponent, spread over the significands, both signs.
    for bits in (0..=u32::MAX).step_by(65_537) {
        same(f32::from_bits(bits));
    }
    // Ties at each resolution (`{:.d}` rounds them to even), edges of the fast path.
    for k in -2000..2000 {
        same(k as f32 / 8.0);
        same(k as f32 / 1024.0);
    }
    // 202.703125 lies halfway between 202.70312 and 202.70313: `{}` says the latter.
    same(202.0 + 45.0 / 64.0);
    for x in [
        0.0,
        -0.0,
        1e-4,
        9.999e-5,
        1e-3,
        0.00049,
        1e6,
        999_999.9,
        1e12,
        9.99e11,
        f32::MAX,
    ] {
        same(x);
        same(-x);
    }
}

proptest::proptest! {
    #[test]
    fn any_float_is_written_as_the_text_read_back_was(bits in proptest::prelude::any::<u32>()) {
        same(f32::from_bits(bits));
    }
}
