//! 16-bit sequence numbers with wrap-around (SPEC §1).

/// `s1` is newer than `s2`.
#[inline]
pub fn sequence_greater_than(s1: u16, s2: u16) -> bool {
    (s1 > s2 && s1 - s2 <= 32768) || (s1 < s2 && s2 - s1 > 32768)
}

#[inline]
pub fn sequence_less_than(s1: u16, s2: u16) -> bool {
    sequence_greater_than(s2, s1)
}

/// Signed distance from `s2` to `s1` along the shorter way round: positive when `s1` is
/// newer. `sequence_diff(1, 65535) == 2`.
#[inline]
pub fn sequence_diff(s1: u16, s2: u16) -> i32 {
    let d = s1.wrapping_sub(s2) as i32;
    if d > 32768 { d - 65536 } else { d }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps() {
        assert!(sequence_greater_than(0, 65535));
        assert!(sequence_greater_than(1, 0));
        assert!(!sequence_greater_than(0, 1));
        assert!(sequence_greater_than(32768, 0));
        assert!(!sequence_greater_than(32769, 0));
        assert!(sequence_less_than(65535, 3));
        assert_eq!(sequence_diff(1, 65535), 2);
        assert_eq!(sequence_diff(65535, 1), -2);
        assert_eq!(sequence_diff(5, 5), 0);
        assert_eq!(sequence_diff(32768, 0), 32768);
        assert_eq!(sequence_diff(32769, 0), -32767);
    }

    #[test]
    fn diff_agrees_with_greater_than() {
        for a in (0..=65535u16).step_by(251) {
            for b in (0..=65535u16).step_by(257) {
                assert_eq!(sequence_greater_than(a, b), sequence_diff(a, b) > 0, "{a} {b}");
            }
        }
    }
}
