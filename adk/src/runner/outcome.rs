//! What `run` returns: how the turn ended, and the turn's final context.

use crate::context::{AbortReason, TurnContext};
use crate::events::{DispatchStatus, TurnError};

/// How a turn ended.
#[derive(Clone, Debug)]
pub enum TurnStatus {
    /// Every pipeline reached its end and the dispatch was acknowledged (or aborted on its
    /// own, letting the turn finish).
    Completed,
    /// The turn was aborted: by `ctx.abort(reason)`, the abort error, or the caller's token.
    Aborted(AbortReason),
    /// Something failed; this is the first error reported on the bus (its code says what).
    Failed(TurnError),
}

/// The result of one turn.
#[derive(Debug)]
pub struct TurnOutcome {
    /// How the turn ended.
    pub status: TurnStatus,
    /// How the dispatch ended, when the turn reached it.
    pub dispatch: Option<DispatchStatus>,
    /// The turn's context as the last middleware left it: collections, stash, tools.
    pub context: TurnContext,
}

impl TurnOutcome {
    /// True for [`TurnStatus::Completed`].
    pub fn is_completed(&self) -> bool {
        matches!(self.status, TurnStatus::Completed)
    }
}
