//! The dispatch context: what the executor and dispatch middleware see, and its signals.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use crate::Registry;
use crate::events::{ErrorCode, TurnError};
use crate::ids::TurnId;
use crate::pipeline::{BoxError, MiddlewareFailure, PipelineContext};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tokenizable, ToolCall, ToolRegistry,
};
use crate::state::{State, template};
use crate::storage::StorageContext;

use super::abort::AbortState;
use super::streams::Streams;
use super::turn::TurnShared;
use super::write_queue::{Adopted, CollectionKind, CollectionsMut, Delta};
use super::{AbortReason, Aborted, Collection, TurnContext};
use crate::lean::Lean;

/// How the dispatch has been signalled so far. A nack's error is boxed, being rare: inline it
/// made the signal (and every dispatch context) 32 bytes larger.
#[derive(Clone, Debug)]
pub(crate) enum Signal {
    Pending,
    Acked,
    Nacked(Box<TurnError>),
}

type AckHandler = Box<dyn FnOnce(&mut DispatchContext) + Send>;

#[derive(Default)]
struct AckHandlers {
    next_id: u64,
    handlers: Vec<(u64, AckHandler)>,
}

/// Unsubscribes an `on_ack` handler. Dropping it keeps the handler registered.
#[derive(Debug, Clone)]
pub struct AckSubscription {
    id: u64,
    handlers: Weak<Mutex<AckHandlers>>,
}

impl AckSubscription {
    /// Removes the handler; it will not run. Returns false when it had already run or been
    /// removed.
    pub fn unsubscribe(self) -> bool {
        let Some(handlers) = self.handlers.upgrade() else {
            return false;
        };
        let mut handlers = handlers.lock().unwrap_or_else(PoisonError::into_inner);
        let before = handlers.handlers.len();
        handlers.handlers.retain(|(id, _)| *id != self.id);
        handlers.handlers.len() != before
    }
}

/// `{turn_id}/dispatch`, allocated once: composed on the stack when it fits (a minted turn id
/// always does), rather than formatted into a `String` and copied into the `Arc`.
fn dispatch_id_of(turn_id: &str) -> Arc<str> {
    const SUFFIX: &[u8] = b"/dispatch";
    let mut buffer = [0_u8; 64];
    let length = turn_id.len() + SUFFIX.len();
    if let Some(target) = buffer.get_mut(..length) {
        let (head, tail) = target.split_at_mut(turn_id.len());
        head.copy_from_slice(turn_id.as_bytes());
        tail.copy_from_slice(SUFFIX);
        if let Ok(id) = std::str::from_utf8(target) {
            return Arc::from(id);
        }
    }
    Arc::from(format!("{turn_id}/dispatch"))
}

