//! Abort as an explicit error kind: no class-name sniffing, no string matching.

use std::fmt;

/// Why a turn or dispatch was aborted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// A middleware or executor called `ctx.abort(reason)` or returned [`Aborted`].
    Requested(String),
    /// The caller's cancellation token was cancelled.
    Cancelled,
}

impl fmt::Display for AbortReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Requested(reason) => formatter.write_str(reason),
            Self::Cancelled => formatter.write_str("the caller's cancellation token was cancelled"),
        }
    }
}

/// The abort error. Returning it from middleware or an executor aborts the turn (or, from
/// dispatch middleware and the executor, the dispatch) exactly like `ctx.abort(reason)`: no
/// error event is emitted.
///
/// ```
/// use adk::context::Aborted;
/// use adk::pipeline::BoxError;
///
/// fn refuse() -> Result<(), BoxError> {
///     Err(Aborted::new("the user withdrew consent").into())
/// }
/// assert!(refuse().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("aborted: {reason}")]
pub struct Aborted {
    reason: String,
}

impl Aborted {
    /// An abort with a reason a person can read.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// The reason given.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
