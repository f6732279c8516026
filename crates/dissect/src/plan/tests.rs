//! The plan's packs against their checks one by one.

use super::{Check, NO_SLOT, Plan, window};
use crate::bits::BitReader;
use proptest::prelude::*;

fn check() -> impl Strategy<Value = Check> {
    (0u32..100, 1u32..=32, any::<u32>(), any::<bool>()).prop_map(|(at, width, max, slot)| {
        let mask = u32::MAX >> (32 - width);
        Check {
            at,
            mask,
            slot: if slot { 9 } else { NO_SLOT },
            max: max & mask,
            bias: 0,
        }
    })
}

proptest! {
    /// A pack decides what the checks one by one decide, on any bits at any offset:
    /// values that touch, overlap, sit at the window's edge, or fill a slot.
    #[test]
    fn a_pack_decides_as_its_checks(
        cs in proptest::collection::vec(check(), 1..8),
        bytes in proptest::collection::vec(any::<u8>(), 40),
        shift in 0u64..8,
    ) {
        let plan = Plan {
            checks: cs.clone(),
            ..Plan::default()
        };
        let pack = plan.pack((0, cs.len() as u32));
        prop_assume!(pack.is_some());
        let p = pack.unwrap();
        let w = window(&bytes, shift).unwrap();
        let one_by_one = cs.iter().all(|c| BitReader::peek_masked(&bytes, shift + c.at as u64, c.mask) <= c.max);
        let packed = p.out_of_range(w) == 0
            && p.slots().iter().all(|c| ((w >> c.at) as u32 & c.mask) <= c.max);
        prop_assert_eq!(packed, one_by_one);
    }
}
