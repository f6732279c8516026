//! A packet's time as tshark's `-t` shows it: seconds since the epoch, since the first
//! packet, since the previous packet captured or shown, or a clock (UTC or local, with
//! the date or the day of the year).

/// tshark's `-t` formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TimeFormat {
    /// `e`: seconds since the epoch (gpcap's default).
    #[default]
    Epoch,
    /// `r`: since the first packet.
    Relative,
    /// `d`: since the previous packet captured.
    Delta,
    /// `dd`: since the previous packet shown.
    DeltaShown,
    /// `a`, `ad`, `adoy`: local time of day, with the date, with the day of the year.
    Local,
    LocalDate,
    LocalDoy,
    /// `u`, `ud`, `udoy`: the same in UTC.
    Utc,
    UtcDate,
    UtcDoy,
}

impl TimeFormat {
    /// tshark's letters.
    pub fn parse(s: &str) -> Option<TimeFormat> {
        Some(match s {
            "e" => TimeFormat::Epoch,
            "r" => TimeFormat::Relative,
            "d" => TimeFormat::Delta,
            "dd" => TimeFormat::DeltaShown,
            "a" => TimeFormat::Local,
            "ad" => TimeFormat::LocalDate,
            "adoy" => TimeFormat::LocalDoy,
            "u" => TimeFormat::Utc,
            "ud" => TimeFormat::UtcDate,
            "udoy" => TimeFormat::UtcDoy,
            _ => return None,
        })
    }

    /// A span from a reference (r, d, dd), or the epoch's seconds: said in seconds.
    pub fn is_seconds(self) -> bool {
        matches!(
            self,
            TimeFormat::Epoch | TimeFormat::Relative | TimeFormat::Delta | TimeFormat::DeltaShown
        )
    }

    /// `ts_ns` in this format; `base_ns` is the reference of r, d and dd.
    pub fn text(self, ts_ns: i64, base_ns: i64) -> String {
        match self {
            TimeFormat::Epoch => seconds(ts_ns as i128),
            TimeFormat::Relative | TimeFormat::Delta | TimeFormat::DeltaShown => {
                seconds(ts_ns as i128 - base_ns as i128)
            }
            TimeFormat::Utc => clock(ts_ns, 0, Day::None),
            TimeFormat::UtcDate => clock(ts_ns, 0, Day::Date),
            TimeFormat::UtcDoy => clock(ts_ns, 0, Day::OfYear),
            TimeFormat::Local => clock(ts_ns, local_offset(ts_ns), Day::None),
            TimeFormat::LocalDate => clock(ts_ns, local_offset(ts_ns), Day::Date),
            TimeFormat::LocalDoy => clock(ts_ns, local_offset(ts_ns), Day::OfYear),
        }
    }
}

/// Nanoseconds as seconds to the microsecond, rounded, in integers (a float cannot hold
/// an epoch's microseconds exactly: 1700000000.050291499 came out as .050292).
fn seconds(ns: i128) -> String {
    let us = micros(ns);
    let sign = if us < 0 { "-" } else { "" };
    let us = us.unsigned_abs();
    format!("{sign}{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// Nanoseconds rounded to the nearest microsecond (halves away from zero).
fn micros(ns: i128) -> i128 {
    let r = (ns.abs() + 500) / 1000;
    if ns < 0 { -r } else { r }
}

enum Day {
    None,
    Date,
    OfYear,
}

/// `[date ]HH:MM:SS.ffffff` of `ts_ns` shifted by `offset_s` from UTC.
fn clock(ts_ns: i64, offset_s: i64, day: Day) -> String {
    let us = micros(ts_ns as i128) + offset_s as i128 * 1_000_000;
    let secs = us.div_euclid(1_000_000) as i64;
    let micros = us.rem_euclid(1_000_000);
    let (days, s) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let time = format!("{:02}:{:02}:{:02}.{micros:06}", s / 3600, s / 60 % 60, s % 60);
    let (y, m, d) = civil_from_days(days);
    match day {
        Day::None => time,
        Day::Date => format!("{y:04}-{m:02}-{d:02} {time}"),
        Day::OfYear => {
            let doy = days - days_from_civil(y, 1, 1) + 1;
            format!("{y:04}/{doy:03} {time}")
        }
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

/// The local time zone's offset from UTC at that time, in seconds (the C library's, so
/// `TZ` is honoured); UTC where it cannot be known.
#[cfg(unix)]
fn local_offset(ts_ns: i64) -> i64 {
    let t = ts_ns.div_euclid(1_000_000_000) as libc::time_t;
    // SAFETY: a zeroed tm is valid; localtime_r writes it and reads only `t`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals of the right types.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return 0;
    }
    tm.tm_gmtoff
}

#[cfg(not(unix))]
fn local_offset(_: i64) -> i64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_spans() {
        let t = 1_700_000_000_033_728_000;
        assert_eq!(TimeFormat::Utc.text(t, 0), "22:13:20.033728");
        assert_eq!(TimeFormat::UtcDate.text(t, 0), "2023-11-14 22:13:20.033728");
        assert_eq!(TimeFormat::UtcDoy.text(t, 0), "2023/318 22:13:20.033728");
        assert_eq!(TimeFormat::Relative.text(t, t - 1_500_000), "0.001500");
        assert_eq!(TimeFormat::Delta.text(t, t + 1000), "-0.000001");
        assert_eq!(TimeFormat::UtcDate.text(-1_000, 0), "1969-12-31 23:59:59.999999");
        assert_eq!(
            TimeFormat::Epoch.text(1_700_000_000_050_291_499, 0),
            "1700000000.050291"
        );
        assert_eq!(TimeFormat::Relative.text(0, 1_500), "-0.000002");
        for d in [-800_000, -1, 0, 59, 19_675, 2_932_896] {
            let (y, m, day) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, day), d);
        }
    }
}
