//! [`AnthropicError`]: every way a Messages API call fails, typed.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::provider::{LineTooLong, TransportError, WaitPhase, cut};

/// How many bytes of a server's error message an error keeps.
pub const MAX_ERROR_MESSAGE: usize = 512;

/// How many bytes of received data an error keeps (`data`, `excerpt`): enough to recognise what
/// came, little enough that an error message stays short whatever the server sent.
pub const MAX_EXCERPT: usize = crate::provider::MAX_EXCERPT;

/// Which wait ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Waiting for the response's status and headers
    /// ([`AnthropicConfig::request_timeout`](super::AnthropicConfig::request_timeout)).
    Response,
    /// Waiting for the next piece of the stream
    /// ([`AnthropicConfig::stream_idle_timeout`](super::AnthropicConfig::stream_idle_timeout)).
    Stream,
    /// The whole model call, retries included
    /// ([`AnthropicConfig::total_timeout`](super::AnthropicConfig::total_timeout)).
    Total,
}

/// Which part of a response outgrew its cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponsePart {
    /// One line (or event) of the stream.
    Line,
    /// The whole answer: text, thinking, signatures and tool inputs together.
    Answer,
}

/// Why a call to the Messages API failed.
///
/// Returned from the executor, it ends the dispatch as nack with
/// `E_LLM_EXECUTION_EXECUTOR_ERROR`. Failures that [`RetryPolicy`](super::RetryPolicy) covers
/// (`429 rate_limit_error`, `529 overloaded_error`, `5xx`, a refused connection) arrive here
/// only once its retries ran out; `400 invalid_request_error` and the other `4xx` at once.
///
/// ```
/// use adk::anthropic::AnthropicError;
///
/// /// Whether the same request could succeed later.
/// fn transient(error: &AnthropicError) -> bool {
///     match error {
///         AnthropicError::Status { kind: Some(kind), .. }
///         | AnthropicError::StreamedError { kind: Some(kind), .. } => {
///             matches!(kind.as_str(), "overloaded_error" | "rate_limit_error" | "api_error")
///         }
///         AnthropicError::Connect { .. } | AnthropicError::Timeout { .. } => true,
///         _ => false,
///     }
/// }
/// # let _ = transient;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnthropicError {
    /// A configuration value is unusable.
    #[error("invalid Anthropic configuration `{field}` = {value:?}: {reason}")]
    InvalidConfig {
        /// The field or environment variable.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("could not build the HTTP client: {source}")]
    Client {
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The request did not reach the server.
    #[error(
        "could not reach {url}: {source}; check that the server runs and the base URL is right"
    )]
    Connect {
        /// The endpoint.
        url: String,
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with a non-success status.
    #[error("the server answered {status}{}: {message}", describe(kind.as_deref()))]
    Status {
        /// The HTTP status code (`529` for `overloaded_error`).
        status: u16,
        /// `error.type` of the body: `invalid_request_error`, `authentication_error`,
        /// `permission_error`, `not_found_error`, `request_too_large`, `rate_limit_error`,
        /// `api_error`, `overloaded_error`…
        kind: Option<String>,
        /// `error.message`, or the start of the body; at most [`MAX_ERROR_MESSAGE`] bytes.
        message: String,
        /// The `request-id` header, for Anthropic's support.
        request_id: Option<String>,
        /// The body as text, cut at [`MAX_ERROR_BODY`](super::MAX_ERROR_BODY) bytes.
        body: String,
        /// Whether the body was longer than what `body` holds.
        body_truncated: bool,
    },
    /// A wait ran out.
    #[error("{} after {after:?}", match phase {
        TimeoutPhase::Response => "no response from the server",
        TimeoutPhase::Stream => "the response stream stalled: nothing arrived",
        TimeoutPhase::Total => "the model call did not finish",
    })]
    Timeout {
        /// Which wait.
        phase: TimeoutPhase,
        /// How long it was.
        after: Duration,
    },
    /// Reading the stream failed part-way.
    #[error("the response stream broke: {source}")]
    Stream {
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The server sent an `error` event instead of (or after part of) the answer, such as
    /// `overloaded_error` mid-stream. The call never counts as answered, and is not retried:
    /// part of the answer may already have been reported.
    #[error("the server reported an error mid-stream{}: {message}", describe(kind.as_deref()))]
    StreamedError {
        /// `error.type`.
        kind: Option<String>,
        /// `error.message`, at most [`MAX_ERROR_MESSAGE`] bytes.
        message: String,
        /// The start of the event's data.
        data: String,
    },
    /// The stream broke the Messages protocol: not JSON, a delta for a block never started,
    /// a delta of the wrong kind for its block, an unknown delta type.
    #[error("malformed response stream: {reason} (data: {data:?})")]
    MalformedStream {
        /// What was wrong.
        reason: String,
        /// The start of the offending data.
        data: String,
    },
    /// The answer holds a content block this executor does not know (a server tool's block, a
    /// type newer than this crate). It cannot be stored or sent back unchanged, so the call fails
    /// instead of dropping it.
    #[error(
        "the answer holds a `{block_type}` content block (index {index}), which adk::anthropic \
         does not support"
    )]
    UnsupportedBlock {
        /// The block's `type`.
        block_type: String,
        /// Its index in the answer.
        index: u64,
    },
    /// The stream ended before `message_stop`: the connection was cut, inside a block or
    /// between blocks.
    #[error("the response stream ended early: {reason}")]
    Incomplete {
        /// Where it ended.
        reason: String,
    },
    /// A part of the response grew past its cap; the connection was dropped without reading
    /// the rest, so memory stays bounded whatever the server sends.
    #[error("{} is longer than {limit} bytes; the rest was not read (starts with {excerpt:?})", match part {
        ResponsePart::Line => "one line of the event stream",
        ResponsePart::Answer => "the answer",
    })]
    ResponseTooLarge {
        /// Which cap.
        part: ResponsePart,
        /// The cap, in bytes.
        limit: usize,
        /// The start of what was received.
        excerpt: String,
    },
    /// The model declined to answer (`stop_reason: "refusal"`).
    #[error("the model refused{}", if text.is_empty() { String::new() } else { format!(": {text}") })]
    Refused {
        /// What it wrote before stopping, if anything.
        text: String,
    },
}

