//! The storage contract: what any adapter must do, checked through the conformance suite, the
//! no-op adapter, the erased handle the runner holds, and bytes streamed through both conduits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use adk::bytes::{
    ByteStore, ConduitBytes, FileSpoolStore, InMemorySpoolStore, MediaReader, SpoolReader,
};
use adk::primitives::{
    Memory, Message, Retrievable, RetrievableContent, StandingInstruction, Thought, Tool, ToolCall,
    TrustTier,
};
use adk::storage::conformance::{Conformance, Partition, Step, Subject};
use adk::storage::{
    NoopStorage, Primitive, SharedStorage, StorageAdapter, StorageContext, StorageError, TurnId,
};
use bytes::Bytes;
use futures_util::StreamExt;

/// 50 MiB through each conduit of an adapter backed by files, never held whole in memory.
#[path = "storage/conduits.rs"]
mod conduits;
/// The conformance suite: passes correct adapters, names the first departure of broken ones.
#[path = "storage/conformance.rs"]
mod conformance;
/// The erased handle the runner holds, and the storage context.
#[path = "storage/erased.rs"]
mod erased;
/// An adapter built by `storage_adapter!` over shared state: every primitive really persisted.
#[path = "storage/macro_adapter.rs"]
mod macro_adapter;
/// NoopStorage: empty fetches, honest conduits.
#[path = "storage/noop.rs"]
mod noop;

// ---------------------------------------------------------------------------------------------
// A hand-written adapter that persists everything in memory, with switchable faults so the
// conformance suite can be shown to catch each kind of mistake.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    MutateAppends,
    MutateKeepsOldValue,
    FetchReversed,
    DeleteIgnored,
    RewriteKeepsFirstBytes,
    StoreFails,
    /// Every conversation reads and writes one shared set of records.
    IgnoresConversation,
    /// Records are kept per app, conversation and thread, but every user shares them.
    IgnoresUser,
    /// A second store of an id adds a second record instead of a conflict.
    DuplicateStoreAccepted,
    /// A mutate of an id never stored succeeds (and stores nothing).
    MutateOfMissingAccepted,
    /// A delete removes the id from every conversation.
    DeleteReachesEveryConversation,
    /// Bytes are kept under their id alone, and a fetched retrievable is re-attached to
    /// whatever bytes were last written under its id, by any conversation.
    BytesKeyedByIdAlone,
    /// Each conduit write goes into a fresh in-memory spool that is dropped with the call: the
    /// reader it returns works, and nothing stays readable by the id.
    ConduitsKeepNothing,
    /// Writes replace the bytes the returned reader shows, but a read by id finds the first
    /// bytes ever written under it.
    ReadBackKeepsFirstBytes,
    /// Bytes are kept per partition, but a fetched retrievable is re-attached to whatever bytes
    /// were last written under its id, by any conversation.
    ReattachByIdAlone,
}

#[derive(Default)]
struct Records {
    memories: Vec<Memory>,
    messages: Vec<Message>,
    thoughts: Vec<Thought>,
    tool_calls: Vec<ToolCall>,
    retrievables: Vec<Retrievable>,
    instructions: Vec<StandingInstruction>,
}

/// A record the adapters of these tests keep, and the key it is found by.
trait Keyed: Clone {
    const KIND: Primitive;
    fn key(&self) -> String;
}

macro_rules! keyed_by_id {
    ($($record:ty => $kind:expr),* $(,)?) => {$(
        impl Keyed for $record {
            const KIND: Primitive = $kind;
            fn key(&self) -> String {
                self.id().to_owned()
            }
        }
    )*};
}

keyed_by_id!(
    Memory => Primitive::Memories,
    Message => Primitive::Messages,
    Thought => Primitive::Thoughts,
    ToolCall => Primitive::ToolCalls,
    Retrievable => Primitive::Retrievables,
);

impl Keyed for StandingInstruction {
    const KIND: Primitive = Primitive::StandingInstructions;
    fn key(&self) -> String {
        self.render()
    }
}

/// A primitive's list within one conversation's records.
trait Listed: Keyed + Send + 'static {
    fn list(records: &mut Records) -> &mut Vec<Self>;
}

macro_rules! listed {
    ($($record:ty => $field:ident),* $(,)?) => {$(
        impl Listed for $record {
            fn list(records: &mut Records) -> &mut Vec<Self> {
                &mut records.$field
            }
        }
    )*};
}

listed!(
    Memory => memories,
    Message => messages,
    Thought => thoughts,
    ToolCall => tool_calls,
    Retrievable => retrievables,
    StandingInstruction => instructions,
);

