//! The turn runner: walks the four pipelines around the dispatch loop, and nothing else.
//!
//! A turn, step by step: validate the raw input (a refusal returns `Err` and emits nothing),
//! `TurnStart`, store the caller's user message (unless the turn was cancelled before it began),
//! `turn_input`, the dispatch loop (skipped when a `turn_input` middleware completed the turn
//! with its own reply), `turn_output` (only when the dispatch was not refused and the
//! turn not aborted), the state commit (only for a completed turn), `TurnEnd` (always, once
//! `TurnStart` fired). Errors inside
//! the turn are reported on the observability bus and summarised in the returned
//! [`TurnOutcome`]; they are never thrown past `run`.

mod builder;
mod events;
mod outcome;
mod resume;
mod retry;
mod wiring;

use std::collections::HashSet;
use std::sync::Arc;

use tracing::Instrument;

pub use builder::{BuildError, HasExecutor, HasStorage, NoExecutor, NoStorage, TurnRunnerBuilder};
pub use outcome::{TurnOutcome, TurnStatus};
pub use resume::{InterruptedTurn, ResumeError, Resumption};
pub use wiring::UnkeptWrite;

use crate::context::{Collection, InvalidTurnContext, RawTurnContext, TurnContext, TurnEnv};
use crate::dispatch::{DispatchPlan, DispatchReport, Executor, run_dispatch, short_circuited};
use crate::events::{DispatchStatus, ErrorCode, Event, TurnError};
use crate::pipeline::{
    DispatchInput, DispatchOutput, Downstream, PipelineRun, Stack, TurnInput, TurnOutput,
};
use crate::primitives::{Message, Role, Tool, ToolRegistry};
use crate::state::{
    SessionKey, SessionStore, SessionStoreError, SharedSessionStore, State, StateKey,
};

/// `$future.instrument($span).await`, or `$future.await` when no subscriber wants the span: the
/// wrapper would check the span on every poll and copy the future once more, for nothing.
macro_rules! in_span {
    ($future:expr, $span:expr) => {{
        let span = $span;
        if span.is_disabled() {
            $future.await
        } else {
            $future.instrument(span).await
        }
    }};
}

pub(crate) struct RunnerParts {
    pub(crate) executor: Arc<dyn Executor>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) turn_input: Stack<TurnInput>,
    pub(crate) turn_output: Stack<TurnOutput>,
    pub(crate) dispatch_input: Stack<DispatchInput>,
    pub(crate) dispatch_output: Stack<DispatchOutput>,
    /// What every turn works with: the storage, the listeners, and the `tool_execution`
    /// pipeline with the handler step last (`None` without tool middleware).
    pub(crate) turn_env: Arc<TurnEnv>,
    pub(crate) max_iterations: u32,
    pub(crate) session_store: Option<SharedSessionStore>,
    pub(crate) output_key: Option<StateKey<String>>,
    /// Keys of stored middleware state records of no known type, already reported.
    pub(crate) reported_unknown: std::sync::Mutex<HashSet<String>>,
}

/// Runs turns. Cheap to clone (an `Arc` inside), `Send + Sync`: share one runner across tokio
/// tasks and run many turns at once. Every `run` starts fresh: nothing carries over but what
/// storage and, when one is configured, the [session store](TurnRunnerBuilder::session_store)
/// keep (see `docs/state.md`).
///
/// ```
/// use adk::TurnRunner;
/// use adk::context::{DispatchContext, RawTurnContext};
/// use adk::dispatch::executor_fn;
/// use adk::pipeline::BoxError;
/// use adk::runner::TurnStatus;
/// use adk::storage::NoopStorage;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let runner = TurnRunner::builder()
///     .storage(NoopStorage::new())
///     .executor(executor_fn(|ctx: &mut DispatchContext| {
///         Box::pin(async move {
///             ctx.ack()?;
///             Ok::<(), BoxError>(())
///         })
///     }))
///     .build();
///
/// let outcome = runner.run(RawTurnContext::new("conversation-1", "Be brief.")).await.unwrap();
/// assert!(matches!(outcome.status, TurnStatus::Completed));
/// # });
/// ```
#[derive(Clone)]
pub struct TurnRunner {
    parts: Arc<RunnerParts>,
}

