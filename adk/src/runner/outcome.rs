//! What `run` returns: how the turn ended, and the turn's final context.

use crate::context::{AbortReason, TurnContext};
use crate::events::{DispatchStatus, TurnError};
use crate::primitives::{Message, Role};

/// How a turn ended.
#[derive(Clone, Debug)]
pub enum TurnStatus {
    /// Every pipeline reached its end and the dispatch was acknowledged, or a `turn_input`
    /// middleware completed the turn with a reply ([`TurnContext::complete_with`]).
    Completed,
    /// The turn ran to its end, but its dispatch was aborted (a dispatch middleware or the
    /// executor called `ctx.abort(reason)`, e.g. a budget refusing another model call): the
    /// model gave no answer this turn. `turn_output` still ran.
    DispatchAborted(AbortReason),
    /// The turn was aborted: by `ctx.abort(reason)`, the abort error, or the caller's token.
    Aborted(AbortReason),
    /// Something failed; this is the first error reported on the bus (its code says what).
    Failed(TurnError),
}

/// The result of one turn. A failed turn is still `Ok(TurnOutcome)` from
/// [`TurnRunner::run`](crate::TurnRunner::run); call [`into_result`](Self::into_result) to make
/// it an `Err`.
///
/// ```
/// use adk::prelude::*;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let runner = TurnRunner::builder()
///     .storage(NoopStorage::new())
///     .executor(ScriptedModel::new())
///     .build();
/// let raw = RawTurnContext::new("conversation-1", "Be brief.").user_message("Hello!");
/// let outcome = runner.run(raw).await?.into_result()?; // `?` on a failed turn, too
/// assert!(outcome.reply().is_some());
/// # Ok::<(), BoxError>(())
/// # })?;
/// # Ok::<(), BoxError>(())
/// ```
#[derive(Debug)]
#[must_use = "a failed turn is an `Ok(TurnOutcome)`: check `status`, or call `into_result()?`"]
pub struct TurnOutcome {
    /// How the turn ended.
    pub status: TurnStatus,
    /// How the dispatch ended, when the turn reached it.
    pub dispatch: Option<DispatchStatus>,
    /// The turn's context as the last middleware left it: collections, stash, tools. Boxed, so
    /// an outcome is a few words to move (the context is about 700 bytes) and the turn's future
    /// holds a pointer to it rather than the context itself; read it through the box
    /// (`outcome.context.messages`), or `*outcome.context` for the value.
    pub context: Box<TurnContext>,
}

impl TurnOutcome {
    /// True for [`TurnStatus::Completed`]: the dispatch was acknowledged (or a `turn_input`
    /// middleware completed the turn with a reply) and nothing failed.
    pub fn is_completed(&self) -> bool {
        matches!(self.status, TurnStatus::Completed)
    }

    /// The error a [`TurnStatus::Failed`] turn ended with.
    pub fn error(&self) -> Option<&TurnError> {
        match &self.status {
            TurnStatus::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// `Err` with the turn's first error when it failed; the outcome otherwise (an abort is
    /// something middleware or the caller chose, not a failure: check `status` for it).
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::dispatch::executor_fn;
    ///
    /// let failing = executor_fn(|_ctx: &mut DispatchContext| {
    ///     Box::pin(async { Err::<(), BoxError>("the model is down".into()) })
    /// });
    /// let runner = TurnRunner::builder().storage(NoopStorage::new()).executor(failing).build();
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let error = runner.run(RawTurnContext::new("c", "p")).await?.into_result().unwrap_err();
    /// assert_eq!(error.code(), adk::events::ErrorCode::ExecutorError);
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn into_result(self) -> Result<Self, TurnError> {
        match self.status {
            TurnStatus::Failed(error) => Err(error),
            _ => Ok(self),
        }
    }

    /// The turn's answer: the reply a `turn_input` middleware completed the turn with
    /// ([`TurnContext::complete_with`](crate::TurnContext::complete_with)) when the turn
    /// completed, otherwise the model's, the last assistant message in the turn's messages, when
    /// the dispatch was acknowledged (a nacked, aborted or failed dispatch answered nothing, and an
    /// assistant message left from history is not this turn's answer).
    pub fn reply(&self) -> Option<&Message> {
        if let Some(reply) = self.context.completed_with() {
            return matches!(self.status, TurnStatus::Completed).then_some(reply);
        }
        if self.dispatch != Some(DispatchStatus::Ack) {
            return None;
        }
        let last = self.context.messages.last()?;
        (last.role() == Role::Assistant).then_some(last)
    }
}
