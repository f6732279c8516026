//! Times in a filter: seconds, and UTC dates as nanoseconds since the epoch.

use super::*;

/// Seconds (`5`, `0.25`, `-1`, `250ms`, `2s`) as nanoseconds.
pub(super) fn parse_seconds(v: &str) -> Option<i128> {
    let (num, scale) = match v.strip_suffix("ms") {
        Some(n) => (n, 1e6),
        None => (v.strip_suffix('s').unwrap_or(v), 1e9),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-') {
        return None;
    }
    let x: f64 = num.parse().ok()?;
    let ns = (x * scale).round();
    (ns.is_finite() && ns.abs() < 1e30).then_some(ns as i128)
}

/// A UTC date and time, `2026-11-22T10:00:05.25` (a space instead of `T` when quoted, a
/// `Z` allowed), as nanoseconds since the epoch.
pub(super) fn parse_datetime(v: &str) -> Option<i128> {
    let v = std::str::from_utf8(unquote(v)).ok()?.trim();
    let v = v.strip_suffix('Z').unwrap_or(v);
    let (date, time) = v.split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|x| x.parse::<i64>().ok());
    let (h, min, sec) = (t.next()??, t.next()??, t.next().unwrap_or(Some(0))?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || sec > 60 || y.abs() > 9999
    {
        return None;
    }
    // No 31 November, no 29 February but in a leap year.
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day > month_days[(m - 1) as usize] {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let frac_ns = format!("{frac:0<9}").parse::<i128>().ok()?;
    let days = days_from_civil(y, m, day) as i128;
    Some(((days * 86_400 + (h * 3600 + min * 60 + sec) as i128) * 1_000_000_000) + frac_ns)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