impl std::fmt::Debug for TurnRunner {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TurnRunner")
            .field("turn_input", &self.parts.turn_input)
            .field("dispatch_input", &self.parts.dispatch_input)
            .field("dispatch_output", &self.parts.dispatch_output)
            .field("turn_output", &self.parts.turn_output)
            .field("tools", &self.parts.tools.len())
            .field("max_iterations", &self.parts.max_iterations)
            .finish_non_exhaustive()
    }
}

impl TurnRunner {
    /// Starts building a runner.
    pub fn builder() -> TurnRunnerBuilder {
        TurnRunnerBuilder::new()
    }

    fn from_parts(parts: RunnerParts) -> Self {
        Self {
            parts: Arc::new(parts),
        }
    }

    /// Runs one turn.
    ///
    /// Returns `Err` only when the raw input is refused (empty system prompt, a flat-keyed
    /// stash seed, duplicate tool names), before anything ran or was emitted. Otherwise the
    /// [`TurnOutcome`] says how the turn ended, and every error was also delivered on the
    /// observability bus.
    ///
    /// Like an `async fn`, nothing runs until the returned future is first polled. It is the
    /// turn's own future, not a wrapper around it: a wrapper would hold the raw input a second
    /// time and copy the outcome once more on the way out (about 150 instructions a turn).
    pub fn run(
        &self,
        raw: RawTurnContext,
    ) -> impl Future<Output = Result<TurnOutcome, InvalidTurnContext>> + Send + '_ {
        self.run_turn(raw, None)
    }

    /// The conversation `raw` names (app, user, conversation, thread) when its last turn did
    /// not end: read from the stored transcript (messages, thoughts and tool calls, through
    /// the storage adapter's fetches), it ends with the user's question and no answer, or with
    /// a model answer that made tool calls and no answer after them. `None` when the last
    /// answer made no call (the turn ended with its reply) or nothing is stored, as with
    /// [`NoopStorage`](crate::storage::NoopStorage), which keeps no transcript.
    ///
    /// To find interrupted sessions, ask this for each session a process was running (the
    /// session store lists them: `SessionStore::list_sessions`). Only `raw`'s ids are read.
    ///
    /// # Errors
    ///
    /// [`ResumeError::Storage`] when a fetch fails; [`ResumeError::UnknownTurn`] when the last
    /// answer's id does not name its turn.
    pub async fn interrupted(
        &self,
        raw: &RawTurnContext,
    ) -> Result<Option<InterruptedTurn>, ResumeError> {
        let ctx = resume::storage_context_of(raw);
        resume::find_interrupted(&self.parts.turn_env.storage, &ctx).await
    }

    /// Continues the conversation's interrupted turn ([`interrupted`](Self::interrupted)) from
    /// its last stored point, or returns [`Resumption::NothingToResume`].
    ///
    /// `raw` is what the process would give `run` (system prompt, ids, stash, identity,
    /// cancellation) without a user message: the stored question is the turn's. The resumed
    /// turn keeps the interrupted turn's id, so the [tool ledger](crate::storage::ledger)
    /// finds its calls' records. It runs as a turn does (`turn_input`, the dispatch,
    /// `turn_output`, the commit) with three differences: the question is not stored again;
    /// after `turn_input` the turn's stored answers join the turn's collections; and before the
    /// first model call, every call the turn stored without a result runs again through the
    /// `tool_execution` pipeline under the ledger's rules — a recorded result is used without
    /// running the tool, an idempotent call runs under its recorded key, an at-most-once call
    /// whose intent has no result fails with `OutcomeUnknown` (the model reads that), and a
    /// call with no intent runs. Each result is stored before the model is called, so the
    /// model never reads a call without its result. The dispatch goes on at the iteration after
    /// the last stored answer. State starts from the last commit: the interrupted turn's state
    /// writes were never committed.
    ///
    /// # Errors
    ///
    /// [`ResumeError`]: a refused input, a user message given, a failed read, or an answer
    /// whose turn cannot be told; nothing ran.
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::runner::Resumption;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let storage = adk::sqlite::SqliteStorage::in_memory().await?;
    /// let runner = TurnRunner::builder().storage(storage).executor(ScriptedModel::new()).build();
    /// runner.run(RawTurnContext::new("c-1", "Be brief.").user_message("Hello!")).await?;
    /// // The turn ended with its reply: there is nothing to resume.
    /// let resumed = runner.resume(RawTurnContext::new("c-1", "Be brief.")).await?;
    /// assert!(matches!(resumed, Resumption::NothingToResume));
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub async fn resume(&self, raw: RawTurnContext) -> Result<Resumption, ResumeError> {
        if raw.user_message.is_some() {
            return Err(ResumeError::UserMessageGiven);
        }
        let Some(turn) = self.interrupted(&raw).await? else {
            return Ok(Resumption::NothingToResume);
        };
        let (turn_id, question, point) = turn.into_resume();
        let raw = resume::resumed_input(raw, turn_id, question);
        let outcome = self.run_turn(raw, Some(Box::new(point))).await?;
        Ok(Resumption::Resumed(Box::new(outcome)))
    }

    // `resume` comes boxed: an argument stays in the turn's future for the whole turn, so an
    // inline `ResumePoint` (104 bytes, `None` in every turn but a resumed one) would be moved
    // with every turn's future; the context keeps it boxed anyway.
    async fn run_turn(
        &self,
        raw: RawTurnContext,
        resume: Option<Box<crate::context::ResumePoint>>,
    ) -> Result<TurnOutcome, InvalidTurnContext> {
        let parts = &*self.parts;
        // A runner without tools (many) makes its empty registry without walking its list.
        let tools = if parts.tools.is_empty() {
            ToolRegistry::new()
        } else {
            ToolRegistry::from_tools(parts.tools.iter().cloned())?
        };
        // Boxed once here and handed to the outcome as it is: the turn's future (moved whole
        // by whoever polls it, `block_on` twice) and the outcome (moved out through each
        // future that awaits it) carry a pointer, not 728 bytes. Measured against the context
        // inline, side by side: about 4% of a turn.
        let mut ctx = Box::new(TurnContext::with_events(
            raw,
            Arc::clone(&parts.turn_env),
            tools,
        )?);
        ctx.resume = resume;
        // A store that commits to the adapter's database takes the turn's assistant messages
        // into its commit's transaction: one flush for the turn (see `storage::held`).
        // (The context was just made: nothing else holds its shared part yet.)
        if let Some(partner) = parts
            .session_store
            .as_ref()
            .and_then(SessionStore::commit_partner)
            && let Some(shared) = Arc::get_mut(&mut ctx.shared)
        {
            shared.storage_context.hold_writes_for(partner);
        }
        // The GenAI `invoke_agent` span (see `adk::otel`): model and tool calls nest under it.
        let storage = ctx.storage_context();
        let span = tracing::info_span!(
            "adk.turn",
            turn_id = %ctx.turn_id(),
            otel.name = format!("invoke_agent {}", storage.app_name()),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %storage.app_name(),
            gen_ai.conversation.id = %storage.conversation_id(),
        );
        let report = in_span!(self.walk(&mut ctx), span);
        let status = if let Some(error) = ctx.shared.first_error() {
            TurnStatus::Failed(error)
        } else if let Some(reason) = ctx.abort_reason() {
            TurnStatus::Aborted(reason)
        } else if let Some(reason) = report
            .as_ref()
            .and_then(|report| report.abort_reason.clone())
        {
            TurnStatus::DispatchAborted(reason)
        } else {
            TurnStatus::Completed
        };
        Ok(TurnOutcome {
            status,
            dispatch: report.map(|report| report.status),
            context: ctx,
        })
    }

    /// Forks a thread of a session through this runner's storage adapter and session store;
    /// see [`Fork`](crate::state::Fork).
    ///
    /// # Errors
    ///
    /// [`ForkError`](crate::state::ForkError), including `NoSessionStore` for a
    /// runner built without one.
    pub async fn fork(
        &self,
        fork: crate::state::Fork,
    ) -> Result<crate::state::Forked, crate::state::ForkError> {
        let Some(store) = &self.parts.session_store else {
            return Err(crate::state::ForkError::NoSessionStore);
        };
        fork.run(&self.parts.turn_env.storage, store).await
    }

    async fn walk(&self, ctx: &mut TurnContext) -> Option<DispatchReport> {
        let parts = &*self.parts;
        let shared = Arc::clone(&ctx.shared);
        // While the turn is walked, cancelling its token wakes a flag, so the abort check before
        // every middleware reads atomics instead of locking the token. A token not made yet (the
        // caller gave none) is not watched: nothing can cancel it before something makes it.
        let registration = std::pin::pin!(
            shared
                .storage_context
                .lazy_token()
                .if_made()
                .map(tokio_util::sync::CancellationToken::cancelled)
        );
        let _watched = crate::context::watch_turn(&shared, registration);
        // Nobody observing: no clock read, no event built (a few hundred instructions a turn).
        let observed = shared.events.observes_lifecycle();
        // The turn's clock starts here when somebody observes it (see `TurnShared::began`).
        let began = observed.then(|| shared.began());
        if let Some((started_at, _)) = began {
            shared.events.emit(Event::TurnStart {
                turn_id: ctx.turn_id().clone(),
                started_at,
            });
        }

        let dispatch = async {
            // Cancelled before the turn began: nothing runs and nothing is stored, so history
            // never holds a question the turn was never going to answer.
            if ctx.is_aborted() || !self.load_state(ctx).await || ctx.is_aborted() {
                return None;
            }
            ctx.apply_caller_delta();
            // A resumed turn's question is stored already.
            let store = async {
                match ctx.resume {
                    Some(_) => Ok(()),
                    None => ctx.store_user_message().await,
                }
            };
            if let Err(error) = contained(store).await {
                shared.report_error(
                    TurnError::new(
                        ErrorCode::StorageFailed,
                        "storing the user message before `turn_input` failed",
                    )
                    .with_source(error),
                );
                return None;
            }
            let input = in_span!(
                parts.turn_input.run(ctx),
                tracing::debug_span!("adk.pipeline", pipeline = "turn_input")
            );
            // A middleware that completed the turn with a reply may have returned without
            // `next`: that is its answer, not a forgotten `next`.
            let answered = ctx.completed_with().is_some();
            if !self.pipeline_went_through(ctx, input, "turn_input", answered) {
                return None;
            }
            ctx.admit_user_message();
            ctx.admit_resumed();
            if answered {
                // No dispatch: `turn_output`, the output key and the commit, as for a turn the
                // executor answered.
                let reply = ctx
                    .completed_with()
                    .and_then(|message| message.content().map(|content| content.render()));
                self.finish(ctx, reply, true, None).await;
                return None;
            }
            ctx.dispatch_started = true;

            // The messages before the dispatch, shared rather than copied: what the output key
            // must not pick up and the commit does not record as the turn's answers. Constant
            // time however long the history; made only when one of the two will read it (a
            // runner without a session store commits nothing), since holding it through the
            // dispatch costs a reference count, its bytes in the turn's future, and a copy
            // of the records when the turn takes the dispatch's back.
            let before_dispatch = (parts.output_key.is_some() || parts.session_store.is_some())
                .then(|| ctx.messages.share());
            let plan = DispatchPlan {
                input: &parts.dispatch_input,
                output: &parts.dispatch_output,
                executor: parts.executor.as_ref(),
                max_iterations: parts.max_iterations,
            };
            let mut report = in_span!(
                run_dispatch(ctx, plan),
                tracing::debug_span!("adk.dispatch")
            );
            if let Some(error) = report.error.clone() {
                shared.report_error(error);
            }
            // Mostly none: an empty vector's iterator still cost an out-of-line drop.
            if !report.later_errors.is_empty() {
                for error in std::mem::take(&mut report.later_errors) {
                    shared.report_error(error);
                }
            }
            if report.status == DispatchStatus::Nack || ctx.is_aborted() {
                return Some(report);
            }
            // The model's reply, read before `turn_output` runs: an assistant message
            // `turn_output` stores is not what the dispatch answered.
            let reply = self.dispatch_reply(ctx, before_dispatch.as_ref());

            // A dispatch that was aborted gave no answer: `turn_output` still runs, but the
            // turn commits nothing, as a turn that fails or is aborted commits nothing.
            self.finish(
                ctx,
                reply,
                report.abort_reason.is_none(),
                before_dispatch.as_ref(),
            )
            .await;
            Some(report)
        }
        .await;
        self.write_held(ctx).await;

        if let Some((started_at, started)) = began {
            let (ended_at, ended) = shared.now();
            shared.events.emit(Event::TurnEnd {
                turn_id: ctx.turn_id().clone(),
                started_at,
                ended_at,
                duration: ended.duration_since(started),
            });
        }
        dispatch
    }

    /// Runs `turn_output`, then, when it went through and the turn `answered`, saves the output
    /// key from `reply` and commits the turn's state and events. `before_dispatch`: the messages
    /// before the dispatch (`None`: a `turn_input` middleware answered, no dispatch ran; or
    /// nothing reads them: no output key and no session store).
    async fn finish(
        &self,
        ctx: &mut TurnContext,
        reply: Option<String>,
        answered: bool,
        before_dispatch: Option<&Collection<Message>>,
    ) {
        let output = in_span!(
            self.parts.turn_output.run(ctx),
            tracing::debug_span!("adk.pipeline", pipeline = "turn_output")
        );
        if self.pipeline_went_through(ctx, output, "turn_output", false) && answered {
            self.save_output(ctx, reply);
            if let Some(store) = self.store_to_commit(ctx) {
                // Boxed, and only for a runner with a session store: the commit's future
                // (672 bytes) is larger than the rest of `finish`, and inline it would be part
                // of every turn's future, moved with it, store or not.
                Box::pin(self.commit_state(store, ctx, before_dispatch)).await;
            }
        }
    }

    /// The session store a completed turn's state is committed to: `None` when the turn failed
    /// (nothing is committed) or the runner has no store (then a turn that changed state only a
    /// store keeps fails, see [`refuse_state_without_store`]).
    fn store_to_commit(&self, ctx: &TurnContext) -> Option<&SharedSessionStore> {
        if ctx.shared.failed() {
            return None;
        }
        let store = self.parts.session_store.as_ref();
        if store.is_none() {
            refuse_state_without_store(ctx);
        }
        store
    }

    /// Loads the turn's state from the session store, if there is one. A failed load is
    /// reported and the turn goes no further.
    async fn load_state(&self, ctx: &mut TurnContext) -> bool {
        let Some(store) = &self.parts.session_store else {
            return true;
        };
        let storage = ctx.storage_context();
        let key = session_key(storage);
        match contained(store.load_turn(&key, storage.thread_id())).await {
            Ok(loaded) => {
                ctx.state = State::from_loaded(loaded);
                self.report_middleware_records(ctx);
                true
            }
            Err(error) => {
                ctx.shared.report_error(
                    TurnError::new(
                        ErrorCode::StateLoadFailed,
                        format!("the session state of {key} could not be loaded"),
                    )
                    .with_source(error),
                );
                false
            }
        }
    }

    /// Reports the middleware state records the load could not turn into typed state: every
    /// mismatch, and each unknown key once per runner.
    fn report_middleware_records(&self, ctx: &mut TurnContext) {
        let Some(typed) = ctx.state.middleware_states_in_use() else {
            return;
        };
        let (mismatches, unknown) = typed.take_reports();
        let turn_id = ctx.turn_id().clone();
        for mismatch in mismatches {
            ctx.shared.events.emit(Event::MiddlewareStateMismatch {
                turn_id: turn_id.clone(),
                mismatch,
            });
        }
        if unknown.is_empty() {
            return;
        }
        let mut reported = self
            .parts
            .reported_unknown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for record in unknown {
            if reported.insert(record.key.clone()) {
                ctx.shared.events.emit(Event::MiddlewareStateUnknown {
                    turn_id: turn_id.clone(),
                    record,
                });
            }
        }
    }

    /// The text of the last assistant message the dispatch added, when an output key is
    /// configured: read once the dispatch ended and before `turn_output`, which may store
    /// messages of its own.
    fn dispatch_reply(
        &self,
        ctx: &TurnContext,
        before_dispatch: Option<&Collection<Message>>,
    ) -> Option<String> {
        self.parts.output_key?;
        let before_dispatch = before_dispatch?;
        ctx.messages
            .iter()
            .rev()
            .filter(|message| !before_dispatch.contains(message.id()))
            .find(|message| message.role() == Role::Assistant)
            .and_then(|message| message.content().map(|content| content.render()))
    }

    /// Writes the output key: the dispatch's reply, as [`Self::dispatch_reply`] read it.
    fn save_output(&self, ctx: &mut TurnContext, reply: Option<String>) {
        let (Some(key), Some(text)) = (self.parts.output_key, reply) else {
            return;
        };
        if let Err(error) = ctx.state.set(key, text) {
            tracing::warn!(%error, "the output key could not be written");
        }
    }

    /// Commits the completed turn's state delta to `store` ([`Self::store_to_commit`]), once,
    /// atomically. A refusal is reported (an error event and the outcome); nothing of the delta
    /// was stored.
    async fn commit_state(
        &self,
        store: &SharedSessionStore,
        ctx: &TurnContext,
        before_dispatch: Option<&Collection<Message>>,
    ) {
        let storage = ctx.storage_context();
        let mut commit = ctx.state.to_commit(storage.thread_id());
        let writes = ctx.state.middleware_states().writes(storage.thread_id());
        match writes {
            Ok(writes) => commit.middleware.extend(writes),
            Err(error) => {
                ctx.shared.report_error(
                    TurnError::new(
                        ErrorCode::MiddlewareStateSaveFailed,
                        "the turn's state was not committed",
                    )
                    .with_source(error),
                );
                return;
            }
        }
        // Committed even when it writes nothing (a turn that wrote only `temp:` keys, or no
        // state): a session exists once a turn ran in it, and its update time says when.
        let key = session_key(storage);
        let answers: Vec<&Message> = match before_dispatch {
            Some(before) => ctx
                .messages
                .iter()
                .filter(|message| {
                    message.role() == Role::Assistant && !before.contains(message.id())
                })
                .collect(),
            None => ctx.completed_with().into_iter().collect(),
        };
        commit.events = events::turn_events(ctx, &answers, key.app.as_str(), &commit);
        commit.held = crate::storage::TurnWrites::of(storage.held_writes().cloned());
        if let Err(error) = contained(store.commit_turn(&key, commit)).await {
            // A stale refusal names its keys in the message itself, not only in the source.
            let (code, message) = match error.downcast_ref::<SessionStoreError>() {
                Some(SessionStoreError::Stale { keys }) => (
                    ErrorCode::StaleState,
                    format!(
                        "the turn's state was not committed to {key}: another turn changed {} \
                         since this turn loaded it (`refuse` keys); run the turn again on fresh \
                         state (`TurnRunner::run_retrying_stale`)",
                        keys.join(", ")
                    ),
                ),
                _ => (
                    ErrorCode::StateCommitFailed,
                    format!("the turn's state was not committed to {key}"),
                ),
            };
            ctx.shared
                .report_error(TurnError::new(code, message).with_source(error));
        }
    }

    /// Closes the turn's hold (`storage::held`) and writes through the adapter, in order, what
    /// no commit took: the turn failed, was aborted or its commit was refused. A failed write
    /// is reported; nothing is dropped silently.
    async fn write_held(&self, ctx: &TurnContext) {
        let Some(held) = ctx.storage_context().held_writes() else {
            return;
        };
        for write in held.close() {
            let stored = self
                .parts
                .turn_env
                .storage
                .store_message(&write.ctx, write.message);
            if let Err(error) = contained(stored).await {
                ctx.shared.report_error(
                    TurnError::new(
                        ErrorCode::StorageFailed,
                        "storing an assistant message held for the turn's commit failed",
                    )
                    .with_source(error),
                );
            }
        }
    }

    /// Reports a short-circuit nobody explained (a turn `answered` with a reply explains it), and
    /// says whether the turn may go on.
    fn pipeline_went_through(
        &self,
        ctx: &TurnContext,
        run: PipelineRun,
        pipeline: &'static str,
        answered: bool,
    ) -> bool {
        if answered && run.outcome == Downstream::ShortCircuited {
            return !ctx.is_aborted();
        }
        if run.outcome == Downstream::ShortCircuited && !ctx.is_aborted() {
            ctx.shared
                .report_error(short_circuited(pipeline, run.short_circuited_by));
        }
        run.outcome == Downstream::Completed && !ctx.is_aborted()
    }
}

