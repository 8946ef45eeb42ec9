//! Payloads of the content events: streamed messages and thoughts, tool-call updates, logs and
//! generation statistics reported by executors.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::SystemTime;

/// A streamed message or thought as it accumulates, one event per reported chunk.
///
/// A stream ends complete in one of two ways: the executor finished it (`is_complete`), or it
/// was cut off by an error or a cancellation (`is_complete` and `is_interrupted`); either way a
/// listener that waits for `is_complete` always sees its stream end.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedContent {
    /// The record the chunks belong to.
    pub id: String,
    /// When the first chunk arrived.
    pub created_at: SystemTime,
    /// When this chunk arrived.
    pub updated_at: SystemTime,
    /// Everything reported so far, this chunk included: a snapshot shared with the stream's
    /// other events, so reporting stays linear in the length of the text.
    pub full: StreamedText,
    /// This chunk.
    pub delta: String,
    /// Whether this was the last chunk.
    pub is_complete: bool,
    /// When the stream completed.
    pub completed_at: Option<SystemTime>,
    /// Whether the stream was cut off (the model call failed or was cancelled) rather than
    /// finished; `full` holds what had arrived.
    pub is_interrupted: bool,
}

/// The text of a stream up to one chunk: a cheap snapshot of the stream's append-only buffer.
///
/// Every event of a stream shares one buffer, so cloning an event or reporting a chunk copies
/// only the chunk, never the text before it. Read it with [`with_str`](Self::with_str), print
/// it, or compare it with a string.
///
/// ```
/// use adk::events::StreamedText;
///
/// let text = StreamedText::from("Sunny in Oslo.");
/// assert_eq!(text, "Sunny in Oslo.");
/// assert_eq!(text.to_string(), "Sunny in Oslo.");
/// assert_eq!(text.with_str(|full| full.len()), 14);
/// ```
#[derive(Clone, Default)]
pub struct StreamedText {
    buffer: Arc<RwLock<String>>,
    len: usize,
}

impl StreamedText {
    /// An empty text with its own buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `read` with the text of this snapshot.
    pub fn with_str<R>(&self, read: impl FnOnce(&str) -> R) -> R {
        let buffer = self.buffer.read().unwrap_or_else(PoisonError::into_inner);
        read(&buffer[..self.len])
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `delta`. Only the stream's newest snapshot appends, so every older snapshot
    /// keeps reading the prefix it was taken at.
    pub(crate) fn push_str(&mut self, delta: &str) {
        let mut buffer = self.buffer.write().unwrap_or_else(PoisonError::into_inner);
        if buffer.len() != self.len {
            // Not the newest snapshot (a clone appended past it): start a buffer of its own,
            // so older snapshots never see text that was not theirs.
            let mut own = String::with_capacity(self.len + delta.len());
            own.push_str(&buffer[..self.len]);
            drop(buffer);
            own.push_str(delta);
            self.len = own.len();
            self.buffer = Arc::new(RwLock::new(own));
            return;
        }
        buffer.push_str(delta);
        self.len = buffer.len();
    }
}

impl From<&str> for StreamedText {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl From<String> for StreamedText {
    fn from(text: String) -> Self {
        Self {
            len: text.len(),
            buffer: Arc::new(RwLock::new(text)),
        }
    }
}

impl fmt::Display for StreamedText {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_str(|text| formatter.write_str(text))
    }
}

impl fmt::Debug for StreamedText {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_str(|text| fmt::Debug::fmt(text, formatter))
    }
}

impl PartialEq for StreamedText {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.buffer, &other.buffer) {
            return self.len == other.len;
        }
        other.with_str(|text| self == text)
    }
}

impl Eq for StreamedText {}

impl PartialEq<str> for StreamedText {
    fn eq(&self, other: &str) -> bool {
        self.with_str(|text| text == other)
    }
}

impl PartialEq<&str> for StreamedText {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl PartialEq<String> for StreamedText {
    fn eq(&self, other: &String) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<StreamedText> for String {
    fn eq(&self, other: &StreamedText) -> bool {
        other == self
    }
}

impl PartialEq<StreamedText> for &str {
    fn eq(&self, other: &StreamedText) -> bool {
        other == *self
    }
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
    /// Prompt tokens read from the provider's prompt cache (counted in `prompt_tokens` too):
    /// Anthropic's `cache_read_input_tokens`, OpenAI's `prompt_tokens_details.cached_tokens`.
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's prompt cache (counted in `prompt_tokens` too):
    /// Anthropic's `cache_creation_input_tokens`.
    pub cache_write_tokens: Option<u64>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_keeps_its_prefix_while_the_stream_grows() {
        let mut newest = StreamedText::new();
        newest.push_str("Sunny ");
        let first = newest.clone();
        newest.push_str("in Oslo.");
        assert_eq!(first, "Sunny ");
        assert_eq!(newest, "Sunny in Oslo.");
        assert!(
            Arc::ptr_eq(&first.buffer, &newest.buffer),
            "one buffer, shared"
        );
    }

    #[test]
    fn an_older_snapshot_that_appends_gets_a_buffer_of_its_own() {
        let mut newest = StreamedText::from("a");
        let mut older = newest.clone();
        newest.push_str("b");
        older.push_str("c");
        assert_eq!(
            (newest.to_string(), older.to_string()),
            ("ab".into(), "ac".into())
        );
        assert_ne!(newest, older);
    }
}