/// What the executor and the dispatch-scoped middleware (`dispatch_input`, `dispatch_output`)
/// receive.
///
/// It starts as a copy of the turn: its own stash (a deep copy of the turn's, nothing synced
/// back), the turn's collections (shared with the turn, not copied: changes made here are this
/// context's own) and tools. Writes (`store_*`, `mutate_*`, `delete_*`) persist
/// through the adapter, change this context's collections at once, and are queued for the turn:
/// the queue is applied to the turn's collections when an iteration completes or the dispatch
/// is acknowledged, and discarded on nack, abort or error.
pub struct DispatchContext {
    /// The dispatch's scratchpad: seeded from the turn's stash, lives across iterations.
    pub stash: Registry,
    /// Standing instructions, in order.
    pub standing_instructions: Vec<StandingInstruction>,
    /// Messages the model sees.
    pub messages: Collection<Message>,
    /// Memories the model sees.
    pub memories: Collection<Memory>,
    /// Retrieved knowledge the model sees.
    pub retrievables: Collection<Retrievable>,
    /// Reasoning traces.
    pub thoughts: Collection<Thought>,
    /// Tool calls: the turn's (loaded history included) and this dispatch's;
    /// [`tool_calls_this_turn`](Self::tool_calls_this_turn) keeps only the calls made in this
    /// turn.
    pub tool_calls: Collection<ToolCall>,
    made_this_turn: super::write_queue::MadeThisTurn,
    /// The tools the model may call in this dispatch (a copy: changes do not reach the turn).
    pub tools: ToolRegistry,
    system_prompt: Tokenizable,
    pub(crate) state: State,
    /// Tool handlers' state writes, not yet taken into `state` (see `tool_state`); made when
    /// the first tool call is prepared: a dispatch without tool calls has nothing to take in.
    tool_state: OnceLock<super::tool_state::Inbox>,
    /// `{turn_id}/dispatch`, made on first use: events and executors ask for it, a mocked
    /// turn with nobody observing never does.
    id: OnceLock<Arc<str>>,
    pub(crate) iteration: u32,
    pub(crate) signal: Signal,
    /// Made by the first `on_ack`: most dispatches register no handler.
    ack_handlers: Option<Arc<Mutex<AckHandlers>>>,
    pub(crate) queue: super::write_queue::Queue,
    /// The failure that ended the dispatch's pipeline walk; boxed, being rare.
    pub(crate) pipeline_failure: Option<Box<TurnError>>,
    // Failures after the first in one pipeline walk (from the post-steps of upstream
    // middleware): reported as events after the one that ended the dispatch.
    pub(crate) later_failures: Lean<Vec<TurnError>>,
    abort: AbortState,
    pub(crate) streams: Streams,
    /// What the executor reported with `report_generation_stats` this iteration.
    pub(crate) generation_stats: Mutex<Lean<Vec<crate::events::GenerationStats>>>,
    pub(crate) shared: Arc<TurnShared>,
}

