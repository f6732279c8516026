use super::Previous;

/// The flat previous values hold what a `Vec` per row would, through rows that grow
/// past their room (moved to the end), shrink, and holes compacted away.
#[test]
fn flat_previous_values_are_a_vec_per_row() {
    let mut flat = Previous::default();
    let mut model: Vec<Vec<i128>> = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for step in 0..20_000i128 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let row = (x % 7) as usize;
        if model.len() <= row {
            model.resize(row + 1, Vec::new());
        }
        match (x >> 8) % 5 {
            // Shorter, as a packet with fewer occurrences leaves it.
            0 => {
                let keep = ((x >> 16) % 40) as u32;
                if let Some(r) = flat.rows.get_mut(row)
                    && r.1 > keep
                {
                    r.1 = keep;
                }
                model[row].truncate(keep as usize);
            }
            1 | 2 => {
                flat.push(row, step);
                model[row].push(step);
            }
            _ => {
                let ord = ((x >> 16) % 50) as u32;
                flat.replace(row, ord, -step);
                if let Some(p) = model[row].get_mut(ord as usize) {
                    *p = -step;
                }
            }
        }
        for (r, want) in model.iter().enumerate() {
            let got: Vec<i128> = (0..want.len() as u32 + 1).map_while(|o| flat.get(r, o)).collect();
            assert_eq!(&got, want, "row {r} after step {step}");
        }
    }
    assert!(
        flat.values.len() <= 2 * flat.room + 64 + 2 * 64,
        "holes are compacted"
    );
}

/// Values kept in 8 bytes read back as they were: negative ones in a signed row, those
/// past `i64::MAX` in an unsigned one (and the smaller values kept before them).
#[test]
fn kept_values_read_back_signed_or_unsigned_by_row() {
    let mut p = Previous::default();
    let big = i128::from(u64::MAX) - 5;
    p.push(0, -7);
    p.push(0, i128::from(i64::MIN));
    p.push(1, 3);
    p.push(1, big);
    assert_eq!(p.get(0, 0), Some(-7));
    assert_eq!(p.get(0, 1), Some(i128::from(i64::MIN)));
    assert_eq!(p.get(1, 0), Some(3));
    assert_eq!(p.get(1, 1), Some(big));
    assert_eq!(p.replace(1, 0, big + 1), Some(3));
    assert_eq!(p.replace(1, 0, 0), Some(big + 1));
    assert_eq!(p.replace(0, 1, 5), Some(i128::from(i64::MIN)));
    assert_eq!(p.get(0, 1), Some(5));
}

/// Compacting gives back the room of a row that once held many values: what is left
/// fits the values kept now, which read back the same.
#[test]
fn compacting_fits_the_room_to_the_values_kept() {
    let mut p = Previous::default();
    for v in 0..10_000 {
        p.push(0, v);
    }
    p.push(1, -1);
    p.rows[0].1 = 10;
    p.compact();
    assert!(p.values.len() <= 32, "{} values of room", p.values.len());
    assert_eq!(
        (0..10).map(|o| p.get(0, o)).collect::<Vec<_>>(),
        (0..10).map(Some).collect::<Vec<_>>()
    );
    assert_eq!(p.get(1, 0), Some(-1));
    p.push(0, 77);
    assert_eq!(p.get(0, 10), Some(77));
}
