//! A `turn_input` middleware that answers by itself (a cache hit, a refusal with an answer):
//! [`TurnContext::complete_with`] stores its reply and completes the turn without the executor.

use crate::primitives::{Message, PrimitiveError, Role, Tokenizable};
use crate::storage::StorageError;

use super::TurnContext;

/// The reply a middleware completes a turn with: text, or a whole assistant [`Message`]. `&str`,
/// `String`, [`Tokenizable`] and `Message` convert into it; text becomes an assistant message
/// with a fresh UUIDv7 id.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Text; the turn makes an assistant message of it.
    Text(Tokenizable),
    /// An assistant message, stored as given.
    Message(Message),
}

impl From<&str> for Reply {
    fn from(text: &str) -> Self {
        Self::Text(text.into())
    }
}

impl From<String> for Reply {
    fn from(text: String) -> Self {
        Self::Text(text.into())
    }
}

impl From<Tokenizable> for Reply {
    fn from(text: Tokenizable) -> Self {
        Self::Text(text)
    }
}

impl From<Message> for Reply {
    fn from(message: Message) -> Self {
        Self::Message(message)
    }
}

/// Why [`TurnContext::complete_with`] refused; the turn was not completed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The reply is not a valid message (empty text, for instance).
    #[error("the reply is not a valid message: {0}")]
    Invalid(#[from] PrimitiveError),
    /// The reply is a message whose role is not `assistant`.
    #[error("the reply must be an assistant message, not a {role:?} message")]
    NotAssistant {
        /// The message's role.
        role: Role,
    },
    /// The dispatch already ran: only `turn_input` can answer in the executor's place.
    #[error(
        "the turn already dispatched: complete a turn with a reply from `turn_input`, before the \
         executor runs"
    )]
    AfterDispatch,
    /// The turn was already completed with a reply.
    #[error("the turn was already completed with a reply")]
    AlreadyCompleted,
    /// Storing the reply failed; the turn was not completed.
    #[error("the reply could not be stored: {0}")]
    Storage(#[from] StorageError),
}

impl TurnContext {
    /// Answers the turn in the executor's place, from `turn_input` (Google ADK's
    /// `before_agent_callback` returning content): the reply is stored through the storage
    /// adapter at once (after the user message, in `messages` too), and the turn completes
    /// without a dispatch. The runner skips the executor and the dispatch pipelines (no
    /// `dispatchStart`), runs `turn_output`, saves the reply under the
    /// [output key](crate::runner::TurnRunnerBuilder::output_key), and commits the turn's state,
    /// as for any completed turn. [`TurnOutcome::reply`](crate::runner::TurnOutcome::reply) is
    /// this reply; the outcome's `dispatch` is `None`.
    ///
    /// The middleware then returns without running `next` (that is not reported as a
    /// short-circuit once the turn is completed) or runs it (the rest of `turn_input` runs, the
    /// dispatch still does not). An error, a panic or an abort later in the turn fails or aborts
    /// it as usual: the reply stays stored and nothing is committed.
    ///
    /// ```
    /// use adk::prelude::*;
    ///
    /// #[adk::middleware(pipeline = turn_input)]
    /// async fn cached(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    ///     let asked = ctx.user_message().and_then(|m| m.content()).map(|c| c.render());
    ///     if asked.as_deref() == Some("What are your opening hours?") {
    ///         ctx.state_mut().set_value("cache_hits", serde_json::json!(1))?;
    ///         return Ok(ctx.complete_with("9 to 5, Monday to Friday.").await?);
    ///     }
    ///     next.run(ctx).await;
    ///     Ok(())
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let runner = TurnRunner::builder()
    ///     .storage(NoopStorage::new())
    ///     .session_store(adk::state::InMemorySessionStore::new())
    ///     .turn_input(cached)
    ///     .executor(ScriptedModel::new())
    ///     .build();
    /// let raw = RawTurnContext::new("c-1", "Be brief.").user_message("What are your opening hours?");
    /// let outcome = runner.run(raw).await?.into_result()?;
    /// assert_eq!(outcome.reply().unwrap().content().unwrap().render(), "9 to 5, Monday to Friday.");
    /// assert_eq!(outcome.dispatch, None); // the executor never ran
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ReplyError`]; the turn was not completed and nothing was stored.
    pub async fn complete_with(&mut self, reply: impl Into<Reply>) -> Result<(), ReplyError> {
        if self.dispatch_started {
            return Err(ReplyError::AfterDispatch);
        }
        if self.completed_with.is_some() {
            return Err(ReplyError::AlreadyCompleted);
        }
        let message = match reply.into() {
            Reply::Text(text) => Message::assistant(crate::ids::time_ordered_id(), text)?,
            Reply::Message(message) if message.role() == Role::Assistant => message,
            Reply::Message(message) => {
                return Err(ReplyError::NotAssistant {
                    role: message.role(),
                });
            }
        };
        // The user's message comes first in `messages`, as it would before a dispatch.
        self.admit_user_message();
        self.store_message(message.clone()).await?;
        self.completed_with = Some(Box::new(message));
        Ok(())
    }

    /// The reply a middleware completed the turn with ([`complete_with`](Self::complete_with)),
    /// if one did.
    pub fn completed_with(&self) -> Option<&Message> {
        self.completed_with.as_deref()
    }
}
