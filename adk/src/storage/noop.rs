//! [`NoopStorage`]: the adapter that persists no primitive but keeps the bytes it is given.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use crate::bytes::{ConduitBytes, InMemorySpoolStore, MediaReader, SpoolReader};
use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
};

use super::adapter::StorageAdapter;
use super::context::StorageContext;
use super::error::StorageError;
use super::ledger::{MemoryLedger, ToolIntent, ToolRecord, ToolResult};

/// The canonical no-op adapter: every fetch returns an empty list and every store, mutate and
/// delete succeeds without keeping anything.
///
/// It keeps the [tool ledger](super::ledger) in memory, per partition and turn, for as long
/// as the value lives (every clone shares it), so a call id re-run in the same turn against
/// the same `NoopStorage` follows the ledger's rules. It keeps the most recent 10 000 records
/// and forgets older ones, so a long-lived value does not grow without bound.
///
/// The two byte conduits are the exception, because they must return a reader: they keep the
/// bytes in memory, in one store per `NoopStorage` value that every clone shares and that lives
/// as long as the value does, so bytes written under an id can be read back later by that id
/// ([`read_media_bytes`](StorageAdapter::read_media_bytes),
/// [`read_retrievable_bytes`](StorageAdapter::read_retrievable_bytes)). Like every record, bytes
/// belong to their app, user, conversation and thread: each partition reads back its own bytes
/// under an id, never another's. [`NoopStorage::new`] keeps everything; [`NoopStorage::bounded`] keeps at most a byte budget
/// per conduit, forgetting the oldest bytes first; [`NoopStorage::shared`], behind
/// `storage_adapter!`'s `..noop`, is bounded by [`NoopStorage::SHARED_BYTE_BUDGET`]. Readers
/// already handed out keep working either way. Delegate to it for the primitives you choose not
/// to persist:
///
/// ```
/// use adk::storage::{NoopStorage, StorageAdapter, StorageContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let storage = NoopStorage::new();
/// let ctx = StorageContext::new("conversation-1");
///
/// assert!(storage.fetch_messages(&ctx).await.unwrap().is_empty());
///
/// storage.store_retrievable_bytes(&ctx, "report".into(), "line one\nline two".into()).await.unwrap();
/// let kept = storage.clone().read_retrievable_bytes(&ctx, "report".into()).await.unwrap().unwrap();
/// assert_eq!(kept.line(1).await.unwrap().as_deref(), Some("line two"));
///
/// // Another conversation has written nothing under that id.
/// let other = StorageContext::new("conversation-2");
/// assert!(storage.read_retrievable_bytes(&other, "report".into()).await.unwrap().is_none());
/// # });
/// ```
// One store for the lifetime of the value, never one per call: a store created inside the
// conduit would hand back a reader that works once while nothing stays retrievable under the
// id — fake persistence that still type-checks, which is what the byte-conduit contract exists
// to prevent.
#[derive(Clone, Debug, Default)]
pub struct NoopStorage {
    conduits: Arc<Conduits>,
}

#[derive(Debug, Default)]
struct Conduits {
    retrievable_bytes: InMemorySpoolStore,
    media_bytes: InMemorySpoolStore,
    ledger: MemoryLedger,
}

impl NoopStorage {
    /// How many bytes each conduit of [`NoopStorage::shared`] keeps (16 MiB): enough to read
    /// back recent media and spooled text, bounded so that a long-running server that writes
    /// bytes through `..noop` does not grow without limit.
    pub const SHARED_BYTE_BUDGET: usize = 16 * 1024 * 1024;

    /// A no-op adapter with its own, empty byte stores, which keep everything written to them
    /// for as long as this value (or a clone) lives.
    ///
    /// ```
    /// let storage = adk::storage::NoopStorage::new();
    /// assert!(storage.retrievable_bytes().is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A no-op adapter whose byte stores keep at most `max_bytes` bytes each: a write that goes
    /// over the budget first forgets the bytes written longest ago (see
    /// [`InMemorySpoolStore::bounded`]).
    ///
    /// ```
    /// use adk::storage::NoopStorage;
    /// let storage = NoopStorage::bounded(1024);
    /// assert_eq!(storage.media_bytes().byte_budget(), Some(1024));
    /// ```
    #[must_use]
    pub fn bounded(max_bytes: usize) -> Self {
        Self {
            conduits: Arc::new(Conduits {
                retrievable_bytes: InMemorySpoolStore::bounded(max_bytes),
                media_bytes: InMemorySpoolStore::bounded(max_bytes),
                ledger: MemoryLedger::default(),
            }),
        }
    }

