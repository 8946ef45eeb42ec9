//! The type-erased form of a storage adapter, which the runner and the contexts hold so they are
//! not generic over the user's adapter type.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::adapter::StorageAdapter;
use super::context::StorageContext;
use super::error::StorageError;
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
};

/// The object-safe mirror of [`StorageAdapter`]: the same 27 callbacks, each returning a boxed
/// future so the adapter can sit behind `dyn`.
///
/// Every [`StorageAdapter`] implements it automatically; implement [`StorageAdapter`] instead.
/// The methods carry an `erased_` prefix so that having both traits in scope never makes a call
/// on a concrete adapter ambiguous. Most code uses [`SharedStorage`], whose methods have the
/// plain names.
///
/// ```
/// use std::sync::Arc;
/// use adk::storage::{DynStorageAdapter, NoopStorage, StorageContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let adapter: Arc<dyn DynStorageAdapter> = Arc::new(NoopStorage::new());
/// let ctx = StorageContext::new("c");
/// assert!(adapter.erased_fetch_messages(&ctx).await.unwrap().is_empty());
/// # });
/// ```
pub trait DynStorageAdapter: Send + Sync + 'static {
    /// [`StorageAdapter::fetch_memories`], boxed.
    fn erased_fetch_memories<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Memory>, StorageError>>;

    /// [`StorageAdapter::fetch_messages`], boxed.
    fn erased_fetch_messages<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Message>, StorageError>>;

    /// [`StorageAdapter::fetch_thoughts`], boxed.
    fn erased_fetch_thoughts<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Thought>, StorageError>>;

    /// [`StorageAdapter::fetch_tool_calls`], boxed.
    fn erased_fetch_tool_calls<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<ToolCall>, StorageError>>;

    /// [`StorageAdapter::fetch_tools`], boxed.
    fn erased_fetch_tools<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Tool>, StorageError>>;

    /// [`StorageAdapter::fetch_retrievables`], boxed.
    fn erased_fetch_retrievables<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Retrievable>, StorageError>>;

    /// [`StorageAdapter::refresh_standing_instructions`], boxed.
    fn erased_refresh_standing_instructions<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<StandingInstruction>, StorageError>>;

    /// [`StorageAdapter::store_memory`], boxed.
    fn erased_store_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        memory: Memory,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::mutate_memory`], boxed.
    fn erased_mutate_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        memory: Memory,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::delete_memory`], boxed.
    fn erased_delete_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::store_message`], boxed.
    fn erased_store_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        message: Message,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::mutate_message`], boxed.
    fn erased_mutate_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        message: Message,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::delete_message`], boxed.
    fn erased_delete_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::store_thought`], boxed.
    fn erased_store_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        thought: Thought,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::mutate_thought`], boxed.
    fn erased_mutate_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        thought: Thought,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::delete_thought`], boxed.
    fn erased_delete_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::store_tool_call`], boxed.
    fn erased_store_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        tool_call: ToolCall,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::mutate_tool_call`], boxed.
    fn erased_mutate_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        tool_call: ToolCall,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::delete_tool_call`], boxed.
    fn erased_delete_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::store_retrievable`], boxed.
    fn erased_store_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        retrievable: Retrievable,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::mutate_retrievable`], boxed.
    fn erased_mutate_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        retrievable: Retrievable,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::delete_retrievable`], boxed.
    fn erased_delete_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::store_standing_instruction`], boxed.
    fn erased_store_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::mutate_standing_instruction`], boxed.
    fn erased_mutate_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::delete_standing_instruction`], boxed.
    fn erased_delete_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> BoxFuture<'a, Result<(), StorageError>>;

    /// [`StorageAdapter::store_media_bytes`], boxed.
    fn erased_store_media_bytes<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> BoxFuture<'a, Result<MediaReader, StorageError>>;

    /// [`StorageAdapter::store_retrievable_bytes`], boxed.
    fn erased_store_retrievable_bytes<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> BoxFuture<'a, Result<SpoolReader, StorageError>>;
}

impl<Adapter: StorageAdapter> DynStorageAdapter for Adapter {
    fn erased_fetch_memories<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Memory>, StorageError>> {
        Box::pin(StorageAdapter::fetch_memories(self, ctx))
    }

    fn erased_fetch_messages<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Message>, StorageError>> {
        Box::pin(StorageAdapter::fetch_messages(self, ctx))
    }

    fn erased_fetch_thoughts<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Thought>, StorageError>> {
        Box::pin(StorageAdapter::fetch_thoughts(self, ctx))
    }

    fn erased_fetch_tool_calls<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<ToolCall>, StorageError>> {
        Box::pin(StorageAdapter::fetch_tool_calls(self, ctx))
    }

    fn erased_fetch_tools<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Tool>, StorageError>> {
        Box::pin(StorageAdapter::fetch_tools(self, ctx))
    }

    fn erased_fetch_retrievables<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<Retrievable>, StorageError>> {
        Box::pin(StorageAdapter::fetch_retrievables(self, ctx))
    }

    fn erased_refresh_standing_instructions<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> BoxFuture<'a, Result<Vec<StandingInstruction>, StorageError>> {
        Box::pin(StorageAdapter::refresh_standing_instructions(self, ctx))
    }

    fn erased_store_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        memory: Memory,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::store_memory(self, ctx, memory))
    }

    fn erased_mutate_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        memory: Memory,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::mutate_memory(self, ctx, memory))
    }

    fn erased_delete_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::delete_memory(self, ctx, id))
    }

    fn erased_store_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        message: Message,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::store_message(self, ctx, message))
    }

    fn erased_mutate_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        message: Message,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::mutate_message(self, ctx, message))
    }

    fn erased_delete_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::delete_message(self, ctx, id))
    }

    fn erased_store_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        thought: Thought,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::store_thought(self, ctx, thought))
    }

    fn erased_mutate_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        thought: Thought,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::mutate_thought(self, ctx, thought))
    }

    fn erased_delete_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::delete_thought(self, ctx, id))
    }

    fn erased_store_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        tool_call: ToolCall,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::store_tool_call(self, ctx, tool_call))
    }

    fn erased_mutate_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        tool_call: ToolCall,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::mutate_tool_call(self, ctx, tool_call))
    }

    fn erased_delete_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::delete_tool_call(self, ctx, id))
    }

    fn erased_store_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        retrievable: Retrievable,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::store_retrievable(self, ctx, retrievable))
    }

    fn erased_mutate_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        retrievable: Retrievable,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::mutate_retrievable(self, ctx, retrievable))
    }

    fn erased_delete_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::delete_retrievable(self, ctx, id))
    }

    fn erased_store_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::store_standing_instruction(
            self,
            ctx,
            instruction,
        ))
    }

    fn erased_mutate_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::mutate_standing_instruction(
            self,
            ctx,
            instruction,
        ))
    }

    fn erased_delete_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(StorageAdapter::delete_standing_instruction(
            self,
            ctx,
            instruction,
        ))
    }

    fn erased_store_media_bytes<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> BoxFuture<'a, Result<MediaReader, StorageError>> {
        Box::pin(StorageAdapter::store_media_bytes(self, ctx, id, bytes))
    }

    fn erased_store_retrievable_bytes<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> BoxFuture<'a, Result<SpoolReader, StorageError>> {
        Box::pin(StorageAdapter::store_retrievable_bytes(
            self, ctx, id, bytes,
        ))
    }
}

/// A cheaply cloneable handle to any [`StorageAdapter`]: what the runner and the turn contexts
/// hold. Its methods are the 27 callbacks, each costing one boxed future per call.
///
/// ```
/// use adk::storage::{NoopStorage, SharedStorage, StorageContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let storage = SharedStorage::new(NoopStorage::new());
/// let for_a_task = storage.clone();
/// let ctx = StorageContext::new("conversation-1");
/// assert!(for_a_task.fetch_memories(&ctx).await.unwrap().is_empty());
/// # });
/// ```
#[derive(Clone)]
pub struct SharedStorage {
    adapter: Arc<dyn DynStorageAdapter>,
}