/// Where `ReadBackKeepsFirstBytes` keeps the first bytes written under `key`.
fn first_key(key: &str) -> String {
    format!("first/{key}")
}

/// Where a record belongs: app, user, conversation and thread.
fn partition_key(ctx: &StorageContext) -> String {
    format!(
        "{}/{}/{}/{}",
        ctx.app_name(),
        ctx.user_id(),
        ctx.conversation_id(),
        ctx.thread_id()
    )
}

/// Every conversation's records, keyed by [`partition_key`].
struct InMemoryStorage {
    conversations: Mutex<HashMap<String, Records>>,
    retrievable_bytes: InMemorySpoolStore,
    media_bytes: InMemorySpoolStore,
    fault: Fault,
}

impl InMemoryStorage {
    fn new() -> Self {
        Self::with_fault(Fault::None)
    }

    fn with_fault(fault: Fault) -> Self {
        Self {
            conversations: Mutex::new(HashMap::new()),
            retrievable_bytes: InMemorySpoolStore::new(),
            media_bytes: InMemorySpoolStore::new(),
            fault,
        }
    }

    fn conversations(&self) -> Result<MutexGuard<'_, HashMap<String, Records>>, StorageError> {
        self.conversations
            .lock()
            .map_err(|_| StorageError::backend("the records lock was poisoned"))
    }

    fn conversation_key(&self, ctx: &StorageContext) -> String {
        match self.fault {
            Fault::IgnoresConversation => String::new(),
            Fault::IgnoresUser => format!(
                "{}/{}/{}",
                ctx.app_name(),
                ctx.conversation_id(),
                ctx.thread_id()
            ),
            _ => partition_key(ctx),
        }
    }

    // Runs `work` on the list of `T` in `ctx`'s conversation.
    fn with_list<T: Listed, R>(
        &self,
        ctx: &StorageContext,
        work: impl FnOnce(&mut Vec<T>) -> R,
    ) -> Result<R, StorageError> {
        let key = self.conversation_key(ctx);
        let mut conversations = self.conversations()?;
        Ok(work(T::list(conversations.entry(key).or_default())))
    }

    fn fetch<T: Listed>(&self, ctx: &StorageContext) -> Result<Vec<T>, StorageError> {
        let reversed = self.fault == Fault::FetchReversed;
        self.with_list(ctx, |list: &mut Vec<T>| {
            let mut fetched = list.clone();
            if reversed {
                fetched.reverse();
            }
            fetched
        })
    }

    fn store<T: Listed>(&self, ctx: &StorageContext, record: T) -> Result<(), StorageError> {
        if self.fault == Fault::StoreFails {
            return Err(StorageError::backend("disk full"));
        }
        let fault = self.fault;
        self.with_list(ctx, |list: &mut Vec<T>| {
            if list.iter().any(|stored| stored.key() == record.key())
                && fault != Fault::DuplicateStoreAccepted
            {
                // A standing instruction is its own key: storing it again keeps one copy.
                if T::KIND == Primitive::StandingInstructions {
                    return Ok(());
                }
                return Err(StorageError::Conflict {
                    kind: T::KIND,
                    id: record.key(),
                });
            }
            list.push(record);
            Ok(())
        })?
    }

    fn mutate<T: Listed>(&self, ctx: &StorageContext, record: T) -> Result<(), StorageError> {
        let fault = self.fault;
        self.with_list(ctx, |list: &mut Vec<T>| {
            let key = record.key();
            match list.iter_mut().find(|stored| stored.key() == key) {
                Some(_) if fault == Fault::MutateAppends => list.push(record),
                Some(_) if fault == Fault::MutateKeepsOldValue => {}
                Some(stored) => *stored = record,
                None if fault == Fault::MutateOfMissingAccepted => {}
                None => {
                    return Err(StorageError::NotFound {
                        kind: T::KIND,
                        id: key,
                    });
                }
            }
            Ok(())
        })?
    }

    fn delete<T: Listed>(&self, ctx: &StorageContext, key: &str) -> Result<(), StorageError> {
        match self.fault {
            Fault::DeleteIgnored => {}
            Fault::DeleteReachesEveryConversation => {
                for records in self.conversations()?.values_mut() {
                    T::list(records).retain(|stored| stored.key() != key);
                }
            }
            _ => self.with_list(ctx, |list: &mut Vec<T>| {
                list.retain(|stored| stored.key() != key);
            })?,
        }
        Ok(())
    }

    fn byte_key(&self, ctx: &StorageContext, id: &str) -> String {
        if self.fault == Fault::BytesKeyedByIdAlone {
            id.to_owned()
        } else {
            format!("{}/{id}", partition_key(ctx))
        }
    }

    async fn write_bytes(
        &self,
        store: &InMemorySpoolStore,
        ctx: &StorageContext,
        id: &str,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        if self.fault == Fault::ConduitsKeepNothing {
            return Ok(InMemorySpoolStore::new().write(id, bytes).await?);
        }
        let key = self.byte_key(ctx, id);
        if self.fault == Fault::RewriteKeepsFirstBytes
            && let Some(first) = store.read(&key).await?
        {
            return Ok(first);
        }
        let written = store.write(&key, bytes).await?;
        let copy_under = match self.fault {
            Fault::ReadBackKeepsFirstBytes if store.read(&first_key(&key)).await?.is_none() => {
                Some(first_key(&key))
            }
            Fault::ReattachByIdAlone => Some(id.to_owned()),
            _ => None,
        };
        if let Some(copy_under) = copy_under {
            store
                .write(&copy_under, written.read_all().await?.to_vec().into())
                .await?;
        }
        Ok(written)
    }

    // Where a fresh read by id looks.
    fn read_key(&self, ctx: &StorageContext, id: &str) -> String {
        let key = self.byte_key(ctx, id);
        if self.fault == Fault::ReadBackKeepsFirstBytes {
            first_key(&key)
        } else {
            key
        }
    }

    // As a database-backed adapter does: a spooled retrievable comes back attached to the bytes
    // stored for it.
    async fn reattach(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<Retrievable, StorageError> {
        let RetrievableContent::Artifact(artifact) = retrievable.content() else {
            return Ok(retrievable);
        };
        // The artifact's id is the reader's, which here is already partition-qualified; the
        // fault looks the retrievable's own id up instead, as a careless adapter would.
        let key = if self.fault == Fault::ReattachByIdAlone {
            retrievable.id().to_owned()
        } else {
            self.byte_key(ctx, artifact.id())
        };
        Ok(match self.retrievable_bytes.read(&key).await? {
            Some(reader) => retrievable.into_spooled(reader),
            None => retrievable,
        })
    }
}