    /// The process-wide instance that `storage_adapter!`'s `..noop` delegates to.
    ///
    /// It lives as long as the process, and every adapter using `..noop` writes its bytes here,
    /// so its byte stores are bounded: each conduit keeps at most
    /// [`SHARED_BYTE_BUDGET`](Self::SHARED_BYTE_BUDGET) bytes, forgetting the oldest first.
    /// Readers returned by the conduits are snapshots and keep working after their bytes are
    /// forgotten; only reading an id back through
    /// [`read_media_bytes`](StorageAdapter::read_media_bytes) or
    /// [`read_retrievable_bytes`](StorageAdapter::read_retrievable_bytes) can then find nothing. An adapter whose
    /// bytes must stay retrievable should implement the two conduits over a real
    /// [`ByteStore`](crate::bytes::ByteStore) instead.
    ///
    /// ```
    /// use adk::storage::NoopStorage;
    ///
    /// let first = NoopStorage::shared();
    /// let second = NoopStorage::shared();
    /// assert!(first.shares_bytes_with(second));
    /// ```
    #[must_use]
    pub fn shared() -> &'static NoopStorage {
        static SHARED: OnceLock<NoopStorage> = OnceLock::new();
        SHARED.get_or_init(|| NoopStorage::bounded(Self::SHARED_BYTE_BUDGET))
    }

    /// The store behind [`store_retrievable_bytes`](StorageAdapter::store_retrievable_bytes),
    /// to see how much it holds or clear it. Its entries are keyed by partition and id, so read
    /// an id back with [`read_retrievable_bytes`](StorageAdapter::read_retrievable_bytes), which
    /// knows the partition.
    ///
    /// ```
    /// let storage = adk::storage::NoopStorage::new();
    /// assert_eq!(storage.retrievable_bytes().len(), 0);
    /// ```
    #[must_use]
    pub fn retrievable_bytes(&self) -> &InMemorySpoolStore {
        &self.conduits.retrievable_bytes
    }

    /// The store behind [`store_media_bytes`](StorageAdapter::store_media_bytes), to see how
    /// much it holds or clear it. Like [`retrievable_bytes`](Self::retrievable_bytes), it is
    /// keyed by partition and id: read an id back with
    /// [`read_media_bytes`](StorageAdapter::read_media_bytes).
    ///
    /// ```
    /// let storage = adk::storage::NoopStorage::new();
    /// assert!(storage.media_bytes().is_empty());
    /// ```
    #[must_use]
    pub fn media_bytes(&self) -> &InMemorySpoolStore {
        &self.conduits.media_bytes
    }

    /// Whether `self` and `other` write to the same byte stores (they are clones of one value).
    ///
    /// ```
    /// use adk::storage::NoopStorage;
    ///
    /// let storage = NoopStorage::new();
    /// assert!(storage.shares_bytes_with(&storage.clone()));
    /// assert!(!storage.shares_bytes_with(&NoopStorage::new()));
    /// ```
    #[must_use]
    pub fn shares_bytes_with(&self, other: &NoopStorage) -> bool {
        Arc::ptr_eq(&self.conduits, &other.conduits)
    }
}

/// What a callback of [`NoopStorage`] that keeps nothing returns: a future ready at once with
/// an empty list or `()`. It is zero-sized, so the boxed future a [`SharedStorage`] makes of it
/// (see [`DynStorageAdapter`]) allocates nothing; an `async fn` would hold its arguments (a
/// stored record is 176 bytes and more) and cost an allocation and a free per call. The
/// callback's arguments are dropped when it is called, not when its future is.
///
/// [`SharedStorage`]: super::SharedStorage
/// [`DynStorageAdapter`]: super::DynStorageAdapter
struct Nothing<T>(PhantomData<fn() -> T>);

impl<T> Default for Nothing<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: Default> Future for Nothing<T> {
    type Output = Result<T, StorageError>;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(T::default()))
    }
}

/// Writes the [`NoopStorage`] callbacks that keep nothing, from a table of their names, the
/// types of their arguments after the context, and what their future gives: each drops its
/// arguments and returns [`Nothing`].
macro_rules! nothing {
    ($( $name:ident ( $($argument:ty),* ) -> $output:ty; )*) => {
        $(
            fn $name(
                &self,
                _ctx: &StorageContext,
                $(_: $argument),*
            ) -> impl Future<Output = Result<$output, StorageError>> + Send {
                Nothing::default()
            }
        )*
    };
}

