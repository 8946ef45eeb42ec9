//! The turn context and the state a turn shares with its dispatch.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::{Instant, SystemTime};

use tokio_util::sync::WaitForCancellationFuture;

use crate::Registry;
use crate::events::{ErrorCode, EventSink, TurnError};
use crate::ids::TurnId;
use crate::pipeline::{BoxError, MiddlewareFailure, PipelineContext, Stack, ToolExecution};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tokenizable, ToolCall, ToolRegistry,
};
use crate::state::State;
use crate::storage::{SharedStorage, StorageContext};

use super::abort::{AbortState, Watched};
use super::{AbortReason, Aborted, Collection, InvalidTurnContext, RawTurnContext};
use crate::lean::Lean;

/// What every turn of one runner works with, the same for all of them: made once, when the
/// runner is built, and shared by its turns (one reference count a turn instead of one for
/// each part).
#[derive(Debug)]
pub(crate) struct TurnEnv {
    pub(crate) storage: SharedStorage,
    pub(crate) events: EventSink,
    /// The `tool_execution` pipeline, its handler step last; `None` when no tool middleware
    /// is registered, so a call runs its handler directly.
    pub(crate) tool_pipeline: Option<Arc<Stack<ToolExecution>>>,
}

/// What one turn shares between its context, its dispatch and the runner. The runner's parts
/// every turn works with ([`TurnEnv`]: `storage`, `events`, `tool_pipeline`) are read through
/// it as if they were its own fields.
#[derive(Debug)]
pub(crate) struct TurnShared {
    pub(crate) env: Arc<TurnEnv>,
    pub(crate) storage_context: StorageContext,
    pub(crate) abort: AbortState,
    /// The first error reported: set once, read without a lock (the runner asks twice a turn).
    first_error: OnceLock<TurnError>,
    /// The wall clock and the monotonic clock read together once, when the turn is first
    /// asked the time (the runner asks as it starts walking a turn somebody observes): every
    /// later timestamp is derived from one monotonic read instead of reading both clocks. A
    /// turn nobody observes and nothing times reads neither.
    clock_origin: OnceLock<(SystemTime, Instant)>,
}

impl std::ops::Deref for TurnShared {
    type Target = TurnEnv;

    #[inline]
    fn deref(&self) -> &TurnEnv {
        &self.env
    }
}

/// The waker registered on the turn's token while the runner walks the turn.
impl std::task::Wake for TurnShared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.abort.mark_fired();
    }
}

impl TurnShared {
    /// Whether the turn was aborted or its token cancelled.
    #[inline]
    pub(crate) fn is_aborted(&self) -> bool {
        self.abort
            .is_aborted_watched(self.storage_context.lazy_token())
    }

    pub(crate) fn turn_id(&self) -> &TurnId {
        self.storage_context.turn_id()
    }

    /// Emits an error event and remembers the first one, which becomes the turn's outcome
    /// (and so is logged at debug level only: the caller reports it).
    pub(crate) fn report_error(&self, error: TurnError) {
        let mut is_outcome = false;
        self.first_error.get_or_init(|| {
            is_outcome = true;
            error.clone()
        });
        self.events
            .emit_reported_error(self.turn_id().clone(), error, is_outcome);
    }

    /// Now, as a wall-clock time and a monotonic instant, from a single clock read.
    pub(crate) fn now(&self) -> (SystemTime, Instant) {
        let (origin_time, origin_instant) = self.began();
        let instant = Instant::now();
        (
            origin_time + instant.duration_since(origin_instant),
            instant,
        )
    }

    /// When the turn began: the first time it was asked.
    pub(crate) fn began(&self) -> (SystemTime, Instant) {
        *self
            .clock_origin
            .get_or_init(|| (SystemTime::now(), Instant::now()))
    }

    pub(crate) fn first_error(&self) -> Option<TurnError> {
        self.first_error.get().cloned()
    }

    /// Whether an error was reported: [`first_error`](Self::first_error) without its copy.
    pub(crate) fn failed(&self) -> bool {
        self.first_error.get().is_some()
    }
}