impl std::fmt::Debug for DispatchContext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DispatchContext")
            .field("id", &self.id.get())
            .field("turn_id", self.turn_id())
            .field("iteration", &self.iteration)
            .field("signal", &self.signal)
            .field("stash", &self.stash)
            .field("messages", &self.messages.len())
            .field("tool_calls", &self.tool_calls.len())
            .field("queued_writes", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl DispatchContext {
    /// Starts a dispatch of `turn`: copies its stash and tools, and shares its collections (the
    /// dispatch reads the turn's records without copying them; its changes stay its own).
    pub(crate) fn seeded_from(turn: &mut TurnContext) -> Self {
        Self {
            stash: turn.stash.clone(),
            // An empty list is made, not cloned: most turns have none, and a clone of an empty
            // vector is still an out-of-line call.
            standing_instructions: if turn.standing_instructions.is_empty() {
                Vec::new()
            } else {
                turn.standing_instructions.clone()
            },
            messages: turn.messages.share(),
            memories: turn.memories.share(),
            retrievables: turn.retrievables.share(),
            thoughts: turn.thoughts.share(),
            tool_calls: turn.tool_calls.share(),
            made_this_turn: turn.made_this_turn.clone(),
            tools: turn.tools.clone(),
            system_prompt: turn.system_prompt().clone(),
            state: turn.state.with_journal(),
            tool_state: OnceLock::new(),
            // A turn has exactly one dispatch, so the turn's id names it uniquely.
            id: OnceLock::new(),
            iteration: 0,
            signal: Signal::Pending,
            ack_handlers: None,
            queue: super::write_queue::Queue::default(),
            pipeline_failure: None,
            later_failures: Lean::default(),
            abort: AbortState::for_dispatch(),
            streams: Streams::default(),
            generation_stats: Mutex::default(),
            shared: Arc::clone(&turn.shared),
        }
    }

    /// The dispatch's id (`{turn_id}/dispatch`: a turn has one dispatch).
    pub fn dispatch_id(&self) -> &str {
        self.made_id()
    }

    /// The dispatch's id.
    #[deprecated(
        since = "0.1.0",
        note = "renamed `dispatch_id()`, next to `turn_id()`: both contexts name ids this way"
    )]
    pub fn id(&self) -> &str {
        self.dispatch_id()
    }

    pub(crate) fn shared_id(&self) -> Arc<str> {
        Arc::clone(self.made_id())
    }

    fn made_id(&self) -> &Arc<str> {
        self.id
            .get_or_init(|| dispatch_id_of(self.shared.turn_id().as_str()))
    }

    /// The id of the turn this dispatch belongs to.
    pub fn turn_id(&self) -> &TurnId {
        self.shared.turn_id()
    }

    /// The current iteration of the dispatch loop, counted from zero.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &Tokenizable {
        &self.system_prompt
    }

    /// The dispatch's session state: a copy of the turn's. Writes are visible at once in the
    /// dispatch and reach the turn like the dispatch's other writes: when an iteration
    /// completes or the dispatch is acknowledged; a nack, abort or error drops them.
    ///
    /// A tool handler's writes ([`ToolInvocation::set_state`](crate::primitives::ToolInvocation::set_state))
    /// join this state when the executor returns, and at once through
    /// [`state_mut`](Self::state_mut).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The dispatch's session state, to write; see [`state`](Self::state). Takes in the tool
    /// handlers' writes first.
    pub fn state_mut(&mut self) -> &mut State {
        self.absorb_tool_state();
        &mut self.state
    }

    /// Takes the tool handlers' queued state writes into the dispatch's state.
    pub(crate) fn absorb_tool_state(&mut self) {
        if let Some(inbox) = self.tool_state.get() {
            super::tool_state::absorb(inbox, &mut self.state);
        }
    }

    /// The state link of a tool call prepared now: a copy of the dispatch's state with the
    /// handlers' writes so far, and the inbox for its own.
    pub(crate) fn tool_state_link(&self) -> super::StateLink {
        super::StateLink::new(
            self.state.detached(),
            self.tool_state.get_or_init(Arc::default),
        )
    }

    /// Fills the state placeholders of the system prompt and standing instructions (fixed text
    /// only) from the dispatch's state; see [`crate::state::template`].
    pub(crate) fn render_instructions(&mut self) -> Result<(), template::TemplateError> {
        if let Some(text) = self.system_prompt.as_static()
            && let std::borrow::Cow::Owned(rendered) = template::render(text, &self.state)?
        {
            self.system_prompt = Tokenizable::new(rendered);
        }
        // Most dispatches have none: the loops below and their vector are not free.
        if self.standing_instructions.is_empty() {
            return Ok(());
        }
        let mut rendered_instructions = Vec::new();
        for (index, instruction) in self.standing_instructions.iter().enumerate() {
            let text = match instruction {
                StandingInstruction::Text(text) => text.as_str(),
                StandingInstruction::Tokenizable(tokenizable) => match tokenizable.as_static() {
                    Some(text) => text,
                    None => continue,
                },
            };
            if let std::borrow::Cow::Owned(rendered) = template::render(text, &self.state)? {
                rendered_instructions.push((index, rendered));
            }
        }
        for (index, rendered) in rendered_instructions {
            self.standing_instructions[index] = StandingInstruction::Text(rendered);
        }
        Ok(())
    }

    /// What storage callbacks receive: app, user, conversation (session), thread, turn, identity,
    /// cancellation.
    pub fn storage_context(&self) -> &StorageContext {
        &self.shared.storage_context
    }

    /// Acknowledges the dispatch: the loop ends after the current step and the turn goes on to
    /// `turn_output`. Runs the `on_ack` handlers in registration order (a panicking handler is
    /// contained). A second `ack` or `nack` is refused with `E_LLM_EXECUTION_ALREADY_SIGNALLED`.
    pub fn ack(&mut self) -> Result<(), TurnError> {
        self.ensure_unsignalled()?;
        self.signal = Signal::Acked;
        // Ephemeral tools live until the dispatch is acknowledged (the original's
        // `bindContext`); pruned before any handler runs, so handlers see the pruned registry.
        // (A registry with none returns at once, without taking its vector apart.)
        let pruned = self.tools.prune_ephemeral();
        if !pruned.is_empty() {
            tracing::trace!(dispatch_id = %self.dispatch_id(), pruned = pruned.len(), "ephemeral tools pruned on ack");
        }
        let handlers = match &self.ack_handlers {
            Some(registered) => std::mem::take(
                &mut registered
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .handlers,
            ),
            None => Vec::new(),
        };
        for (_, handler) in handlers {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(self)));
            if ran.is_err() {
                tracing::error!(dispatch_id = %self.dispatch_id(), "an on_ack handler panicked");
            }
        }
        Ok(())
    }

    /// Refuses the dispatch with `error`: the loop ends after the current step, queued writes
    /// are discarded, the turn's output pipeline is skipped and `DispatchEnd` carries the error.
    /// A second `ack` or `nack` is refused with `E_LLM_EXECUTION_ALREADY_SIGNALLED`.
    pub fn nack(&mut self, error: impl Into<BoxError>) -> Result<(), TurnError> {
        self.ensure_unsignalled()?;
        let error: BoxError = error.into();
        self.signal = Signal::Nacked(Box::new(
            TurnError::new(ErrorCode::Nacked, "the dispatch was nacked").with_source(error),
        ));
        Ok(())
    }

    fn ensure_unsignalled(&self) -> Result<(), TurnError> {
        match self.signal {
            Signal::Pending => Ok(()),
            _ => Err(TurnError::new(
                ErrorCode::AlreadySignalled,
                "ack() or nack() was called on a dispatch that was already signalled; check \
                 `ctx.is_signalled()` first",
            )),
        }
    }

    /// Runs `handler` when the dispatch is acknowledged (not on nack). Handlers run in
    /// registration order.
    pub fn on_ack(
        &mut self,
        handler: impl FnOnce(&mut DispatchContext) + Send + 'static,
    ) -> AckSubscription {
        let handlers = self.ack_handlers.get_or_insert_with(Arc::default);
        let mut registered = handlers.lock().unwrap_or_else(PoisonError::into_inner);
        let id = registered.next_id;
        registered.next_id += 1;
        registered.handlers.push((id, Box::new(handler)));
        AckSubscription {
            id,
            handlers: Arc::downgrade(handlers),
        }
    }

    /// Whether `ack` or `nack` was called.
    pub fn is_signalled(&self) -> bool {
        !matches!(self.signal, Signal::Pending)
    }

    /// Whether `ack` was called.
    pub fn is_acked(&self) -> bool {
        matches!(self.signal, Signal::Acked)
    }

    /// The nack's error, once `nack` was called.
    pub fn nack_error(&self) -> Option<&TurnError> {
        match &self.signal {
            Signal::Nacked(error) => Some(error.as_ref()),
            _ => None,
        }
    }

    /// The tool calls made in this turn (by this dispatch or before it), in collection order,
    /// without the calls loaded from history; see
    /// [`TurnContext::tool_calls_this_turn`](crate::TurnContext::tool_calls_this_turn).
    ///
    /// ```
    /// use adk::context::DispatchContext;
    ///
    /// fn tools_used_so_far(ctx: &DispatchContext) -> Vec<String> {
    ///     ctx.tool_calls_this_turn().map(|call| call.tool().to_owned()).collect()
    /// }
    /// # let _ = tools_used_so_far;
    /// ```
    pub fn tool_calls_this_turn(&self) -> impl DoubleEndedIterator<Item = &ToolCall> + '_ {
        self.tool_calls
            .iter()
            .filter(|call| self.made_this_turn.contains(call.id()))
    }

    /// How many tool calls in this dispatch carry `checksum`: the same tool with the same
    /// arguments. Middleware use it to stop a model that repeats itself.
    pub fn tool_call_count(&self, checksum: &str) -> usize {
        self.tool_calls
            .iter()
            .filter(|tool_call| tool_call.checksum() == checksum)
            .count()
    }

    /// Aborts the dispatch only: it ends as `aborted` and the turn goes on to `turn_output`.
    /// Use the turn context's `abort` to end the whole turn.
    pub fn abort(&self, reason: impl Into<String>) {
        self.abort.abort(AbortReason::Requested(reason.into()));
    }

    /// Whether the dispatch was aborted, directly or because the turn was.
    #[inline]
    pub fn is_aborted(&self) -> bool {
        if self.abort.is_quiet() {
            // The common case, one load: no abort and no token of its own, so only the turn
            // can have aborted it.
            return self.shared.is_aborted();
        }
        if self.abort.has_token() {
            // The dispatch's token is a child of the turn's, so its own check already sees the
            // turn being cancelled; the turn's flag covers `TurnContext::abort` without a
            // second lock.
            self.abort.is_aborted() || self.shared.abort.is_flagged()
        } else {
            // No token of its own yet: nothing but `abort` (the flag) can have aborted the
            // dispatch itself, and the turn's check covers the rest.
            self.abort.is_flagged() || self.shared.is_aborted()
        }
    }

    /// Why the dispatch was aborted, once it was: its own reason, or `Cancelled` when the turn
    /// was aborted or cancelled under it.
    pub(crate) fn abort_reason(&self) -> Option<AbortReason> {
        self.abort
            .reason()
            .or_else(|| self.shared.is_aborted().then_some(AbortReason::Cancelled))
    }

    /// Whether the whole turn was aborted.
    pub fn is_turn_aborted(&self) -> bool {
        self.shared.is_aborted()
    }

    /// The dispatch's cancellation token: cancelled when the dispatch or the turn is aborted.
    pub fn cancellation(&self) -> &tokio_util::sync::CancellationToken {
        self.abort
            .token_under(self.shared.storage_context.lazy_token())
    }

    /// The statistics the executor reported for this iteration's model call
    /// ([`report_generation_stats`](Self::report_generation_stats)), in the order reported;
    /// empty before the executor ran and when it reported none. A `dispatch_output` middleware
    /// reads the provider's real token usage here (see [`crate::budget`]).
    ///
    /// ```
    /// use adk::DispatchContext;
    ///
    /// fn prompt_tokens(ctx: &DispatchContext) -> u64 {
    ///     ctx.generation_stats().iter().filter_map(|stats| stats.prompt_tokens).sum()
    /// }
    /// # let _ = prompt_tokens;
    /// ```
    pub fn generation_stats(&self) -> Vec<crate::events::GenerationStats> {
        Vec::clone(
            &self
                .generation_stats
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Keeps `stats` for [`generation_stats`](Self::generation_stats).
    pub(crate) fn keep_generation_stats(&self, stats: crate::events::GenerationStats) {
        self.generation_stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stats);
    }

    /// Starts an iteration's statistics afresh.
    pub(crate) fn clear_generation_stats(&mut self) {
        self.generation_stats
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Delivers `event` to the runner's listeners and to `tracing`.
    pub(crate) fn emit(&self, event: crate::events::Event) {
        self.shared.events.emit(event);
    }

    /// Inlined, with [`Delta::apply_copy`], into each storage method: there the change's kind
    /// is known, so the copy goes straight to its collection and the change straight into the
    /// queue. Out of line, the whole delta (as large as the largest record) was copied to the
    /// stack to be matched, and all seven collections gathered for the one it touches.
    #[inline]
    fn record_change(&mut self, delta: Delta) {
        delta.apply_copy(self.collections_mut());
        self.queue.push(delta);
    }

    fn collections_mut(&mut self) -> CollectionsMut<'_> {
        CollectionsMut {
            standing_instructions: &mut self.standing_instructions,
            messages: &mut self.messages,
            memories: &mut self.memories,
            retrievables: &mut self.retrievables,
            thoughts: &mut self.thoughts,
            tool_calls: &mut self.tool_calls,
            made_this_turn: &mut self.made_this_turn,
        }
    }

    /// Applies the queued writes to the turn, in the order they were made.
    pub(crate) fn flush_into(&mut self, turn: &mut TurnContext) {
        self.absorb_tool_state();
        for delta in self.queue.drain() {
            delta.apply(turn.collections_mut());
        }
        self.state.flush_journal_into(&mut turn.state);
    }

    /// Applies the queued writes to the turn as the dispatch ends: each collection this
    /// dispatch changed only through its writes is handed to the turn whole (its records are
    /// the turn's plus those writes, see [`Collection::adopt`]) rather than replayed record by
    /// record, which stored every written record in the turn a second time; the writes to the
    /// others are replayed as [`flush_into`](Self::flush_into) does. The dispatch's
    /// collections are left empty where they were handed over: call it last.
    pub(crate) fn hand_over(&mut self, turn: &mut TurnContext) {
        if self.queue.len() == 0 {
            self.flush_into(turn);
            return;
        }
        self.absorb_tool_state();
        // The common case, one stored message (the answer): its collection taken over, the
        // queued change is in it already (what the general path below does, without its walks
        // over the queue and the five kinds).
        if self.queue.is_one_message_change() && turn.messages.adopt(&mut self.messages) {
            self.queue.clear();
            self.state.flush_journal_into(&mut turn.state);
            return;
        }
        // Only the collections a queued write changed are worth taking over.
        let mut written = Adopted::default();
        for kind in self.queue.collections() {
            written.insert(kind);
        }
        let mut adopted = Adopted::default();
        for kind in CollectionKind::ALL {
            if written.contains(kind) && self.hand_over_collection(kind, turn) {
                adopted.insert(kind);
            }
        }
        self.queue.drain_skipping(adopted, |delta| {
            delta.apply_except(turn.collections_mut(), adopted);
        });
        self.state.flush_journal_into(&mut turn.state);
    }

    /// Hands the dispatch's collection of `kind` to the turn if [`Collection::adopt`] may;
    /// returns whether it did.
    fn hand_over_collection(&mut self, kind: CollectionKind, turn: &mut TurnContext) -> bool {
        match kind {
            CollectionKind::Messages => turn.messages.adopt(&mut self.messages),
            CollectionKind::Memories => turn.memories.adopt(&mut self.memories),
            CollectionKind::Retrievables => turn.retrievables.adopt(&mut self.retrievables),
            CollectionKind::Thoughts => turn.thoughts.adopt(&mut self.thoughts),
            CollectionKind::ToolCalls => turn.tool_calls.adopt(&mut self.tool_calls),
        }
    }

    /// Drops the queued writes: what was persisted stays persisted, the turn never sees it.
    pub(crate) fn discard_queue(&mut self) {
        // The collections hold the discarded writes: no longer the turn's records plus its
        // queued changes.
        self.messages.leave_step();
        self.memories.leave_step();
        self.retrievables.leave_step();
        self.thoughts.leave_step();
        self.tool_calls.leave_step();
        self.queue.clear();
        if let Some(inbox) = self.tool_state.get() {
            super::tool_state::discard(inbox);
        }
        self.state.discard_journal();
    }
}