/// Fails a completed turn of a runner without a session store that changed state only a store
/// keeps (keys outside `temp:`, persistent middleware state): without the refusal the change
/// would vanish when the turn ends, and every turn would silently start from nothing again.
fn refuse_state_without_store(ctx: &TurnContext) {
    let kept = ctx.state.kept_beyond_turn();
    if kept.is_empty() {
        return;
    }
    ctx.shared.report_error(TurnError::new(
        ErrorCode::NoSessionStore,
        format!(
            "the turn wrote {} but the runner has no session store, so it would be lost when \
             the turn ends: build the runner with `.session_store(..)` (an \
             `adk::state::InMemorySessionStore`, a SQLite or PostgreSQL store), or keep what \
             lives one turn in `temp:` keys and transient middleware state",
            kept.join(", ")
        ),
    ));
}

/// Awaits a storage or session-store callback the runner calls itself (the user message's
/// store, `load_turn`, `commit_turn`). A panic in it is caught and returned as a
/// [`Panicked`](crate::pipeline::Panicked) error, reported like an executor's panic: the turn
/// fails, `run` returns its outcome.
async fn contained<T, E>(
    future: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, crate::pipeline::BoxError>
where
    E: Into<crate::pipeline::BoxError>,
{
    use futures_util::FutureExt;
    match std::panic::AssertUnwindSafe(future).catch_unwind().await {
        Ok(result) => result.map_err(Into::into),
        Err(panic) => Err(Box::new(crate::pipeline::Panicked {
            message: crate::pipeline::panic_message(panic.as_ref()),
        })),
    }
}

fn session_key(storage: &crate::storage::StorageContext) -> SessionKey {
    SessionKey {
        app: storage.app_name().clone(),
        user: storage.user_id().clone(),
        session: storage.session_id().clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::DispatchContext;
    use crate::dispatch::executor_fn;
    use crate::pipeline::BoxError;
    use crate::storage::NoopStorage;

    fn acking() -> TurnRunner {
        TurnRunner::builder()
            .storage(NoopStorage::new())
            .executor(executor_fn(|ctx: &mut DispatchContext| {
                Box::pin(async move {
                    ctx.ack()?;
                    Ok::<(), BoxError>(())
                })
            }))
            .build()
    }

    #[tokio::test]
    async fn every_turn_of_a_runner_shares_the_runner_s_turn_env() {
        let runner = acking();
        let first = runner
            .run(RawTurnContext::new("c", "p"))
            .await
            .expect("a valid turn");
        let second = runner
            .run(RawTurnContext::new("d", "p"))
            .await
            .expect("a valid turn");
        assert!(Arc::ptr_eq(
            &first.context.shared.env,
            &runner.parts.turn_env
        ));
        assert!(Arc::ptr_eq(
            &second.context.shared.env,
            &runner.parts.turn_env
        ));
    }

    #[tokio::test]
    async fn a_walked_turn_leaves_its_shared_state_held_by_its_context_alone() {
        // The walk registers a waker holding the turn's shared state on the turn's token, when
        // it was made (the token lives in that state): it must be forgotten when the walk ends,
        // or the two would keep each other alive. A turn whose token was not made registers
        // nothing.
        let runner = acking();
        let caller = tokio_util::sync::CancellationToken::new();
        for (raw, token_made) in [
            (RawTurnContext::new("c", "p"), false),
            (RawTurnContext::new("c", "p").cancellation(caller), true),
        ] {
            let outcome = runner.run(raw).await.expect("a valid turn");
            let token = outcome.context.storage_context().lazy_token().if_made();
            assert_eq!(token.is_some(), token_made);
            assert_eq!(Arc::strong_count(&outcome.context.shared), 1);
        }
    }
}