/// Registers a waker on the turn's token through `registration` (its `cancelled()` future,
/// pinned where it stays until the turn's walk ends), so that cancelling the token raises the
/// turn state's fired flag, and marks the turn's state watched until the returned guard drops.
/// Declare the guard after the registration, so it is dropped first. `None` (the token was not
/// made, see [`LazyToken`](crate::storage::LazyToken)): nothing can cancel the token before
/// something makes it, and the abort check reads whether it was made, so nothing is registered
/// and the state is not marked (a waker for its making and the mark cost about ten locked
/// instructions a turn).
pub(crate) fn watch_turn<'a>(
    shared: &'a Arc<TurnShared>,
    registration: Pin<&mut Option<WaitForCancellationFuture<'_>>>,
) -> Watched<'a> {
    let Some(registration) = registration.as_pin_mut() else {
        return Watched::unmarked();
    };
    let waker = Waker::from(Arc::clone(shared));
    if registration
        .poll(&mut std::task::Context::from_waker(&waker))
        .is_ready()
    {
        shared.abort.mark_fired();
    }
    shared.abort.watched()
}

/// What turn-scoped middleware (`turn_input`, `turn_output`) receive.
///
/// The five collections start empty: the runner loads nothing by itself. A `turn_input`
/// middleware that wants history calls `fetch_messages` and adds what it wants to `messages`.
/// `store_*`, `mutate_*` and `delete_*` persist through the storage adapter first and, when
/// that succeeded, apply the change to the collection (`mutate` keeps the record's position).
pub struct TurnContext {
    /// The turn's scratchpad; fresh each turn, seeded from `RawTurnContext::stash`.
    pub stash: Registry,
    /// Standing instructions, in order.
    pub standing_instructions: Vec<StandingInstruction>,
    /// Messages the turn works with.
    pub messages: Collection<Message>,
    /// Memories the turn works with.
    pub memories: Collection<Memory>,
    /// Retrieved knowledge the turn works with.
    pub retrievables: Collection<Retrievable>,
    /// Reasoning traces the turn works with.
    pub thoughts: Collection<Thought>,
    /// Tool calls the turn works with: loaded history and this turn's calls alike;
    /// [`tool_calls_this_turn`](Self::tool_calls_this_turn) keeps only the calls made in this
    /// turn.
    pub tool_calls: Collection<ToolCall>,
    pub(crate) made_this_turn: super::write_queue::MadeThisTurn,
    /// The tools the model may call; fresh each turn from the runner's tools.
    pub tools: ToolRegistry,
    system_prompt: Tokenizable,
    pub(crate) state: State,
    user_message: Option<Message>,
    /// The user message is in storage already (a retry of a refused run): admitted, not stored.
    user_message_stored: bool,
    /// The caller's state delta, applied by [`Self::apply_caller_delta`]. [`Lean`]: nearly
    /// always empty, and the vector's drop was an out-of-line call.
    caller_delta: Lean<Vec<(String, serde_json::Value)>>,
    /// The reply a `turn_input` middleware completed the turn with.
    /// Boxed, as `resume` is: both are rare, and inline they would make every turn's context
    /// (and the turn's future that holds it) larger.
    pub(super) completed_with: Option<Box<Message>>,
    /// Set by the runner when the dispatch begins: too late to complete with a reply.
    pub(crate) dispatch_started: bool,
    /// Where a resumed turn's dispatch picks up (`TurnRunner::resume`); `None` for a new turn.
    pub(crate) resume: Option<Box<ResumePoint>>,
    pub(crate) shared: Arc<TurnShared>,
}

/// Where the dispatch of a resumed turn picks up: the iteration after the last answer the
/// interrupted turn stored, and that answer's calls that have no result yet, which the dispatch
/// settles (runs under the ledger's rules) before it calls the model.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResumePoint {
    pub(crate) first_iteration: u32,
    pub(crate) unanswered: Vec<ToolCall>,
    /// The interrupted turn's answers as stored: added to the turn after `turn_input`.
    pub(crate) messages: Vec<Message>,
    pub(crate) thoughts: Vec<Thought>,
    pub(crate) tool_calls: Vec<ToolCall>,
}

