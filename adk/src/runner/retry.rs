//! Running a turn again when its commit was refused as stale.

use crate::context::{InvalidTurnContext, RawTurnContext};
use crate::events::ErrorCode;

use super::{TurnOutcome, TurnRunner, TurnStatus};

impl TurnRunner {
    /// Runs a turn and, while its commit is refused as stale (`E_STATE_STALE`: another turn
    /// changed a `refuse` key this turn wrote), runs it again from fresh state: a new turn with
    /// a copy of `raw`, which loads the session's state anew, so its middleware and executor
    /// decide again on the values that beat it. At most `attempts` runs in all (at least one);
    /// returns the last run's outcome.
    ///
    /// A refused run committed nothing to the session store (no state, no session events), but
    /// what it wrote to storage stays there: the user message it stored before `turn_input`,
    /// and the messages and tool records it stored while it ran. The user message is stored
    /// once: text gets its id before the first run, and the runs after a refused one admit that
    /// stored message without storing it again. Retry when the turn is cheap to repeat and its
    /// tools are safe to call again; for a shared counter or set, declare the key with a merge
    /// policy instead (`on_conflict = add`), which is never refused. See `docs/state.md`,
    /// "Contention".
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::state::InMemorySessionStore;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let runner = TurnRunner::builder()
    ///     .storage(NoopStorage::new())
    ///     .session_store(InMemorySessionStore::new())
    ///     .executor(adk::dispatch::executor_fn(|ctx: &mut DispatchContext| {
    ///         Box::pin(async move {
    ///             let seen = ctx.state().value("app:n").and_then(|n| n.as_u64()).unwrap_or(0);
    ///             ctx.state_mut().set_value("app:n", serde_json::json!(seen + 1))?;
    ///             ctx.ack()?;
    ///             Ok::<(), BoxError>(())
    ///         })
    ///     }))
    ///     .build();
    /// let raw = RawTurnContext::new("s-1", "Be brief.").app_name("shop").user_message("hi");
    /// let outcome = runner.run_retrying_stale(raw, 5).await?;
    /// assert!(outcome.is_completed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run): the raw input was refused before anything ran.
    pub async fn run_retrying_stale(
        &self,
        mut raw: RawTurnContext,
        attempts: u32,
    ) -> Result<TurnOutcome, InvalidTurnContext> {
        // Every run stores and admits one user message: text gets its id here, once.
        raw.user_message = raw
            .user_message
            .map(crate::context::HeldUserMessage::with_fixed_id)
            .transpose()?;
        let mut left = attempts.max(1);
        loop {
            left -= 1;
            let outcome = self.run(raw.clone()).await?;
            let stale = matches!(
                &outcome.status,
                TurnStatus::Failed(error) if error.code() == ErrorCode::StaleState
            );
            if !stale || left == 0 {
                return Ok(outcome);
            }
            // Refused at its commit, after it stored the user message: the next run admits
            // that message without storing it again.
            raw.user_message_stored = true;
        }
    }
}