impl StorageAdapter for InMemoryStorage {
    async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        self.fetch(ctx)
    }
    async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        self.fetch(ctx)
    }
    async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        self.fetch(ctx)
    }
    async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        self.fetch(ctx)
    }
    async fn fetch_tools(&self, _ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        Ok(Vec::new())
    }
    async fn fetch_retrievables(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Retrievable>, StorageError> {
        let mut fetched = Vec::new();
        for retrievable in self.fetch(ctx)? {
            fetched.push(self.reattach(ctx, retrievable).await?);
        }
        Ok(fetched)
    }
    async fn refresh_standing_instructions(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<StandingInstruction>, StorageError> {
        self.fetch(ctx)
    }
    async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        self.store(ctx, memory)
    }
    async fn mutate_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, memory)
    }
    async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<Memory>(ctx, &id)
    }
    async fn store_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.store(ctx, message)
    }
    async fn mutate_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, message)
    }
    async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<Message>(ctx, &id)
    }
    async fn store_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.store(ctx, thought)
    }
    async fn mutate_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, thought)
    }
    async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<Thought>(ctx, &id)
    }
    async fn store_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        self.store(ctx, tool_call)
    }
    async fn mutate_tool_call(
        &self,
        ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, tool_call)
    }
    async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.delete::<ToolCall>(ctx, &id)
    }
    async fn store_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.store(ctx, retrievable)
    }
    async fn mutate_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, retrievable)
    }
    async fn delete_retrievable(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        self.delete::<Retrievable>(ctx, &id)
    }
    async fn store_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.store(ctx, instruction)
    }
    async fn mutate_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.mutate(ctx, instruction)
    }
    async fn delete_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.delete::<StandingInstruction>(ctx, &instruction.render())
    }
    async fn store_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        let stored = self.write_bytes(&self.media_bytes, ctx, &id, bytes).await?;
        Ok(MediaReader::from_spool(stored))
    }
    async fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        self.write_bytes(&self.retrievable_bytes, ctx, &id, bytes)
            .await
    }
    async fn read_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<MediaReader>, StorageError> {
        let stored = self.media_bytes.read(&self.read_key(ctx, &id)).await?;
        Ok(stored.map(MediaReader::from_spool))
    }
    async fn read_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<SpoolReader>, StorageError> {
        Ok(self
            .retrievable_bytes
            .read(&self.read_key(ctx, &id))
            .await?)
    }
}

fn ctx() -> StorageContext {
    StorageContext::new("conversation-under-test")
}