impl std::fmt::Debug for TurnContext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TurnContext")
            .field("turn_id", self.turn_id())
            .field("system_prompt", &self.system_prompt)
            .field("stash", &self.stash)
            .field("messages", &self.messages.len())
            .field("memories", &self.memories.len())
            .field("retrievables", &self.retrievables.len())
            .field("thoughts", &self.thoughts.len())
            .field("tool_calls", &self.tool_calls.len())
            .field("aborted", &self.is_aborted())
            .finish_non_exhaustive()
    }
}

impl TurnContext {
    /// Builds the context of a turn from the caller's raw input, validating it.
    ///
    /// The runner does this for every `run`; call it yourself to test middleware without a
    /// runner (its events go nowhere but `tracing`).
    ///
    /// ```
    /// use adk::context::{RawTurnContext, TurnContext};
    /// use adk::primitives::ToolRegistry;
    /// use adk::storage::{NoopStorage, SharedStorage};
    ///
    /// let raw = RawTurnContext::new("conversation-1", "You are terse.");
    /// let ctx = TurnContext::new(raw, SharedStorage::new(NoopStorage::new()), ToolRegistry::new())
    ///     .unwrap();
    /// assert!(ctx.messages.is_empty());
    /// ```
    pub fn new(
        raw: RawTurnContext,
        storage: SharedStorage,
        tools: ToolRegistry,
    ) -> Result<Self, InvalidTurnContext> {
        let env = Arc::new(TurnEnv {
            storage,
            events: EventSink::default(),
            tool_pipeline: None,
        });
        let mut ctx = Self::with_events(raw, env, tools)?;
        ctx.apply_caller_delta();
        Ok(ctx)
    }

    // Inlined into the runner's turn: the raw input is then read where it lies in the turn's
    // future instead of being copied into an argument first.
    #[inline]
    pub(crate) fn with_events(
        raw: RawTurnContext,
        env: Arc<TurnEnv>,
        tools: ToolRegistry,
    ) -> Result<Self, InvalidTurnContext> {
        if raw.conversation_id.is_empty() {
            return Err(InvalidTurnContext::EmptyConversationId);
        }
        for (which, empty) in [
            ("app name", raw.app_name.is_empty()),
            ("user id", raw.user_id.is_empty()),
            ("thread id", raw.thread_id.is_empty()),
        ] {
            if empty {
                return Err(InvalidTurnContext::EmptyId { which });
            }
        }
        raw.thread_id.check()?;
        if raw.system_prompt.is_empty_static() {
            return Err(InvalidTurnContext::EmptySystemPrompt);
        }
        // The rarely given parts, unboxed (nothing to unbox for most turns).
        let super::raw::RawExtras {
            standing_instructions,
            stash,
            identity,
            state_delta,
            resumed_turn_id,
        } = raw.extras.map(|extras| *extras).unwrap_or_default();
        // Checked here, so applying it later cannot fail (no delta, nothing to check: most
        // turns bring none, and a probe state costs a few hundred instructions to make and drop).
        if !state_delta.is_empty() {
            let mut probe = State::new();
            probe.update(state_delta.iter().cloned())?;
        }
        let text_needs_id = matches!(raw.user_message, Some(super::raw::HeldUserMessage::Text(_)));
        let (message_id, turn_id) = match (text_needs_id, resumed_turn_id) {
            (true, None) => {
                let since = crate::ids::since_epoch(SystemTime::now());
                let (message_id, turn_id) = crate::ids::time_ordered_id_pair(since);
                (Some((message_id, since)), turn_id)
            }
            (true, Some(turn_id)) => (None, turn_id),
            (false, None) => (None, TurnId::new()),
            (false, Some(turn_id)) => (None, turn_id),
        };
        let user_message = raw
            .user_message
            .map(|held| held.into_message_with(message_id))
            .transpose()?;
        let stash = match stash {
            Some(seed) => Registry::from_nested(seed)?,
            None => Registry::new(),
        };
        // The turn's token is a child of the caller's, made now; without the caller's it is
        // made when something asks for it (`LazyToken`).
        let token = raw
            .cancellation
            .as_ref()
            .map(tokio_util::sync::CancellationToken::child_token);
        let abort = AbortState::for_turn(token.is_some());
        let storage_context = StorageContext::for_turn(
            turn_id,
            (
                raw.conversation_id,
                raw.app_name,
                raw.user_id,
                raw.thread_id,
            ),
            identity,
            token,
        );
        Ok(Self {
            stash,
            standing_instructions,
            messages: Collection::new(),
            memories: Collection::new(),
            retrievables: Collection::new(),
            thoughts: Collection::new(),
            tool_calls: Collection::new(),
            made_this_turn: super::write_queue::MadeThisTurn::default(),
            tools,
            system_prompt: raw.system_prompt,
            state: State::new(),
            user_message,
            user_message_stored: raw.user_message_stored,
            caller_delta: Lean::new(state_delta),
            completed_with: None,
            dispatch_started: false,
            resume: None,
            shared: Arc::new(TurnShared {
                env,
                storage_context,
                abort,
                first_error: OnceLock::new(),
                clock_origin: OnceLock::new(),
            }),
        })
    }

