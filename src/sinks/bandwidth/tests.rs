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
                if let Some(p) = flat.get_mut(row, ord) {
                    *p = -step;
                }
                if let Some(p) = model[row].get_mut(ord as usize) {
                    *p = -step;
                }
            }
        }
        for (r, want) in model.iter().enumerate() {
            let got: Vec<i128> = (0..want.len() as u32 + 1)
                .map_while(|o| flat.get_mut(r, o).map(|v| *v))
                .collect();
            assert_eq!(&got, want, "row {r} after step {step}");
        }
    }
    assert!(
        flat.values.len() <= 2 * flat.room + 64 + 2 * 64,
        "holes are compacted"
    );
}