super::storage_methods::storage_methods!(DispatchContext);
super::middleware_state_methods::middleware_state_methods!(DispatchContext);

impl DispatchContext {
    /// Opens a gate and waits until it is answered, times out, or the dispatch (or the turn) is aborted; see
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
            self.abort
                .token_under(self.shared.storage_context.lazy_token()),
        )
        .await
    }
}

impl PipelineContext for DispatchContext {
    #[inline]
    fn is_aborted(&self) -> bool {
        DispatchContext::is_aborted(self)
    }

    fn report_failure(&mut self, failure: MiddlewareFailure) {
        let code = super::gate_code(&failure).unwrap_or(ErrorCode::DispatchPipelineError);
        let error = failure.into_turn_error(code);
        // The first failure ends the dispatch as nack and is the turn's error; later ones (from
        // post-steps of the same walk) are reported too, each as its own error event after it.
        match &self.pipeline_failure {
            None => self.pipeline_failure = Some(Box::new(error)),
            Some(_) => self.later_failures.push(error),
        }
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
    /// The dispatch context lives in every turn's future, copied whenever that future moves.
    /// It was 1,688 bytes; 1,032 is also what glibc's malloc serves from its per-thread cache,
    /// should the context be boxed again (a larger box took malloc's and free's slow paths).
    #[test]
    fn a_dispatch_context_stays_within_1032_bytes() {
        let size = std::mem::size_of::<super::DispatchContext>();
        assert!(size <= 1032, "a dispatch context is {size} bytes");
    }
}