    /// The turn's id, fresh for every run. Both contexts name their ids the same way:
    /// `turn_id()` here and on [`DispatchContext`](crate::DispatchContext), plus `dispatch_id()`
    /// there.
    pub fn turn_id(&self) -> &TurnId {
        self.shared.turn_id()
    }

    /// The turn's id.
    #[deprecated(
        since = "0.1.0",
        note = "renamed `turn_id()`, the name both contexts use"
    )]
    pub fn id(&self) -> &TurnId {
        self.turn_id()
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &Tokenizable {
        &self.system_prompt
    }

    /// What the user said this turn ([`RawTurnContext::user_message`]), as stored before
    /// `turn_input`; `None` when the caller gave none.
    pub fn user_message(&self) -> Option<&Message> {
        self.user_message.as_ref()
    }

    /// Stores the user message before `turn_input`; the runner reports a failure.
    pub(crate) async fn store_user_message(&self) -> Result<(), crate::storage::StorageError> {
        match &self.user_message {
            Some(_) if self.user_message_stored => Ok(()),
            Some(message) => {
                let shared = &self.shared;
                shared
                    .storage
                    .store_message(&shared.storage_context, message.clone())
                    .await
            }
            None => Ok(()),
        }
    }

    /// Writes the caller's state delta ([`RawTurnContext::state_delta`]) into the turn's state,
    /// once: the runner calls it right after loading the state.
    pub(crate) fn apply_caller_delta(&mut self) {
        let delta = std::mem::take(&mut *self.caller_delta);
        if delta.is_empty() {
            return;
        }
        if let Err(error) = self.state.update(delta) {
            // The keys were checked when the context was built.
            tracing::warn!(%error, "the caller's state delta was not applied");
        }
    }

    /// Puts the user message last in `messages` before the dispatch, unless `messages` already
    /// holds it (a history loader fetched it with the conversation).
    pub(crate) fn admit_user_message(&mut self) {
        if let Some(message) = &self.user_message
            && !self.messages.contains(message.id())
        {
            self.messages.add(message.clone());
        }
    }

    /// Adds the answers of the interrupted turn this one resumes to the turn's collections
    /// (those a history loader did not already put there); its calls count as made this turn.
    pub(crate) fn admit_resumed(&mut self) {
        let Some(point) = self.resume.as_mut() else {
            return;
        };
        for message in std::mem::take(&mut point.messages) {
            if !self.messages.contains(message.id()) {
                self.messages.add(message);
            }
        }
        for thought in std::mem::take(&mut point.thoughts) {
            if !self.thoughts.contains(thought.id()) {
                self.thoughts.add(thought);
            }
        }
        for call in std::mem::take(&mut point.tool_calls) {
            self.made_this_turn.insert(call.id().to_owned());
            if self.tool_calls.contains(call.id()) {
                self.tool_calls.replace(call);
            } else {
                self.tool_calls.add(call);
            }
        }
    }

    /// What storage callbacks receive for this turn: app, user, conversation (session), thread,
    /// turn, identity, cancellation.
    pub fn storage_context(&self) -> &StorageContext {
        &self.shared.storage_context
    }

    /// The turn's session state: the merged view of session, `user:`, `app:` and `temp:` keys,
    /// loaded once when the turn started (empty without a session store) and overlaid with the
    /// turn's writes. See [`State`] and `docs/state.md`.
    ///
    /// ```
    /// # let ctx = adk::TurnContext::new(
    /// #     adk::context::RawTurnContext::new("c", "p"),
    /// #     adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()),
    /// #     Default::default(),
    /// # ).unwrap();
    /// assert!(!ctx.state().has("user:theme"));
    /// ```
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The turn's session state, to write: writes are visible at once and recorded in the delta
    /// the runner commits when the turn completes.
    ///
    /// ```
    /// # let mut ctx = adk::TurnContext::new(
    /// #     adk::context::RawTurnContext::new("c", "p"),
    /// #     adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()),
    /// #     Default::default(),
    /// # ).unwrap();
    /// ctx.state_mut().set_value("user:theme", serde_json::json!("dark"))?;
    /// assert!(ctx.state().has("user:theme"));
    /// # Ok::<(), adk::state::StateError>(())
    /// ```
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.state
    }

    /// The storage adapter, for calls the context has no method for.
    pub fn storage(&self) -> &SharedStorage {
        &self.shared.storage
    }

    /// Aborts the turn: the remaining middleware bodies are skipped, the dispatch (if running)
    /// ends as aborted, no error event is emitted and `TurnEnd` still fires. The first reason
    /// given wins.
    pub fn abort(&self, reason: impl Into<String>) {
        self.shared.abort.abort_turn(
            AbortReason::Requested(reason.into()),
            self.shared.storage_context.lazy_token(),
        );
    }

    /// Whether the turn was aborted, by `abort` or by the caller's cancellation token.
    #[inline]
    pub fn is_aborted(&self) -> bool {
        self.shared.is_aborted()
    }

    /// Why the turn was aborted, once it was.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        self.shared
            .abort
            .turn_reason(self.shared.storage_context.lazy_token())
    }

    /// The turn's cancellation token: cancelled when the turn is aborted. Hand it to work that
    /// should stop with the turn.
    pub fn cancellation(&self) -> &tokio_util::sync::CancellationToken {
        self.shared.storage_context.cancellation()
    }
}

