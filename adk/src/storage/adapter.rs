//! The storage contract: the 29 callbacks through which adk persists, and reads back, the six
//! primitives and the bytes behind media and large retrievables.

use std::future::Future;

use super::approvals::{Answered, ApprovalRecord, ApprovalRequest};
use super::context::StorageContext;
use super::error::StorageError;
use super::ledger::{ToolIntent, ToolRecord, ToolResult};
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
};

/// Your storage layer: adk persists nothing itself and calls these 29 methods instead.
///
/// There are three families:
/// - seven fetches (`fetch_*`, `refresh_standing_instructions`), never called by the runner on
///   its own — middleware calls them to load history into a turn;
/// - eighteen store / mutate / delete callbacks, three for each of the six primitives, called
///   when middleware, the executor or a tool changes a record. Store creates a record, mutate
///   replaces the record with the same id (keeping its place), delete removes it. Standing
///   instructions have no id and are identified by value, so their delete receives the value;
/// - two byte conduits, [`store_media_bytes`](Self::store_media_bytes) and
///   [`store_retrievable_bytes`](Self::store_retrievable_bytes), which persist bytes and hand
///   back a reader over them, and their two reads,
///   [`read_media_bytes`](Self::read_media_bytes) and
///   [`read_retrievable_bytes`](Self::read_retrievable_bytes), which read an id back later
///   through a fresh reader, per partition.
///
/// Beside the 29 sit seven optional callbacks with default bodies:
/// [`replace_tool_call_group`](Self::replace_tool_call_group) (override it to replace a group
/// of tool calls atomically; the default deletes, then stores, call by call), the
/// [tool ledger](super::ledger)'s [`record_tool_intent`](Self::record_tool_intent) and
/// [`record_tool_result`](Self::record_tool_result), with
/// [`mutate_tool_call_with_result`](Self::mutate_tool_call_with_result), which writes a
/// finished call and its ledger result together (the default calls the two in turn), and the
/// [durable approvals](super::approvals)'
/// [`record_approval_request`](Self::record_approval_request),
/// [`pending_approvals`](Self::pending_approvals) and
/// [`answer_approval`](Self::answer_approval) (the other defaults keep nothing).
///
/// Every fetch and write may be a legal no-op (fetches return an empty list, writes do nothing),
/// but a no-op must be written down: leaving one out is rustc's "not all trait items
/// implemented" error. The conduits and their reads cannot be no-ops, since bytes written under
/// an id must read back by that id. [`NoopStorage`](super::NoopStorage) is the canonical all-no-op
/// adapter, with honest in-memory byte conduits kept per partition, to delegate to. Whatever a method returns reaches the caller: an
/// error is never swallowed.
///
/// Methods return `impl Future + Send`, so an implementation may simply write `async fn`.
/// Most adapters let [`storage_adapter!`](crate::storage_adapter!) write this impl from the
/// callbacks they keep; implementing it by hand, as below, works just as well.
/// The runner holds the adapter as a [`SharedStorage`](super::SharedStorage).
///
/// [`conformance`](super::conformance) checks an implementation against this contract.
///
/// # Example
///
/// The minimum viable set-up keeps messages and tool calls and deliberately drops the rest:
///
/// ```
/// use std::sync::Mutex;
///
/// use adk::bytes::{ConduitBytes, MediaReader, SpoolReader};
/// use adk::primitives::{
///     Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
/// };
/// use adk::storage::{NoopStorage, Primitive, StorageAdapter, StorageContext, StorageError};
///
/// /// Keeps one conversation's messages and tool calls in memory.
/// #[derive(Default)]
/// struct ChatStorage {
///     messages: Mutex<Vec<Message>>,
///     tool_calls: Mutex<Vec<ToolCall>>,
///     bytes: NoopStorage,
/// }
///
/// fn poisoned<T>(_: T) -> StorageError {
///     StorageError::backend("a previous storage call panicked while holding the lock")
/// }
///
/// impl StorageAdapter for ChatStorage {
///     async fn fetch_memories(&self, _ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
///         Ok(Vec::new())
///     }
///     async fn fetch_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
///         Ok(self.messages.lock().map_err(poisoned)?.clone())
///     }
///     async fn fetch_thoughts(&self, _ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
///         Ok(Vec::new())
///     }
///     async fn fetch_tool_calls(&self, _ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
///         Ok(self.tool_calls.lock().map_err(poisoned)?.clone())
///     }
///     async fn fetch_tools(&self, _ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
///         Ok(Vec::new())
///     }
///     async fn fetch_retrievables(&self, _ctx: &StorageContext) -> Result<Vec<Retrievable>, StorageError> {
///         Ok(Vec::new())
///     }
///     async fn refresh_standing_instructions(
///         &self,
///         _ctx: &StorageContext,
///     ) -> Result<Vec<StandingInstruction>, StorageError> {
///         Ok(Vec::new())
///     }
///     async fn store_memory(&self, _ctx: &StorageContext, _memory: Memory) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn mutate_memory(&self, _ctx: &StorageContext, _memory: Memory) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn delete_memory(&self, _ctx: &StorageContext, _id: String) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn store_message(&self, _ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
///         self.messages.lock().map_err(poisoned)?.push(message);
///         Ok(())
///     }
///     async fn mutate_message(&self, _ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
///         let mut messages = self.messages.lock().map_err(poisoned)?;
///         match messages.iter_mut().find(|stored| stored.id() == message.id()) {
///             Some(stored) => {
///                 *stored = message;
///                 Ok(())
///             }
///             None => Err(StorageError::NotFound {
///                 kind: Primitive::Messages,
///                 id: message.id().to_owned(),
///             }),
///         }
///     }
///     async fn delete_message(&self, _ctx: &StorageContext, id: String) -> Result<(), StorageError> {
///         self.messages.lock().map_err(poisoned)?.retain(|stored| stored.id() != id);
///         Ok(())
///     }
///     async fn store_thought(&self, _ctx: &StorageContext, _thought: Thought) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn mutate_thought(&self, _ctx: &StorageContext, _thought: Thought) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn delete_thought(&self, _ctx: &StorageContext, _id: String) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn store_tool_call(&self, _ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError> {
///         self.tool_calls.lock().map_err(poisoned)?.push(tool_call);
///         Ok(())
///     }
///     async fn mutate_tool_call(&self, _ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError> {
///         let mut tool_calls = self.tool_calls.lock().map_err(poisoned)?;
///         match tool_calls.iter_mut().find(|stored| stored.id() == tool_call.id()) {
///             Some(stored) => {
///                 *stored = tool_call;
///                 Ok(())
///             }
///             None => Err(StorageError::NotFound {
///                 kind: Primitive::ToolCalls,
///                 id: tool_call.id().to_owned(),
///             }),
///         }
///     }
///     async fn delete_tool_call(&self, _ctx: &StorageContext, id: String) -> Result<(), StorageError> {
///         self.tool_calls.lock().map_err(poisoned)?.retain(|stored| stored.id() != id);
///         Ok(())
///     }
///     async fn store_retrievable(&self, _ctx: &StorageContext, _retrievable: Retrievable) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn mutate_retrievable(&self, _ctx: &StorageContext, _retrievable: Retrievable) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn delete_retrievable(&self, _ctx: &StorageContext, _id: String) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn store_standing_instruction(
///         &self,
///         _ctx: &StorageContext,
///         _instruction: StandingInstruction,
///     ) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn mutate_standing_instruction(
///         &self,
///         _ctx: &StorageContext,
///         _instruction: StandingInstruction,
///     ) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn delete_standing_instruction(
///         &self,
///         _ctx: &StorageContext,
///         _instruction: StandingInstruction,
///     ) -> Result<(), StorageError> {
///         Ok(())
///     }
///     async fn store_media_bytes(
///         &self,
///         ctx: &StorageContext,
///         id: String,
///         bytes: ConduitBytes,
///     ) -> Result<MediaReader, StorageError> {
///         self.bytes.store_media_bytes(ctx, id, bytes).await
///     }
///     async fn store_retrievable_bytes(
///         &self,
///         ctx: &StorageContext,
///         id: String,
///         bytes: ConduitBytes,
///     ) -> Result<SpoolReader, StorageError> {
///         self.bytes.store_retrievable_bytes(ctx, id, bytes).await
///     }
///     async fn read_media_bytes(
///         &self,
///         ctx: &StorageContext,
///         id: String,
///     ) -> Result<Option<MediaReader>, StorageError> {
///         self.bytes.read_media_bytes(ctx, id).await
///     }
///     async fn read_retrievable_bytes(
///         &self,
///         ctx: &StorageContext,
///         id: String,
///     ) -> Result<Option<SpoolReader>, StorageError> {
///         self.bytes.read_retrievable_bytes(ctx, id).await
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let storage = ChatStorage::default();
/// let ctx = StorageContext::new("conversation-1");
/// assert!(storage.fetch_messages(&ctx).await.unwrap().is_empty());
/// let reader = storage.store_retrievable_bytes(&ctx, "doc-1".into(), "a\nb".into()).await.unwrap();
/// assert_eq!(reader.line_count().await.unwrap(), 2);
/// let again = storage.read_retrievable_bytes(&ctx, "doc-1".into()).await.unwrap().unwrap();
/// assert_eq!(again.line(1).await.unwrap().as_deref(), Some("b"));
/// # });
/// ```
pub trait StorageAdapter: Send + Sync + 'static {
    /// Returns this conversation's memories, oldest first (in the order they were stored).
    ///
    /// Never called by the runner on its own: a turn starts with no memories loaded, and turn-input
    /// middleware (or the executor, or a tool) calls this when it wants them. An adapter that
    /// does not persist memories returns an empty list.
    fn fetch_memories(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Memory>, StorageError>> + Send;

    /// Returns this conversation's messages, oldest first (in the order they were stored).
    ///
    /// Never called by the runner on its own: a turn starts with no messages loaded, and turn-input
    /// middleware (or the executor, or a tool) calls this when it wants them. An adapter that
    /// does not persist messages returns an empty list.
    fn fetch_messages(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Message>, StorageError>> + Send;

    /// Returns this conversation's thoughts, oldest first (in the order they were stored).
    ///
    /// Never called by the runner on its own: a turn starts with no thoughts loaded, and turn-input
    /// middleware (or the executor, or a tool) calls this when it wants them. An adapter that
    /// does not persist thoughts returns an empty list.
    fn fetch_thoughts(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Thought>, StorageError>> + Send;

    /// Returns this conversation's tool calls, oldest first (in the order they were stored).
    ///
    /// Never called by the runner on its own: a turn starts with no tool calls loaded, and turn-input
    /// middleware (or the executor, or a tool) calls this when it wants them. An adapter that
    /// does not persist tool calls returns an empty list.
    fn fetch_tool_calls(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<ToolCall>, StorageError>> + Send;

    /// Returns extra tools the model may use in this turn, on top of those given to the runner.
    ///
    /// Not one of the persisted primitives: a [`Tool`] holds a handler and is never serialized, so an
    /// adapter builds tools (for example from per-tenant configuration) rather than storing them.
    /// Never called by the runner on its own. An adapter with no extra tools returns an empty list.
    fn fetch_tools(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Tool>, StorageError>> + Send;

    /// Returns this conversation's retrievables, oldest first (in the order they were stored).
    ///
    /// Never called by the runner on its own: a turn starts with no retrievables loaded, and turn-input
    /// middleware (or the executor, or a tool) calls this when it wants them. An adapter that
    /// does not persist retrievables returns an empty list.
    fn fetch_retrievables(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<Retrievable>, StorageError>> + Send;

    /// Returns this conversation's current standing instructions, in the order they were stored.
    ///
    /// Never called by the runner on its own: a turn's instructions are seeded from the raw turn
    /// input, and middleware calls this when it wants the stored ones. An adapter that does not
    /// persist standing instructions returns an empty list.
    fn refresh_standing_instructions(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<StandingInstruction>, StorageError>> + Send;

    /// Persists a new memory; a later fetch returns it after every memory stored before it.
    ///
    /// Called as soon as middleware, the executor or a tool stores a memory on the turn context. A
    /// store made inside a dispatch reaches this callback at once too; only the turn's
    /// collections wait for the iteration to complete (a nacked iteration's records stay
    /// persisted, never rolled back).
    fn store_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces the stored memory that has the same id with `memory`, keeping its place in fetch order.
    ///
    /// adk hands over exactly the updated value its caller passed, with no diff or patch format:
    /// any merging happened before the call. Never called by the runner on its own.
    /// An adapter may return [`StorageError::NotFound`] when no memory has this id.
    fn mutate_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Removes the memory with this id, so later fetches no longer return it.
    ///
    /// Called only when middleware, the executor or a tool deletes a memory explicitly.
    fn delete_memory(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Persists a new message; a later fetch returns it after every message stored before it.
    ///
    /// Called as soon as middleware, the executor or a tool stores a message on the turn context. A
    /// store made inside a dispatch reaches this callback at once too; only the turn's
    /// collections wait for the iteration to complete (a nacked iteration's records stay
    /// persisted, never rolled back).
    fn store_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces the stored message that has the same id with `message`, keeping its place in fetch order.
    ///
    /// adk hands over exactly the updated value its caller passed, with no diff or patch format:
    /// any merging happened before the call. Never called by the runner on its own.
    /// An adapter may return [`StorageError::NotFound`] when no message has this id.
    fn mutate_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Removes the message with this id, so later fetches no longer return it.
    ///
    /// Called only when middleware, the executor or a tool deletes a message explicitly.
    fn delete_message(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Persists a new thought; a later fetch returns it after every thought stored before it.
    ///
    /// Called as soon as middleware, the executor or a tool stores a thought on the turn context. A
    /// store made inside a dispatch reaches this callback at once too; only the turn's
    /// collections wait for the iteration to complete (a nacked iteration's records stay
    /// persisted, never rolled back).
    fn store_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces the stored thought that has the same id with `thought`, keeping its place in fetch order.
    ///
    /// adk hands over exactly the updated value its caller passed, with no diff or patch format:
    /// any merging happened before the call. Never called by the runner on its own.
    /// An adapter may return [`StorageError::NotFound`] when no thought has this id.
    fn mutate_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Removes the thought with this id, so later fetches no longer return it.
    ///
    /// Called only when middleware, the executor or a tool deletes a thought explicitly.
    fn delete_thought(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Persists a new tool call; a later fetch returns it after every tool call stored before it.
    ///
    /// Called as soon as middleware, the executor or a tool stores a tool call on the turn context. A
    /// store made inside a dispatch reaches this callback at once too; only the turn's
    /// collections wait for the iteration to complete (a nacked iteration's records stay
    /// persisted, never rolled back).
    fn store_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces the stored tool call that has the same id with `tool_call`, keeping its place in fetch order.
    ///
    /// adk hands over exactly the updated value its caller passed, with no diff or patch format:
    /// any merging happened before the call. Never called by the runner on its own. For example the executor
    /// records a tool's results by mutating the pending tool call it stored earlier.
    /// An adapter may return [`StorageError::NotFound`] when no tool call has this id.
    fn mutate_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Removes the tool call with this id, so later fetches no longer return it.
    ///
    /// Called only when middleware, the executor or a tool deletes a tool call explicitly.
    fn delete_tool_call(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Persists a new retrievable; a later fetch returns it after every retrievable stored before it.
    ///
    /// Called as soon as middleware, the executor or a tool stores a retrievable on the turn context. A
    /// store made inside a dispatch reaches this callback at once too; only the turn's
    /// collections wait for the iteration to complete (a nacked iteration's records stay
    /// persisted, never rolled back).
    ///
    /// A retrievable whose content is static text and that is not marked inline arrives here with
    /// its text already spooled through [`store_retrievable_bytes`](Self::store_retrievable_bytes).
    fn store_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces the stored retrievable that has the same id with `retrievable`, keeping its place in fetch order.
    ///
    /// adk hands over exactly the updated value its caller passed, with no diff or patch format:
    /// any merging happened before the call. Never called by the runner on its own.
    /// An adapter may return [`StorageError::NotFound`] when no retrievable has this id.
    fn mutate_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Removes the retrievable with this id, so later fetches no longer return it.
    ///
    /// Called only when middleware, the executor or a tool deletes a retrievable explicitly.
    fn delete_retrievable(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Persists a new standing instruction; a later refresh returns it after those stored before it.
    ///
    /// Standing instructions have no id: they are identified by their value.
    fn store_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Replaces the stored standing instruction equal to `instruction`, keeping its place in order.
    ///
    /// Standing instructions are identified by value, so this is called after an instruction's
    /// dynamic value changed; storing the same value again must not produce a second copy. Never
    /// called by the runner on its own.
    fn mutate_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Removes the stored standing instruction equal to `instruction`.
    ///
    /// Unlike the other deletes this receives the instruction itself, not an id, because standing
    /// instructions have no id. Called only on an explicit delete.
    fn delete_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Persists media bytes under `id` and returns a reader that streams them back.
    ///
    /// A tool or executor that produces media calls this, builds a
    /// [`Media`](crate::primitives::Media) from the returned reader, then stores the message or tool
    /// call that owns it; the bytes alone are invisible to the framework. This is not a mutation:
    /// it adds nothing to the turn's records and emits no event. Writing again under the same id
    /// replaces the bytes. Stream input should be written as it arrives, not collected whole.
    fn store_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> impl Future<Output = Result<MediaReader, StorageError>> + Send;

    /// Persists large text (typically extracted for retrieval) under `id` and returns a line-addressable reader over it.
    ///
    /// The caller wraps the reader in a [`SpooledArtifact`](crate::primitives::SpooledArtifact) and
    /// stores the [`Retrievable`] that owns it; storing a retrievable with static, non-inline text
    /// calls this automatically. Not a mutation. Writing again under the same id replaces the bytes;
    /// stream input should be written as it arrives, not collected whole.
    fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> impl Future<Output = Result<SpoolReader, StorageError>> + Send;

    /// Reads back, through a fresh reader, the media bytes last written under `id` in `ctx`'s
    /// partition (app, user, conversation and thread), or `None` if none were.
    ///
    /// The other half of [`store_media_bytes`](Self::store_media_bytes): bytes stay readable by
    /// their id after the reader the write returned is gone, a rewrite is read as the new bytes,
    /// and bytes another partition wrote under the same id are not found. A fetch that rebuilds
    /// a [`Media`](crate::primitives::Media) reads its bytes this way. Not a mutation. This
    /// cannot be a no-op: an adapter that keeps no bytes of its own delegates both the conduit
    /// and this read to [`NoopStorage`](super::NoopStorage).
    fn read_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<Option<MediaReader>, StorageError>> + Send;

    /// Reads back, through a fresh reader, the retrievable bytes last written under `id` in
    /// `ctx`'s partition, or `None` if none were.
    ///
    /// The other half of [`store_retrievable_bytes`](Self::store_retrievable_bytes), with the
    /// same promises as [`read_media_bytes`](Self::read_media_bytes): readable by id later, a
    /// rewrite read as the new bytes, another partition's bytes under the same id not found. A
    /// fetch that re-attaches a [`SpooledArtifact`](crate::primitives::SpooledArtifact) reads its
    /// bytes this way.
    fn read_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> impl Future<Output = Result<Option<SpoolReader>, StorageError>> + Send;

    /// Writes the [ledger](super::ledger) intent of a call of a tool that is not read-only,
    /// before it runs, unless a record for `intent.call_id` already exists in `ctx`'s
    /// partition and turn (`ctx.turn_id()`): then that record is returned and nothing is written. `Ok(None)` means the
    /// intent was written (or the adapter keeps no ledger).
    ///
    /// Optional, like the ledger: the default keeps nothing and returns `Ok(None)`, so every
    /// call runs (at-least-once across a crash, as without a ledger). An adapter that keeps
    /// one must make the check and the write atomic (one transaction, or an insert that
    /// ignores a conflict), so two runs of a call id cannot both see no record.
    fn record_tool_intent(
        &self,
        ctx: &StorageContext,
        intent: ToolIntent,
    ) -> impl Future<Output = Result<Option<ToolRecord>, StorageError>> + Send {
        let _ = (ctx, intent);
        async { Ok(None) }
    }

    /// Writes how the call `call_id` (whose intent was written) ended. Optional: the default
    /// keeps nothing.
    fn record_tool_result(
        &self,
        ctx: &StorageContext,
        call_id: String,
        result: ToolResult,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        let _ = (ctx, call_id, result);
        async { Ok(()) }
    }

    /// Writes a [durable approval](super::approvals) request before its gate opens, unless a
    /// request for `request.call_id` already exists in `ctx`'s partition (app, user,
    /// conversation, thread): then that record, with its decision once given, is returned and
    /// nothing is written. `Ok(None)` means the request was written (or the adapter keeps no
    /// approvals).
    ///
    /// Optional: the default keeps nothing and returns `Ok(None)`, so approvals live in the
    /// process, as gates do. An adapter that keeps them makes the check and the write atomic.
    fn record_approval_request(
        &self,
        ctx: &StorageContext,
        request: ApprovalRequest,
    ) -> impl Future<Output = Result<Option<ApprovalRecord>, StorageError>> + Send {
        let _ = (ctx, request);
        async { Ok(None) }
    }

    /// The approval requests of `ctx`'s partition still waiting for a decision, oldest first.
    /// Optional: the default keeps none and returns an empty list.
    fn pending_approvals(
        &self,
        ctx: &StorageContext,
    ) -> impl Future<Output = Result<Vec<ApprovalRequest>, StorageError>> + Send {
        let _ = ctx;
        async { Ok(Vec::new()) }
    }

    /// Records `decision` (the JSON form of [`Decision`](crate::approval::Decision)) for the
    /// waiting request of `call_id` in `ctx`'s partition, once: a request answered before keeps
    /// its decision ([`Answered::AlreadyAnswered`]). Optional: the default keeps nothing and
    /// returns [`Answered::NotFound`].
    fn answer_approval(
        &self,
        ctx: &StorageContext,
        call_id: String,
        decision: serde_json::Value,
    ) -> impl Future<Output = Result<Answered, StorageError>> + Send {
        let _ = (ctx, call_id, decision);
        async { Ok(Answered::NotFound) }
    }

    /// Writes a finished tool call (as [`mutate_tool_call`](Self::mutate_tool_call)) and the
    /// [ledger](super::ledger) result of the same call (as
    /// [`record_tool_result`](Self::record_tool_result)) together. Called by
    /// `ctx.mutate_tool_call` for a call that `ctx.execute_tool` ran under the ledger: the
    /// result waited for the call's own write, so the ledger costs the call one write (its
    /// intent) beside the writes it makes anyway.
    ///
    /// Optional. The default makes the two calls, the ledger result first, so a crash between
    /// them leaves a recorded result (a re-run uses it) rather than a finished tool call whose
    /// ledger says nothing. Override it to make both **one transaction**, as `SqliteStorage`
    /// (one writer transaction) and `PostgresStorage` (one statement) do. Either way, a
    /// tool call that is not found is [`StorageError::NotFound`], and the ledger result is kept.
    fn mutate_tool_call_with_result(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
        result: ToolResult,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async move {
            self.record_tool_result(ctx, tool_call.id().to_owned(), result)
                .await?;
            self.mutate_tool_call(ctx, tool_call).await
        }
    }

    /// Replaces a group of tool calls: deletes the calls `ids` names and stores `replacements`,
    /// for providers that number tool-call ids per response (every answer's first call is
    /// `call_0`), whose new calls would otherwise collide with, or be cross-wired to, earlier
    /// ones. Called by `ctx.replace_tool_call_group`.
    ///
    /// The only optional callback: override it to make the replacement **atomic** (one database
    /// transaction, say). Without an override, this default is **not atomic**: it deletes each
    /// id in order with [`delete_tool_call`](Self::delete_tool_call) (an id already absent —
    /// `Ok` or [`StorageError::NotFound`] — counts as deleted), then stores each replacement
    /// with [`store_tool_call`](Self::store_tool_call). If a step fails, the calls done so far
    /// stay done and the error is [`StorageError::ToolCallGroupReplacement`], naming the ids
    /// already deleted and stored, with the failing call's error as its source.
    fn replace_tool_call_group(
        &self,
        ctx: &StorageContext,
        ids: Vec<String>,
        replacements: Vec<ToolCall>,
    ) -> impl Future<Output = Result<(), StorageError>> + Send {
        async move {
            let mut deleted = Vec::new();
            for id in ids {
                match self.delete_tool_call(ctx, id.clone()).await {
                    Ok(()) | Err(StorageError::NotFound { .. }) => deleted.push(id),
                    Err(error) => {
                        return Err(StorageError::ToolCallGroupReplacement {
                            deleted,
                            stored: Vec::new(),
                            source: Box::new(error),
                        });
                    }
                }
            }
            let mut stored = Vec::new();
            for call in replacements {
                let id = call.id().to_owned();
                if let Err(error) = self.store_tool_call(ctx, call).await {
                    return Err(StorageError::ToolCallGroupReplacement {
                        deleted,
                        stored,
                        source: Box::new(error),
                    });
                }
                stored.push(id);
            }
            Ok(())
        }
    }
}