impl SharedStorage {
    /// Erases `adapter` behind a shared pointer.
    ///
    /// ```
    /// let storage = adk::storage::SharedStorage::new(adk::storage::NoopStorage::new());
    /// # let _ = storage;
    /// ```
    pub fn new(adapter: impl StorageAdapter) -> Self {
        Self {
            adapter: Arc::new(adapter),
        }
    }

    /// Erases an adapter that is already shared, so the caller can keep its own typed handle
    /// (to inspect a test adapter's state, for example).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use adk::storage::{NoopStorage, SharedStorage};
    ///
    /// let adapter = Arc::new(NoopStorage::new());
    /// let storage = SharedStorage::from_arc(Arc::clone(&adapter));
    /// # let _ = storage;
    /// ```
    pub fn from_arc(adapter: Arc<impl StorageAdapter>) -> Self {
        Self { adapter }
    }

    /// Calls the adapter's [`fetch_memories`](StorageAdapter::fetch_memories).
    pub fn fetch_memories<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<Memory>, StorageError>> + Send + 'a {
        self.adapter.erased_fetch_memories(ctx)
    }

    /// Calls the adapter's [`fetch_messages`](StorageAdapter::fetch_messages).
    pub fn fetch_messages<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<Message>, StorageError>> + Send + 'a {
        self.adapter.erased_fetch_messages(ctx)
    }

    /// Calls the adapter's [`fetch_thoughts`](StorageAdapter::fetch_thoughts).
    pub fn fetch_thoughts<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<Thought>, StorageError>> + Send + 'a {
        self.adapter.erased_fetch_thoughts(ctx)
    }

    /// Calls the adapter's [`fetch_tool_calls`](StorageAdapter::fetch_tool_calls).
    pub fn fetch_tool_calls<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<ToolCall>, StorageError>> + Send + 'a {
        self.adapter.erased_fetch_tool_calls(ctx)
    }

    /// Calls the adapter's [`fetch_tools`](StorageAdapter::fetch_tools).
    pub fn fetch_tools<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<Tool>, StorageError>> + Send + 'a {
        self.adapter.erased_fetch_tools(ctx)
    }

    /// Calls the adapter's [`fetch_retrievables`](StorageAdapter::fetch_retrievables).
    pub fn fetch_retrievables<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<Retrievable>, StorageError>> + Send + 'a {
        self.adapter.erased_fetch_retrievables(ctx)
    }

    /// Calls the adapter's [`refresh_standing_instructions`](StorageAdapter::refresh_standing_instructions).
    pub fn refresh_standing_instructions<'a>(
        &'a self,
        ctx: &'a StorageContext,
    ) -> impl Future<Output = Result<Vec<StandingInstruction>, StorageError>> + Send + 'a {
        self.adapter.erased_refresh_standing_instructions(ctx)
    }

    /// Calls the adapter's [`store_memory`](StorageAdapter::store_memory).
    pub fn store_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        memory: Memory,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_store_memory(ctx, memory)
    }

    /// Calls the adapter's [`mutate_memory`](StorageAdapter::mutate_memory).
    pub fn mutate_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        memory: Memory,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_mutate_memory(ctx, memory)
    }

    /// Calls the adapter's [`delete_memory`](StorageAdapter::delete_memory).
    pub fn delete_memory<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_delete_memory(ctx, id)
    }

    /// Calls the adapter's [`store_message`](StorageAdapter::store_message).
    pub fn store_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        message: Message,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_store_message(ctx, message)
    }

    /// Calls the adapter's [`mutate_message`](StorageAdapter::mutate_message).
    pub fn mutate_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        message: Message,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_mutate_message(ctx, message)
    }

    /// Calls the adapter's [`delete_message`](StorageAdapter::delete_message).
    pub fn delete_message<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_delete_message(ctx, id)
    }

    /// Calls the adapter's [`store_thought`](StorageAdapter::store_thought).
    pub fn store_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        thought: Thought,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_store_thought(ctx, thought)
    }

    /// Calls the adapter's [`mutate_thought`](StorageAdapter::mutate_thought).
    pub fn mutate_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        thought: Thought,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_mutate_thought(ctx, thought)
    }

    /// Calls the adapter's [`delete_thought`](StorageAdapter::delete_thought).
    pub fn delete_thought<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_delete_thought(ctx, id)
    }

    /// Calls the adapter's [`store_tool_call`](StorageAdapter::store_tool_call).
    pub fn store_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        tool_call: ToolCall,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_store_tool_call(ctx, tool_call)
    }

    /// Calls the adapter's [`mutate_tool_call`](StorageAdapter::mutate_tool_call).
    pub fn mutate_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        tool_call: ToolCall,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_mutate_tool_call(ctx, tool_call)
    }

    /// Calls the adapter's [`delete_tool_call`](StorageAdapter::delete_tool_call).
    pub fn delete_tool_call<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_delete_tool_call(ctx, id)
    }

    /// Calls the adapter's [`store_retrievable`](StorageAdapter::store_retrievable).
    pub fn store_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        retrievable: Retrievable,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_store_retrievable(ctx, retrievable)
    }

    /// Calls the adapter's [`mutate_retrievable`](StorageAdapter::mutate_retrievable).
    pub fn mutate_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        retrievable: Retrievable,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_mutate_retrievable(ctx, retrievable)
    }

    /// Calls the adapter's [`delete_retrievable`](StorageAdapter::delete_retrievable).
    pub fn delete_retrievable<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter.erased_delete_retrievable(ctx, id)
    }

    /// Calls the adapter's [`store_standing_instruction`](StorageAdapter::store_standing_instruction).
    pub fn store_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter
            .erased_store_standing_instruction(ctx, instruction)
    }

    /// Calls the adapter's [`mutate_standing_instruction`](StorageAdapter::mutate_standing_instruction).
    pub fn mutate_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter
            .erased_mutate_standing_instruction(ctx, instruction)
    }

    /// Calls the adapter's [`delete_standing_instruction`](StorageAdapter::delete_standing_instruction).
    pub fn delete_standing_instruction<'a>(
        &'a self,
        ctx: &'a StorageContext,
        instruction: StandingInstruction,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'a {
        self.adapter
            .erased_delete_standing_instruction(ctx, instruction)
    }

    /// Calls the adapter's [`store_media_bytes`](StorageAdapter::store_media_bytes).
    pub fn store_media_bytes<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> impl Future<Output = Result<MediaReader, StorageError>> + Send + 'a {
        self.adapter.erased_store_media_bytes(ctx, id, bytes)
    }

    /// Calls the adapter's [`store_retrievable_bytes`](StorageAdapter::store_retrievable_bytes).
    pub fn store_retrievable_bytes<'a>(
        &'a self,
        ctx: &'a StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> impl Future<Output = Result<SpoolReader, StorageError>> + Send + 'a {
        self.adapter.erased_store_retrievable_bytes(ctx, id, bytes)
    }
}