super::storage_methods::storage_methods!(TurnContext);
super::middleware_state_methods::middleware_state_methods!(TurnContext);

impl TurnContext {
    /// Opens a gate and waits until it is answered, times out, or the turn is aborted; see
    /// [`crate::gate`]. Emits `TurnGateOpen` (with the handle to answer it) and
    /// `TurnGateClosed`.
    pub async fn wait_for<T: crate::gate::GateValue>(
        &self,
        request: crate::gate::GateRequest,
    ) -> Result<T, crate::gate::GateError> {
        super::gate::wait_for(
            request,
            self.shared.turn_id(),
            &self.shared.events,
            self.shared.storage_context.cancellation(),
        )
        .await
    }
}

impl TurnContext {
    /// The tool calls made in this turn, in collection order, without the calls loaded from
    /// history.
    ///
    /// A call counts as made in this turn when this turn stored it (`store_tool_call`, or as a
    /// replacement in `replace_tool_call_group`), directly or through its dispatch: that is how
    /// executors record the model's calls. History middleware
    /// ([`LoadHistory`](crate::history::LoadHistory)) adds loaded calls to
    /// [`tool_calls`](Self::tool_calls) directly, so they are left out. A call stored and then
    /// deleted is gone from both.
    ///
    /// ```
    /// use adk::context::{RawTurnContext, TurnContext};
    /// use adk::primitives::{ToolCall, ToolRegistry};
    /// use adk::storage::{NoopStorage, SharedStorage};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let raw = RawTurnContext::new("conversation-1", "You are terse.");
    /// let mut ctx = TurnContext::new(raw, SharedStorage::new(NoopStorage::new()), ToolRegistry::new())?;
    /// // Loaded from history: added to the collection directly.
    /// ctx.tool_calls.add(ToolCall::new("old", "weather", serde_json::json!({"city": "Oslo"}))?);
    /// // Made now: stored through the context.
    /// ctx.store_tool_call(ToolCall::new("new", "weather", serde_json::json!({"city": "Bergen"}))?)
    ///     .await?;
    ///
    /// let all: Vec<&str> = ctx.tool_calls.iter().map(|call| call.id()).collect();
    /// let this_turn: Vec<&str> = ctx.tool_calls_this_turn().map(|call| call.id()).collect();
    /// assert_eq!(all, ["old", "new"]);
    /// assert_eq!(this_turn, ["new"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tool_calls_this_turn(&self) -> impl DoubleEndedIterator<Item = &ToolCall> + '_ {
        self.tool_calls
            .iter()
            .filter(|call| self.made_this_turn.contains(call.id()))
    }

    fn record_change(&mut self, delta: super::write_queue::Delta) {
        delta.apply(self.collections_mut());
    }

    pub(crate) fn collections_mut(&mut self) -> super::write_queue::CollectionsMut<'_> {
        super::write_queue::CollectionsMut {
            standing_instructions: &mut self.standing_instructions,
            messages: &mut self.messages,
            memories: &mut self.memories,
            retrievables: &mut self.retrievables,
            thoughts: &mut self.thoughts,
            tool_calls: &mut self.tool_calls,
            made_this_turn: &mut self.made_this_turn,
        }
    }
}

