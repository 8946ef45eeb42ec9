//! The OpenAI side of retrying: the error codes no wait fixes. The policy itself, the statuses
//! retried and the reading of `Retry-After` are shared with `adk::anthropic`
//! ([`RetryPolicy`](super::RetryPolicy)).

use super::OpenAiError;

/// Error codes (`error.code` or `error.type`) that no wait fixes: a `429` that carries one is
/// returned at once instead of retried. `insufficient_quota` is the hosted API's "you exceeded
/// your current quota" (billing, not rate); `billing_hard_limit_reached` its spending cap.
pub const PERMANENT_ERROR_CODES: [&str; 2] = ["insufficient_quota", "billing_hard_limit_reached"];

/// Whether `error` carries a code from [`PERMANENT_ERROR_CODES`].
pub(crate) fn permanent_error(error: &OpenAiError) -> bool {
    let OpenAiError::Status { kind, code, .. } = error else {
        return false;
    };
    [kind, code]
        .into_iter()
        .flatten()
        .any(|value| PERMANENT_ERROR_CODES.contains(&value.as_str()))
}
