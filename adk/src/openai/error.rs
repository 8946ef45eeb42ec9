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
    #[error("the server answered {status}{}: {message}", describe_code(code.as_deref(), kind.as_deref(), param.as_deref()))]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The server's error message (`error.message` of an OpenAI-style body), or the start of
        /// the body; at most [`MAX_ERROR_MESSAGE`] bytes.
        message: String,
        /// `error.type` of an OpenAI-style body (`invalid_request_error`, `insufficient_quota`…).
        kind: Option<String>,
        /// `error.code` (`insufficient_quota`, `context_length_exceeded`…; a number some
        /// servers send is given as its digits).
        code: Option<String>,
        /// `error.param`: the request field the error is about (`messages`, `n`…).
        param: Option<String>,
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
    /// The server sent an error instead of (or after part of) the answer: `data: {"error":
    /// {..}}`, an `event: error` event, or llama.cpp's `error: {..}` line. The call never
    /// counts as answered.
    #[error("the server reported an error mid-stream{}: {message}", describe_code(code.as_deref(), kind.as_deref(), param.as_deref()))]
    StreamedError {
        /// The error's message, at most [`MAX_ERROR_MESSAGE`] bytes.
        message: String,
        /// `error.type`, when the server sent one.
        kind: Option<String>,
        /// `error.code`, when the server sent one.
        code: Option<String>,
        /// `error.param`, when the server sent one.
        param: Option<String>,
        /// The start of the event's data (an excerpt, see [`MAX_EXCERPT`]).
        data: String,
    },
    /// The stream was not the chat-completions protocol.
    #[error("malformed response stream: {reason} (data: {data:?})")]
    MalformedStream {
        /// What was wrong.
        reason: String,
        /// The start of the offending data (an excerpt, see [`MAX_EXCERPT`]).
        data: String,
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
        /// The cap, in bytes
        /// ([`OpenAiConfig::max_line_bytes`](super::OpenAiConfig::max_line_bytes) or
        /// [`max_answer_bytes`](super::OpenAiConfig::max_answer_bytes)).
        limit: usize,
        /// The start of what was received (see [`MAX_EXCERPT`]).
        excerpt: String,
    },
    /// The server sent more than one choice (`n` above 1, from a hook or `extra_body`). One
    /// answer is what a dispatch stores, so the call fails instead of mixing choices.
    #[error(
        "the server sent choice {index}, but one answer is expected; remove `n` from the request \
         (or set it to 1)"
    )]
    MultipleChoices {
        /// The `index` of the unexpected choice.
        index: u64,
    },
    /// The final answer is not the structured output asked for with
    /// [`with_structured_output`](super::OpenAiExecutor::with_structured_output).
    #[error("the answer is not the structured output asked for: {source}")]
    StructuredOutput {
        /// How it does not fit.
        #[source]
        source: super::StructuredOutputError,
    },
    /// The model refused to answer (the `refusal` field). The dispatch fails with this error
    /// instead of acknowledging an empty answer, so a caller or middleware can see the reason
    /// and react (ask differently, tell the user).
    #[error("the model refused: {refusal}")]
    Refused {
        /// The model's explanation, as it wrote it.
        refusal: String,
    },
}

/// Which part of a response outgrew its cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponsePart {
    /// One line of the event stream (one chunk's JSON, usually).
    Line,
    /// The whole answer: text, reasoning, refusal and tool calls together, or an unstreamed body.
    Answer,
}

/// How many bytes of received data an error keeps (`data`, `excerpt`): enough to recognise what
/// came, little enough that an error message stays short whatever the server sent.
pub const MAX_EXCERPT: usize = crate::provider::MAX_EXCERPT;

/// How many bytes of a server's error message an error keeps.
pub const MAX_ERROR_MESSAGE: usize = 512;

pub(crate) use crate::provider::{cut, excerpt};

impl From<crate::provider::LineTooLong> for OpenAiError {
    fn from(line: crate::provider::LineTooLong) -> Self {
        Self::ResponseTooLarge {
            part: ResponsePart::Line,
            limit: line.limit,
            excerpt: line.excerpt,
        }
    }
}

/// ` (code, type, param)` for a message, only the parts known.
fn describe_code(code: Option<&str>, kind: Option<&str>, param: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(code) = code {
        parts.push(format!("code `{code}`"));
    }
    if let Some(kind) = kind.filter(|kind| Some(*kind) != code) {
        parts.push(format!("type `{kind}`"));
    }
    if let Some(param) = param {
        parts.push(format!("param `{param}`"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}
