//! Payloads of the content events: streamed messages and thoughts, tool-call updates, logs and
//! generation statistics reported by executors.

use std::time::SystemTime;

/// A streamed message or thought as it accumulates, one event per reported chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedContent {
    /// The record the chunks belong to.
    pub id: String,
    /// When the first chunk arrived.
    pub created_at: SystemTime,
    /// When this chunk arrived.
    pub updated_at: SystemTime,
    /// Everything reported so far, this chunk included.
    pub full: String,
    /// This chunk.
    pub delta: String,
    /// Whether this was the last chunk.
    pub is_complete: bool,
    /// When the stream completed.
    pub completed_at: Option<SystemTime>,
}

/// A tool call as the model builds it up, one event per update.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallContent {
    /// The tool call's id.
    pub id: String,
    /// The tool's name; empty until reported.
    pub tool: String,
    /// The arguments reported so far.
    pub args: serde_json::Value,
    /// SHA-256 of the canonical JSON of `{"args": .., "tool": ..}`, hex; empty until both are
    /// known. Identical calls share it: it is what `DispatchContext::tool_call_count` counts.
    pub checksum: String,
    /// When the first update arrived.
    pub created_at: SystemTime,
    /// When this update arrived.
    pub updated_at: SystemTime,
    /// Whether the call finished (with results or an error).
    pub is_complete: bool,
    /// Whether it finished in error.
    pub is_error: bool,
    /// The results, once reported.
    pub results: Option<serde_json::Value>,
    /// When it completed.
    pub completed_at: Option<SystemTime>,
}

/// How severe a log record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogLevel {
    /// Very fine detail.
    Trace,
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that did not stop the turn.
    Warn,
    /// Something failed.
    Error,
}

impl LogLevel {
    /// `"trace"`, `"debug"`, `"info"`, `"warn"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        }
    }
}

/// A structured log record an executor or middleware reported during a dispatch.
#[derive(Clone, Debug, PartialEq)]
pub struct LogRecord {
    /// The dispatch.
    pub dispatch_id: std::sync::Arc<str>,
    /// The iteration it happened in.
    pub iteration: u32,
    /// When it was reported.
    pub emitted_at: SystemTime,
    /// How severe.
    pub level: LogLevel,
    /// A short machine-readable kind, e.g. `"retry"`.
    pub kind: String,
    /// What happened, for people.
    pub message: String,
    /// Extra structured data, when given.
    pub payload: Option<serde_json::Value>,
}

/// Token and timing statistics of one model call. Every field is optional: providers report
/// different subsets.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct GenerationStats {
    /// Tokens in the prompt.
    pub prompt_tokens: Option<u64>,
    /// Tokens generated.
    pub completion_tokens: Option<u64>,
    /// Prompt plus completion.
    pub total_tokens: Option<u64>,
    /// Wall time of the call, in nanoseconds.
    pub total_duration_ns: Option<u64>,
    /// Why generation stopped (`"stop"`, `"tool_calls"`, `"length"`…).
    pub finish_reason: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// The provider that served it.
    pub provider: Option<String>,
    /// The provider's raw usage object, untouched.
    pub raw: Option<serde_json::Value>,
}

impl GenerationStats {
    /// Empty statistics; fill the fields you know.
    pub fn new() -> Self {
        Self::default()
    }
}
