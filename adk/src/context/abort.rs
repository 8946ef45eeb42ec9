//! Abort as an explicit error kind (no class-name sniffing), and the abort state the turn and
//! dispatch share with the caller's cancellation token.

use std::fmt;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

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

/// The abort error. Returning it from middleware or an executor aborts exactly like
/// `ctx.abort(reason)`: from turn middleware it aborts the turn, from dispatch middleware or the
/// executor it aborts the dispatch. No error event is emitted.
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

/// A cancellation token plus the first reason given. The turn's token is a child of the
/// caller's (cancelling the caller's aborts the turn; aborting the turn leaves the caller's
/// token alone), and the dispatch's is a child of the turn's.
#[derive(Debug)]
pub(crate) struct AbortState {
    token: CancellationToken,
    reason: Mutex<Option<AbortReason>>,
}

impl AbortState {
    pub(crate) fn child_of(parent: &CancellationToken) -> Self {
        Self {
            token: parent.child_token(),
            reason: Mutex::new(None),
        }
    }

    pub(crate) fn abort(&self, reason: AbortReason) {
        let mut slot = self
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() && !self.token.is_cancelled() {
            *slot = Some(reason);
        }
        drop(slot);
        self.token.cancel();
    }

    pub(crate) fn is_aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    pub(crate) fn reason(&self) -> Option<AbortReason> {
        if !self.token.is_cancelled() {
            return None;
        }
        let slot = self
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(slot.clone().unwrap_or(AbortReason::Cancelled))
    }

    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }
}