impl fmt::Debug for SharedStorage {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SharedStorage")
            .finish_non_exhaustive()
    }
}

// A shared handle is itself an adapter, so code generic over `StorageAdapter` (such as the
// conformance suite) accepts it. Calls forward to the inherent methods, which box once.
impl StorageAdapter for SharedStorage {
    async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        SharedStorage::fetch_memories(self, ctx).await
    }

    async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        SharedStorage::fetch_messages(self, ctx).await
    }

    async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        SharedStorage::fetch_thoughts(self, ctx).await
    }

    async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        SharedStorage::fetch_tool_calls(self, ctx).await
    }

    async fn fetch_tools(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        SharedStorage::fetch_tools(self, ctx).await
    }

    async fn fetch_retrievables(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Retrievable>, StorageError> {
        SharedStorage::fetch_retrievables(self, ctx).await
    }

    async fn refresh_standing_instructions(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<StandingInstruction>, StorageError> {
        SharedStorage::refresh_standing_instructions(self, ctx).await
    }

    async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        SharedStorage::store_memory(self, ctx, memory).await
    }

    async fn mutate_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        SharedStorage::mutate_memory(self, ctx, memory).await
    }

    async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        SharedStorage::delete_memory(self, ctx, id).await
    }

    async fn store_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        SharedStorage::store_message(self, ctx, message).await
    }

    async fn mutate_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        SharedStorage::mutate_message(self, ctx, message).await
    }

    async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        SharedStorage::delete_message(self, ctx, id).await
    }

    async fn store_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        SharedStorage::store_thought(self, ctx, thought).await
    }

    async fn mutate_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        SharedStorage::mutate_thought(self, ctx, thought).await
    }

    async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        SharedStorage::delete_thought(self, ctx, id).await
    }

    async fn store_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        SharedStorage::store_tool_call(self, ctx, tool_call).await
    }

    async fn mutate_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        SharedStorage::mutate_tool_call(self, ctx, tool_call).await
    }

    async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        SharedStorage::delete_tool_call(self, ctx, id).await
    }

    async fn store_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        SharedStorage::store_retrievable(self, ctx, retrievable).await
    }

    async fn mutate_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        SharedStorage::mutate_retrievable(self, ctx, retrievable).await
    }

    async fn delete_retrievable(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        SharedStorage::delete_retrievable(self, ctx, id).await
    }

    async fn store_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        SharedStorage::store_standing_instruction(self, ctx, instruction).await
    }

    async fn mutate_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        SharedStorage::mutate_standing_instruction(self, ctx, instruction).await
    }

    async fn delete_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        SharedStorage::delete_standing_instruction(self, ctx, instruction).await
    }

    async fn store_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        SharedStorage::store_media_bytes(self, ctx, id, bytes).await
    }

    async fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        SharedStorage::store_retrievable_bytes(self, ctx, id, bytes).await
    }
}
