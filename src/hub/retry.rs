//! When to retry a Hub request and how long to wait: 408, 429 and 5xx answers and lost
//! connections are retried with capped exponential backoff (1 s, 2 s, 4 s, 8 s, 8 s), or
//! after the wait the Hub asks for in `Retry-After` (seconds or an HTTP-date) or in the
//! IETF-draft `RateLimit` header (`"api";r=0;t=55`), whichever is longer. The waits of
//! one request are capped in total; a server asking for more fails at once.
//!
//! `BABEL_HUB_TIME_SCALE` multiplies every wait (and the cap) by a factor from 0.001 to
//! 1, so tests can exercise the whole schedule in milliseconds; the minimum keeps every
//! wait real and in order. Pure arithmetic: nothing here sleeps or touches the network.

use std::ffi::OsString;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::HubError;

/// The environment variable scaling every retry wait (tests only).
pub const TIME_SCALE_ENV: &str = "BABEL_HUB_TIME_SCALE";
/// The smallest accepted time scale.
pub const MIN_TIME_SCALE: f64 = 0.001;

/// How a request is retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff wait; each further one doubles it.
    pub first_backoff: Duration,
    /// The longest backoff wait.
    pub max_backoff: Duration,
    /// The most one request may spend waiting between its attempts.
    pub max_total_wait: Duration,
    /// The factor applied to every wait (1 outside tests).
    pub scale: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(8),
            max_total_wait: Duration::from_secs(120),
            scale: 1.0,
        }
    }
}

/// Whether an answer with this status is worth another attempt.
pub fn is_retryable_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429 | 500 | 502 | 503 | 504)
}

impl RetryPolicy {
    /// The default policy, scaled by `BABEL_HUB_TIME_SCALE` when `lookup` has it.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<OsString>) -> Result<Self, HubError> {
        let mut policy = Self::default();
        if let Some(text) = lookup(TIME_SCALE_ENV) {
            let text = text.to_string_lossy();
            policy.scale = text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|scale| (MIN_TIME_SCALE..=1.0).contains(scale))
                .ok_or_else(|| {
                    HubError::usage(
                        format!(
                            "{TIME_SCALE_ENV}={text:?} is not a number from {MIN_TIME_SCALE} to 1"
                        ),
                        Some("it only exists to make tests fast; unset it"),
                    )
                })?;
        }
        Ok(policy)
    }

    /// `duration` scaled by the policy's factor.
    pub fn scaled(&self, duration: Duration) -> Duration {
        duration.mul_f64(self.scale)
    }

    /// The total wait budget of one request, scaled.
    pub fn budget(&self) -> Duration {
        self.scaled(self.max_total_wait)
    }

    /// The backoff before retry number `retry` (0 for the first retry), unscaled.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(16));
        self.first_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    /// The wait before retry number `retry` after an answer with `headers`, unscaled:
    /// the longer of the backoff and what the server asked for.
    pub fn wait_before(
        &self,
        retry: u32,
        headers: Option<&HeaderMap>,
        now: SystemTime,
    ) -> Duration {
        let asked = headers.and_then(|headers| server_wait(headers, now));
        self.backoff(retry).max(asked.unwrap_or_default())
    }
}

/// The wait a server asks for: `Retry-After` (delta-seconds or HTTP-date) or the reset
/// time `t` of an exhausted (`r=0`) `RateLimit` item; the longer when both are given.
pub fn server_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let retry_after = headers
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|text| parse_retry_after(text, now));
    let rate_limit = headers
        .get_all("ratelimit")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(parse_rate_limit)
        .max();
    retry_after.into_iter().chain(rate_limit).max()
}

/// `Retry-After`: a number of seconds, or an HTTP-date (a date in the past means now).
pub fn parse_retry_after(text: &str, now: SystemTime) -> Option<Duration> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = parse_http_date(text)?;
    Some(at.duration_since(now).unwrap_or_default())
}

/// The IETF-draft `RateLimit` header the Hub sends, e.g. `"api";r=0;t=55`: for each item
/// whose remaining quota `r` is 0 (or not given), the reset time `t` in seconds.
pub fn parse_rate_limit(text: &str) -> Option<Duration> {
    text.split(',')
        .filter_map(|item| {
            let mut remaining = None;
            let mut reset = None;
            for parameter in item.split(';').skip(1) {
                match parameter.trim().split_once('=') {
                    Some(("r", value)) => remaining = value.trim().parse::<u64>().ok(),
                    Some(("t", value)) => reset = value.trim().parse::<u64>().ok(),
                    _ => {}
                }
            }
            match remaining {
                Some(0) | None => reset.map(Duration::from_secs),
                Some(_) => None,
            }
        })
        .max()
}

/// Parses an HTTP-date in any of the three forms of RFC 9110 §5.6.7: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and
/// asctime (`Sun Nov  6 08:49:37 1994`).
pub fn parse_http_date(text: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use std::time::UNIX_EPOCH;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        // RFC 9110 §5.6.7's example instant; `date -u -d '1994-11-06 08:49:37' +%s` = 784111777.
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(form), Some(at(784_111_777)), "{form}");
        }
        // `date -u -d '2026-10-21 07:28:00' +%s` = 1792567680.
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT"),
            Some(at(1_792_567_680))
        );
        for bad in [
            "",
            "yesterday",
            "Sun, 06 Nov 1994 25:00:00 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn retry_after_takes_seconds_or_a_date_and_a_past_date_means_now() {
        let now = at(1_792_567_600);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT", now),
            Some(Duration::from_secs(80))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT", at(1_792_567_700)),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn rate_limit_reset_counts_only_when_the_quota_is_exhausted() {
        assert_eq!(
            parse_rate_limit("\"api\";r=0;t=55"),
            Some(Duration::from_secs(55))
        );
        assert_eq!(parse_rate_limit("\"api\";r=12;t=55"), None);
        assert_eq!(
            parse_rate_limit("\"api\";r=0;t=5, \"resolvers\";r=0;t=9"),
            Some(Duration::from_secs(9))
        );
    }

    #[test]
    fn backoff_doubles_from_one_second_up_to_eight() {
        let policy = RetryPolicy::default();
        let waits: Vec<u64> = (0..6).map(|n| policy.backoff(n).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 8, 8]);
    }

    #[test]
    fn the_longer_of_backoff_and_the_server_wait_is_taken() {
        let policy = RetryPolicy::default();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(
            policy.wait_before(0, Some(&headers), at(0)),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.wait_before(3, Some(&headers), at(0)),
            Duration::from_secs(8)
        );
        headers.insert("ratelimit", HeaderValue::from_static("\"api\";r=0;t=30"));
        assert_eq!(
            policy.wait_before(0, Some(&headers), at(0)),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn the_time_scale_has_a_documented_minimum() {
        let lookup = |value: &'static str| {
            move |name: &str| (name == TIME_SCALE_ENV).then(|| OsString::from(value))
        };
        assert_eq!(
            RetryPolicy::from_lookup(&lookup("0.01")).unwrap().scale,
            0.01
        );
        for bad in ["0", "0.0001", "2", "fast", "NaN"] {
            assert!(RetryPolicy::from_lookup(&lookup(bad)).is_err(), "{bad}");
        }
    }
}
