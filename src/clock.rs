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

/// True for `YYYY-MM-DDTHH:MM:SSZ` (what babel writes, and what `BABEL_TIMESTAMP` must be).
pub fn is_rfc3339_utc(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    bytes.len() == 20
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && bytes[10] == b'T'
        && digits(11..13)
        && bytes[13] == b':'
        && digits(14..16)
        && bytes[16] == b':'
        && digits(17..19)
        && bytes[19] == b'Z'
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
        for bad in [
            "",
            "yesterday",
            "2026-12-02",
            "2026-12-02T12:00:00+01:00",
            "2026-12-02 12:00:00Z",
        ] {
            assert!(!is_rfc3339_utc(bad), "{bad}");
        }
    }
}
