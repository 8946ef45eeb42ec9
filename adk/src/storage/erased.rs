//! The type-erased form of a storage adapter, which the runner and the contexts hold so they are
//! not generic over the user's adapter type.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::adapter::StorageAdapter;
use super::approvals::{Answered, ApprovalRecord, ApprovalRequest};
use super::context::StorageContext;
use super::error::StorageError;
use super::ledger::{ToolIntent, ToolRecord, ToolResult};
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
};

// The 29 callbacks are listed once, in the table at the bottom of this file; the macro writes
// the object-safe trait, its blanket impl, `SharedStorage`'s forwarding methods and
// `SharedStorage`'s own `StorageAdapter` impl from it, so the four cannot drift apart.
macro_rules! erased_storage {
    ($(
        $name:ident / $erased:ident ( $($argument:ident: $type:ty),* ) -> $output:ty;
    )*) => {
        /// The object-safe mirror of [`StorageAdapter`]: the same 29 callbacks, each returning a boxed
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
            $(
                #[doc = concat!("[`StorageAdapter::", stringify!($name), "`], boxed.")]
                fn $erased<'a>(
                    &'a self,
                    ctx: &'a StorageContext,
                    $($argument: $type),*
                ) -> BoxFuture<'a, Result<$output, StorageError>>;
            )*
        }

        impl<Adapter: StorageAdapter> DynStorageAdapter for Adapter {
            $(
                fn $erased<'a>(
                    &'a self,
                    ctx: &'a StorageContext,
                    $($argument: $type),*
                ) -> BoxFuture<'a, Result<$output, StorageError>> {
                    Box::pin(StorageAdapter::$name(self, ctx, $($argument),*))
                }
            )*
        }

        impl SharedStorage {
            $(
                #[doc = concat!(
                    "Calls the adapter's [`", stringify!($name), "`](StorageAdapter::",
                    stringify!($name), ")."
                )]
                pub fn $name<'a>(
                    &'a self,
                    ctx: &'a StorageContext,
                    $($argument: $type),*
                ) -> impl Future<Output = Result<$output, StorageError>> + Send + 'a {
                    self.adapter.$erased(ctx, $($argument),*)
                }
            )*
        }

        // An adapter in an `Arc` is still an adapter, so `.storage(Arc::clone(&adapter))` keeps a
        // typed handle without going through `SharedStorage::from_arc`.
        impl<Adapter: StorageAdapter> StorageAdapter for Arc<Adapter> {
            $(
                fn $name(
                    &self,
                    ctx: &StorageContext,
                    $($argument: $type),*
                ) -> impl Future<Output = Result<$output, StorageError>> + Send {
                    Adapter::$name(self, ctx, $($argument),*)
                }
            )*
        }

        // A shared handle is itself an adapter, so code generic over `StorageAdapter` (such as
        // the conformance suite) accepts it. Calls forward to the inherent methods, which box
        // once.
        impl StorageAdapter for SharedStorage {
            $(
                async fn $name(
                    &self,
                    ctx: &StorageContext,
                    $($argument: $type),*
                ) -> Result<$output, StorageError> {
                    SharedStorage::$name(self, ctx, $($argument),*).await
                }
            )*
        }
    };
}

/// A cheaply cloneable handle to any [`StorageAdapter`]: what the runner and the turn contexts
/// hold. Its methods are the adapter's 36 (the 29 callbacks and the seven optional ones), each
/// costing one boxed future per call.
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
}

impl fmt::Debug for SharedStorage {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SharedStorage")
            .finish_non_exhaustive()
    }
}

erased_storage! {
    fetch_memories / erased_fetch_memories() -> Vec<Memory>;
    fetch_messages / erased_fetch_messages() -> Vec<Message>;
    fetch_thoughts / erased_fetch_thoughts() -> Vec<Thought>;
    fetch_tool_calls / erased_fetch_tool_calls() -> Vec<ToolCall>;
    fetch_tools / erased_fetch_tools() -> Vec<Tool>;
    fetch_retrievables / erased_fetch_retrievables() -> Vec<Retrievable>;
    refresh_standing_instructions / erased_refresh_standing_instructions() -> Vec<StandingInstruction>;
    store_memory / erased_store_memory(memory: Memory) -> ();
    mutate_memory / erased_mutate_memory(memory: Memory) -> ();
    delete_memory / erased_delete_memory(id: String) -> ();
    store_message / erased_store_message(message: Message) -> ();
    mutate_message / erased_mutate_message(message: Message) -> ();
    delete_message / erased_delete_message(id: String) -> ();
    store_thought / erased_store_thought(thought: Thought) -> ();
    mutate_thought / erased_mutate_thought(thought: Thought) -> ();
    delete_thought / erased_delete_thought(id: String) -> ();
    store_tool_call / erased_store_tool_call(tool_call: ToolCall) -> ();
    mutate_tool_call / erased_mutate_tool_call(tool_call: ToolCall) -> ();
    delete_tool_call / erased_delete_tool_call(id: String) -> ();
    store_retrievable / erased_store_retrievable(retrievable: Retrievable) -> ();
    mutate_retrievable / erased_mutate_retrievable(retrievable: Retrievable) -> ();
    delete_retrievable / erased_delete_retrievable(id: String) -> ();
    store_standing_instruction / erased_store_standing_instruction(instruction: StandingInstruction) -> ();
    mutate_standing_instruction / erased_mutate_standing_instruction(instruction: StandingInstruction) -> ();
    delete_standing_instruction / erased_delete_standing_instruction(instruction: StandingInstruction) -> ();
    store_media_bytes / erased_store_media_bytes(id: String, bytes: ConduitBytes) -> MediaReader;
    store_retrievable_bytes / erased_store_retrievable_bytes(id: String, bytes: ConduitBytes) -> SpoolReader;
    read_media_bytes / erased_read_media_bytes(id: String) -> Option<MediaReader>;
    read_retrievable_bytes / erased_read_retrievable_bytes(id: String) -> Option<SpoolReader>;
    replace_tool_call_group / erased_replace_tool_call_group(ids: Vec<String>, replacements: Vec<ToolCall>) -> ();
    record_tool_intent / erased_record_tool_intent(intent: ToolIntent) -> Option<ToolRecord>;
    record_tool_result / erased_record_tool_result(call_id: String, result: ToolResult) -> ();
    record_approval_request / erased_record_approval_request(request: ApprovalRequest) -> Option<ApprovalRecord>;
    pending_approvals / erased_pending_approvals() -> Vec<ApprovalRequest>;
    answer_approval / erased_answer_approval(call_id: String, decision: serde_json::Value) -> Answered;
    mutate_tool_call_with_result / erased_mutate_tool_call_with_result(tool_call: ToolCall, result: ToolResult) -> ();
}
