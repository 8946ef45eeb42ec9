//! [`OpenAiError`]: every way a chat-completions call fails, typed.

use std::time::Duration;

/// Which wait ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Waiting for the response's status and headers
    /// ([`OpenAiConfig::request_timeout`](super::OpenAiConfig::request_timeout)).
    Response,
    /// Waiting for the next piece of the streamed body
    /// ([`OpenAiConfig::stream_idle_timeout`](super::OpenAiConfig::stream_idle_timeout)).
    Stream,
    /// The whole model call, retries and streaming included
    /// ([`OpenAiConfig::total_timeout`](super::OpenAiConfig::total_timeout)).
    Total,
}

/// Why a call to an OpenAI-compatible server failed.
///
/// Returned from the executor, it ends the dispatch as nack with
/// `E_LLM_EXECUTION_EXECUTOR_ERROR`, whose message includes this error's. Failures that
/// [`RetryPolicy`](super::RetryPolicy) covers arrive here only once its retries ran out.
///
/// ```
/// use adk::openai::{OpenAiError, TimeoutPhase};
///
/// /// Whether running the whole turn again later could help.
/// fn worth_a_later_turn(error: &OpenAiError) -> bool {
///     match error {
///         OpenAiError::Status { status, .. } => *status == 429 || *status >= 500,
///         OpenAiError::Timeout { phase: TimeoutPhase::Response | TimeoutPhase::Total, .. } => true,
///         OpenAiError::Connect { .. } | OpenAiError::Stream { .. } => true,
///         _ => false,
///     }
/// }
/// # let _ = worth_a_later_turn;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenAiError {
    /// A configuration value is unusable.
    #[error("invalid OpenAI configuration `{field}` = {value:?}: {reason}")]
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
    /// The request did not reach the server (connection refused, DNS, TLS).
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
    #[error("the server answered {status}: {message}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The server's error message (`error.message` of an OpenAI-style body), or the body.
        message: String,
        /// The response body as text, cut at [`MAX_ERROR_BODY`](super::MAX_ERROR_BODY) bytes.
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
    /// Reading the streamed body failed part-way.
    #[error("the response stream broke: {source}")]
    Stream {
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The server sent an error object inside the stream instead of a chunk.
    #[error("the server reported an error mid-stream: {message}")]
    StreamedError {
        /// The error's message.
        message: String,
        /// The event's data, as received.
        data: String,
    },
    /// The stream was not the chat-completions protocol.
    #[error("malformed response stream: {reason} (data: {data:?})")]
    MalformedStream {
        /// What was wrong.
        reason: String,
        /// The offending data, as received.
        data: String,
    },
}