impl StorageAdapter for NoopStorage {
    // The callbacks that keep nothing, each returning a `Nothing`.
    nothing! {
        fetch_memories() -> Vec<Memory>;
        fetch_messages() -> Vec<Message>;
        fetch_thoughts() -> Vec<Thought>;
        fetch_tool_calls() -> Vec<ToolCall>;
        fetch_tools() -> Vec<Tool>;
        fetch_retrievables() -> Vec<Retrievable>;
        refresh_standing_instructions() -> Vec<StandingInstruction>;
        store_memory(Memory) -> ();
        mutate_memory(Memory) -> ();
        delete_memory(String) -> ();
        store_message(Message) -> ();
        mutate_message(Message) -> ();
        delete_message(String) -> ();
        store_thought(Thought) -> ();
        mutate_thought(Thought) -> ();
        delete_thought(String) -> ();
        store_tool_call(ToolCall) -> ();
        mutate_tool_call(ToolCall) -> ();
        delete_tool_call(String) -> ();
        store_retrievable(Retrievable) -> ();
        mutate_retrievable(Retrievable) -> ();
        delete_retrievable(String) -> ();
        store_standing_instruction(StandingInstruction) -> ();
        mutate_standing_instruction(StandingInstruction) -> ();
        delete_standing_instruction(StandingInstruction) -> ();
    }

    async fn store_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        let key = partition_key(ctx, &id);
        let stored = self
            .conduits
            .media_bytes
            .write_keyed(&key, &id, bytes)
            .await?;
        Ok(MediaReader::from_spool(stored))
    }

    async fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        let key = partition_key(ctx, &id);
        let stored = self
            .conduits
            .retrievable_bytes
            .write_keyed(&key, &id, bytes);
        Ok(stored.await?)
    }

    async fn read_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<MediaReader>, StorageError> {
        let key = partition_key(ctx, &id);
        let stored = self.conduits.media_bytes.read_keyed(&key, &id);
        Ok(stored.map(MediaReader::from_spool))
    }

    async fn read_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<SpoolReader>, StorageError> {
        let key = partition_key(ctx, &id);
        Ok(self.conduits.retrievable_bytes.read_keyed(&key, &id))
    }

    async fn record_tool_intent(
        &self,
        ctx: &StorageContext,
        intent: ToolIntent,
    ) -> Result<Option<ToolRecord>, StorageError> {
        let key = ledger_key(ctx, &intent.call_id);
        self.conduits.ledger.intent(key, intent)
    }

    async fn record_tool_result(
        &self,
        ctx: &StorageContext,
        call_id: String,
        result: ToolResult,
    ) -> Result<(), StorageError> {
        let key = ledger_key(ctx, &call_id);
        self.conduits.ledger.result(&key, &call_id, result)
    }
}

/// Where the ledger record of `call_id` is kept: its partition, turn and call id (a call id
/// names one call within one turn).
fn ledger_key(ctx: &StorageContext, call_id: &str) -> String {
    let turn = ctx.turn_id().as_str();
    partition_key(ctx, &format!("{}:{turn}{call_id}", turn.len()))
}

/// Where bytes written under `id` are kept: the app, user, conversation and thread of `ctx` and
/// the id, each prefixed with its length so no two partitions can spell the same key.
fn partition_key(ctx: &StorageContext, id: &str) -> String {
    let parts = [
        ctx.app_name().as_str(),
        ctx.user_id().as_str(),
        ctx.conversation_id().as_str(),
        ctx.thread_id().as_str(),
        id,
    ];
    parts
        .iter()
        .map(|part| format!("{}:{part}", part.len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callbacks_that_keep_nothing_return_zero_sized_futures_so_boxing_them_allocates_nothing()
    {
        let storage = NoopStorage::new();
        let ctx = StorageContext::new("c");
        let message = Message::user("m-1", "hi").expect("a valid message");
        assert_eq!(size_of_val(&storage.store_message(&ctx, message)), 0);
        assert_eq!(size_of_val(&storage.fetch_messages(&ctx)), 0);
        assert_eq!(size_of_val(&storage.delete_thought(&ctx, "t".into())), 0);
        let ready = std::pin::pin!(storage.fetch_memories(&ctx));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(matches!(ready.poll(&mut cx), Poll::Ready(Ok(memories)) if memories.is_empty()));
    }

    #[test]
    fn partition_keys_cannot_collide_across_the_parts() {
        let split = |conversation: &str, id: &str| {
            partition_key(&StorageContext::new(conversation.to_owned()), id)
        };
        assert_ne!(split("a/b", "c"), split("a", "b/c"));
        assert_ne!(split("a1:", "x"), split("a", "1:x"));
        assert_eq!(split("a", "b"), split("a", "b"));
    }
}