fn describe(kind: Option<&str>) -> String {
    kind.map(|kind| format!(" ({kind})")).unwrap_or_default()
}

impl From<LineTooLong> for AnthropicError {
    fn from(line: LineTooLong) -> Self {
        Self::ResponseTooLarge {
            part: ResponsePart::Line,
            limit: line.limit,
            excerpt: line.excerpt,
        }
    }
}

impl TransportError for AnthropicError {
    fn connect(url: &str, source: reqwest::Error) -> Self {
        Self::Connect {
            url: url.to_owned(),
            source,
        }
    }

    fn timed_out(phase: WaitPhase, after: Duration) -> Self {
        let phase = match phase {
            WaitPhase::Response => TimeoutPhase::Response,
            WaitPhase::Stream => TimeoutPhase::Stream,
        };
        Self::Timeout { phase, after }
    }

    fn broken(source: reqwest::Error) -> Self {
        Self::Stream { source }
    }

    fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// `error.type` and `error.message` of `{"type": "error", "error": {..}}` (or of the inner
/// object itself).
pub(crate) fn error_fields(value: &Value) -> (Option<String>, Option<String>) {
    let error = value
        .get("error")
        .filter(|inner| inner.is_object())
        .unwrap_or(value);
    let text = |field: &str| {
        error
            .get(field)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(|text| cut(text, MAX_ERROR_MESSAGE))
    };
    (text("type"), text("message"))
}

/// The error of a non-success response.
pub(crate) fn status_error(
    status: StatusCode,
    headers: &HeaderMap,
    bytes: &[u8],
    truncated: bool,
) -> AnthropicError {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let (kind, message) = serde_json::from_str::<Value>(&text)
        .map(|value| error_fields(&value))
        .unwrap_or_default();
    let message = message.unwrap_or_else(|| match text.trim() {
        "" => status.canonical_reason().unwrap_or("no message").to_owned(),
        trimmed if trimmed.len() > MAX_ERROR_MESSAGE || truncated => {
            format!("{} (truncated)", cut(trimmed, MAX_ERROR_MESSAGE))
        }
        trimmed => trimmed.to_owned(),
    });
    AnthropicError::Status {
        status: status.as_u16(),
        kind,
        message,
        request_id: headers
            .get("request-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
        body: text,
        body_truncated: truncated,
    }
}