impl PipelineContext for TurnContext {
    #[inline]
    fn is_aborted(&self) -> bool {
        TurnContext::is_aborted(self)
    }

    fn report_failure(&mut self, failure: MiddlewareFailure) {
        let code = super::gate_code(&failure).unwrap_or(match failure.pipeline {
            "turn_output" => ErrorCode::OutputPipelineError,
            _ => ErrorCode::InputPipelineError,
        });
        self.shared.report_error(failure.into_turn_error(code));
    }

    fn absorb_abort(&mut self, error: BoxError) -> Result<(), BoxError> {
        // An error the abort caused (a gate it settled, a storage call it stopped) is part of
        // the abort, not a failure of its own; any other error returned after the abort is
        // reported, or an abort downstream would hide a post-step's failure.
        if self.is_aborted() {
            if super::caused_by_abort(error.as_ref()) {
                return Ok(());
            }
            return Err(error);
        }
        let aborted = error.downcast::<Aborted>()?;
        self.abort(aborted.reason().to_owned());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::NoopStorage;

    /// The UUIDv7's millisecond of `id`.
    fn millis_of(id: &str) -> i64 {
        let uuid = uuid::Uuid::parse_str(id).expect("a minted id is a UUID");
        let (seconds, nanos) = uuid.get_timestamp().expect("a UUIDv7").to_unix();
        i64::try_from(seconds).expect("after 1970") * 1000 + i64::from(nanos / 1_000_000)
    }

    #[test]
    fn a_text_user_message_is_dated_by_the_clock_reading_its_id_and_the_turn_s_come_from() {
        let ctx = TurnContext::new(
            RawTurnContext::new("c", "p").user_message("hi"),
            SharedStorage::new(NoopStorage::new()),
            crate::primitives::ToolRegistry::new(),
        )
        .expect("a valid turn");
        let message = ctx.user_message().expect("text makes a user message");
        let (message_millis, turn_millis) =
            (millis_of(message.id()), millis_of(ctx.turn_id().as_str()));
        assert!(
            message.id() < ctx.turn_id().as_str(),
            "the message's id is minted just before the turn's"
        );
        assert!(turn_millis - message_millis <= 1, "minted together");
        // The id's millisecond is the clock's, or a later one when the counter carried into it.
        let created = message.created_at().as_millisecond();
        assert!(
            (0..=1).contains(&(message_millis - created)),
            "id {message_millis}, created {created}"
        );
        assert_eq!(message.created_at(), message.updated_at());
    }
}
