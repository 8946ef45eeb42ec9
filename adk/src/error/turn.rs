//! The error value carried by `Event::Error` and `DispatchEnd`.

use std::fmt;
use std::sync::Arc;

use super::ErrorCode;

/// An error reported during a turn: a code, a message, and the error that caused it.
///
/// Cheap to clone (the source is shared), so every listener can keep it.
#[derive(Clone)]
pub struct TurnError {
    code: ErrorCode,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl TurnError {
    /// An error with a code and a message, without a source.
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

    /// The message, without the code.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The underlying error, when there is one; downcast it to reach your own error type.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl fmt::Debug for TurnError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("TurnError")
            .field("code", &self.code)
            .field("message", &self.message)
            .field(
                "source",
                &self.source.as_ref().map(|source| source.to_string()),
            )
            .finish()
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}
