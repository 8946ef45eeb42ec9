//! The error value carried by `Event::Error` and `DispatchEnd`.

use std::fmt;
use std::sync::Arc;

use super::ErrorCode;

/// An error reported during a turn: a code, a message, and the error that caused it.
///
/// Cheap to clone (the source is shared), so every listener can keep it.
///
/// # How it prints
///
/// One rule, the one `std` and `anyhow` follow: the message says what failed, and the cause is
/// not copied into it; the cause is [`source()`](std::error::Error::source) (and
/// [`cause()`](Self::cause)), so an error reporter walking the chain shows each part once.
///
/// - `{}` is the code and the message: `E_LLM_EXECUTION_NACKED: the dispatch was nacked`.
/// - `{:#}` adds every cause in the chain, each once: `E_LLM_EXECUTION_NACKED: the dispatch was
///   nacked: the turn spent its budget of 3 model calls`. This is what the `tracing` mirror logs.
/// - `{:?}` (what `fn main() -> Result<(), BoxError>` and `unwrap` print) is the same report
///   over lines: the code and message, then `Caused by:` and one cause a line.
/// - `{:#?}` is the fields, for debugging the value itself.
///
/// ```
/// use adk::error::{BoxError, ErrorCode, TurnError};
/// use std::error::Error as _;
///
/// let cause: BoxError = "the model timed out".into();
/// let error = TurnError::new(ErrorCode::ExecutorError, "the executor failed").with_source(cause);
/// assert_eq!(error.to_string(), "E_LLM_EXECUTION_EXECUTOR_ERROR: the executor failed");
/// assert_eq!(
///     format!("{error:#}"),
///     "E_LLM_EXECUTION_EXECUTOR_ERROR: the executor failed: the model timed out"
/// );
/// assert_eq!(
///     format!("{error:?}"),
///     "E_LLM_EXECUTION_EXECUTOR_ERROR: the executor failed\n\nCaused by:\n    the model timed out"
/// );
/// assert_eq!(error.source().map(|cause| cause.to_string()).as_deref(), Some("the model timed out"));
/// ```
#[derive(Clone)]
pub struct TurnError {
    code: ErrorCode,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl TurnError {
    /// An error with a code and a message, without a source. The message says what failed;
    /// give the error that caused it with [`with_source`](Self::with_source) rather than in the
    /// message, so it is printed once (see [How it prints](#how-it-prints)).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the error that caused this one.
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(Arc::from(source.into()));
        self
    }

    /// The error's code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message, without the code and without the cause.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The underlying error, when there is one; downcast it to reach your own error type.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl TurnError {
    /// The causes, outermost first: the source, its source, and so on.
    fn causes(&self) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
        let first = self
            .source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static));
        std::iter::successors(first, |cause| cause.source())
    }
}

impl fmt::Debug for TurnError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if formatter.alternate() {
            return formatter
                .debug_struct("TurnError")
                .field("code", &self.code)
                .field("message", &self.message)
                .field("source", &self.source)
                .finish();
        }
        write!(formatter, "{}: {}", self.code, self.message)?;
        let mut causes = self.causes().peekable();
        if causes.peek().is_some() {
            formatter.write_str("\n\nCaused by:")?;
            for cause in causes {
                write!(formatter, "\n    {cause}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.code, self.message)?;
        if formatter.alternate() {
            for cause in self.causes() {
                write!(formatter, ": {cause}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}
