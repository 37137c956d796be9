//! Wall-clock timestamps for manifests, as RFC 3339 UTC with second precision.
//!
//! `BABEL_TIMESTAMP` (an RFC 3339 string) replaces the clock, so tests and reproducible
//! archive builds get the same bytes every time.

use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable that pins the clock.
pub const TIMESTAMP_ENV: &str = "BABEL_TIMESTAMP";

/// Now, as `YYYY-MM-DDTHH:MM:SSZ` (or the pinned value).
pub fn now_rfc3339() -> String {
    if let Ok(pinned) = std::env::var(TIMESTAMP_ENV) {
        return pinned;
    }
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_unix_seconds(seconds)
}

/// True for `YYYY-MM-DDTHH:MM:SSZ` naming a real instant (what babel writes, and what
/// `BABEL_TIMESTAMP` must be): month 1–12, a day that month has, hour 0–23, minute and
/// second 0–59.
pub fn is_rfc3339_utc(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 20 {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = &bytes[range];
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, b| n * 10 + u32::from(b - b'0')))
    };
    let shape = bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[16] == b':'
        && bytes[19] == b'Z';
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        number(0..4),
        number(5..7),
        number(8..10),
        number(11..13),
        number(14..16),
        number(17..19),
    ) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    shape && (1..=days).contains(&day) && hour < 24 && minute < 60 && second < 60
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC.
pub fn format_unix_seconds(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Seconds since the Unix epoch of an RFC 3339 UTC time as babel writes it
/// (`YYYY-MM-DDTHH:MM:SSZ`); `None` for anything else or a time before 1970.
pub fn unix_seconds(text: &str) -> Option<u64> {
    if !is_rfc3339_utc(text) {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    // Hinnant's civil-to-days, the inverse of `civil_from_days`.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + number(11..13)? * 3600 + number(14..16)? * 60 + number(17..19)?;
    u64::try_from(seconds).ok()
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_formats() {
        for seconds in [0, 951_782_400, 1_796_221_799, 4_102_444_799] {
            assert_eq!(unix_seconds(&format_unix_seconds(seconds)), Some(seconds));
        }
        assert_eq!(unix_seconds("1969-12-31T23:59:59Z"), None);
        assert_eq!(unix_seconds("2026-12-02T14:29:59+01:00"), None);
    }

    #[test]
    fn formats_known_instants() {
        // Values from `date -u -d @SECONDS +%Y-%m-%dT%H:%M:%SZ`.
        assert_eq!(format_unix_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_unix_seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_unix_seconds(1_796_221_799), "2026-12-02T14:29:59Z");
        assert_eq!(format_unix_seconds(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn pinned_timestamps_must_look_like_what_babel_writes() {
        assert!(is_rfc3339_utc("2026-12-02T12:00:00Z"));
        assert!(is_rfc3339_utc(&format_unix_seconds(1_796_221_799)));
        assert!(is_rfc3339_utc("2024-02-29T23:59:59Z"), "a leap day");
        for bad in [
            "",
            "yesterday",
            "2026-12-02",
            "2026-12-02T12:00:00+01:00",
            "2026-12-02 12:00:00Z",
            "2026-22-03T14;36:62Z",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02T12:60:00Z",
            "2026-12-02T12:00:60Z",
        ] {
            assert!(!is_rfc3339_utc(bad), "{bad}");
        }
    }
}
