//! [`RetryPolicy`]: which failed requests are tried again, and how long to wait first.
//!
//! Only a request that has not produced a response body is retried: a refused or dropped
//! connection, `408`, `429` or a `5xx` status (Anthropic's `529 overloaded_error` included),
//! unless the provider says waiting cannot help (OpenAI's permanent error codes). Once the
//! answer started streaming, a failure ends the call: the text already reported cannot be taken
//! back.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

/// When and how long to retry a request that failed before its answer began.
///
/// The wait before retry `n` (from 1) is the server's `Retry-After` (or `retry-after-ms`)
/// when it sent one; otherwise `initial_delay × 2^(n-1)`, capped at `max_delay`, of which a
/// random part (up to half) is taken off so that many clients refused together do not come
/// back together. A `Retry-After` longer than `max_delay` is not waited out: the error is
/// returned at once, for the caller to decide.
///
/// The same type is `adk::openai::RetryPolicy` and `adk::anthropic::RetryPolicy`: both
/// executors retry by it.
///
/// ```
/// # #[cfg(feature = "openai")]
/// # {
/// use std::time::Duration;
///
/// use adk::openai::{OpenAiConfig, RetryPolicy};
///
/// let patient = RetryPolicy::default()
///     .with_max_retries(5)
///     .with_max_delay(Duration::from_secs(60));
/// let config = OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o-mini")?.with_retry(patient);
/// assert_eq!(config.retry.max_retries, 5);
/// let never = OpenAiConfig::new("http://127.0.0.1:8080/v1", "local")?.with_retry(RetryPolicy::none());
/// assert_eq!(never.retry.max_retries, 0);
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// How many times a request is tried again after its first attempt (2 by default).
    pub max_retries: u32,
    /// The wait before the first retry, before jitter (500 ms by default).
    pub initial_delay: Duration,
    /// The longest single wait, `Retry-After` included (30 s by default).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries: every failure is returned at once.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The same policy with another retry count.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The same policy with another first wait.
    pub fn with_initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// The same policy with another ceiling on a single wait.
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The jittered exponential wait before retry `retry` (from 1).
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let exponent = retry.saturating_sub(1).min(31);
        let full = self
            .initial_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        // Up to half the wait is taken off at random.
        full.mul_f64(1.0 - fastrand::f64() / 2.0)
    }
}

/// Whether a status is worth another attempt.
pub(crate) fn retryable_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The wait a response asked for: `retry-after-ms` (sent by the hosted API), then
/// `Retry-After` as seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(millis) =
        header("retry-after-ms").and_then(|value| value.trim().parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        return Some(Duration::from_secs_f64(millis / 1000.0));
    }
    let value = header(RETRY_AFTER.as_str())?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(value)
        .ok()?;
    let at = SystemTime::from(at);
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_ceiling_and_jitter_takes_at_most_half() {
        let policy = RetryPolicy::default()
            .with_initial_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_millis(300));
        for _ in 0..100 {
            let first = policy.backoff(1);
            assert!(first > Duration::from_millis(49) && first <= Duration::from_millis(100));
            let second = policy.backoff(2);
            assert!(second > Duration::from_millis(99) && second <= Duration::from_millis(200));
            let capped = policy.backoff(20);
            assert!(capped > Duration::from_millis(149) && capped <= Duration::from_millis(300));
        }
    }

    #[test]
    fn retry_after_is_read_as_milliseconds_seconds_or_a_date() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        headers.remove("retry-after-ms");
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), None);
    }
}
