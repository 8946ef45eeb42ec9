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

// ---------------------------------------------------------------------------------------------
// The conformance suite: passes correct adapters, names the first departure of broken ones.

#[tokio::test]
async fn noop_storage_conforms_when_it_declares_nothing_persisted() {
    let report = Conformance::new(NoopStorage::new())
        .run()
        .await
        .expect("NoopStorage honours the no-op contract");
    assert!(report.fully_checked().is_empty());
    assert_eq!(report.accepted_only(), &Primitive::ALL);
}

#[tokio::test]
async fn an_adapter_persisting_everything_conforms_fully() {
    let report = Conformance::new(InMemoryStorage::new())
        .persists_all(Primitive::ALL)
        .run()
        .await
        .expect("the in-memory adapter keeps the whole contract");
    assert_eq!(report.fully_checked(), &Primitive::ALL);
    assert!(report.accepted_only().is_empty());
}

#[tokio::test]
async fn the_suite_runs_through_the_erased_handle_the_runner_holds() {
    let report = Conformance::new(SharedStorage::new(InMemoryStorage::new()))
        .persists(Primitive::Messages)
        .persists(Primitive::ToolCalls)
        .run()
        .await
        .expect("erasing an adapter changes nothing it does");
    assert_eq!(
        report.fully_checked(),
        &[Primitive::Messages, Primitive::ToolCalls]
    );
}

#[tokio::test]
async fn two_runs_against_one_shared_adapter_do_not_see_each_other() {
    let shared = SharedStorage::new(InMemoryStorage::new());
    for _ in 0..2 {
        Conformance::new(shared.clone())
            .persists_all(Primitive::ALL)
            .run()
            .await
            .expect("each run only looks at its own records");
    }
}

#[tokio::test]
async fn a_mutate_that_appends_instead_of_replacing_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::MutateAppends))
        .persists(Primitive::Messages)
        .run()
        .await
        .expect_err("a mutate must replace in place");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Messages));
    assert_eq!(failure.step, Step::FetchAfterMutate);
    assert!(failure.expected.ends_with("-message-3]"), "{failure}");
    assert!(failure.found.ends_with("-message-2]"), "{failure}");
    assert_eq!(failure.found.matches("-message-").count(), 4, "{failure}");
}

#[tokio::test]
async fn a_mutate_that_keeps_the_old_value_is_caught_by_content() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::MutateKeepsOldValue))
        .persists(Primitive::ToolCalls)
        .run()
        .await
        .expect_err("a mutate must store the new value");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::ToolCalls));
    assert_eq!(failure.step, Step::FetchAfterMutate);
    assert!(
        failure
            .expected
            .contains("-tool-call-2` at position 1 to be {"),
        "{failure}"
    );
    assert!(failure.expected.contains("Sunny"), "{failure}");
    assert!(!failure.found.contains("Sunny"), "{failure}");
}

#[tokio::test]
async fn a_fetch_that_reverses_store_order_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::FetchReversed))
        .persists(Primitive::ToolCalls)
        .run()
        .await
        .expect_err("fetches must return records in store order");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::ToolCalls));
    assert_eq!(failure.step, Step::FetchAfterStore);
    assert!(failure.expected.contains("-tool-call-1, "), "{failure}");
    assert!(failure.found.contains("-tool-call-3, "), "{failure}");
}

#[tokio::test]
async fn a_delete_that_keeps_the_record_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::DeleteIgnored))
        .persists(Primitive::StandingInstructions)
        .run()
        .await
        .expect_err("a delete must remove the record");
    assert_eq!(
        failure.subject,
        Subject::Primitive(Primitive::StandingInstructions)
    );
    assert_eq!(failure.step, Step::FetchAfterDelete);
    assert!(failure.to_string().starts_with(
        "storage conformance failed for standing instructions at step `fetch after delete`: \
         expected instructions ["
    ));
}

#[tokio::test]
async fn a_conduit_whose_rewrite_keeps_the_first_bytes_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::RewriteKeepsFirstBytes))
        .run()
        .await
        .expect_err("a rewrite under the same id must replace the bytes");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::Rewrite);
    assert!(
        failure.expected.contains("the 6 bytes written"),
        "{failure}"
    );
}

#[tokio::test]
async fn declaring_a_primitive_the_adapter_does_not_keep_is_caught() {
    let failure = Conformance::new(NoopStorage::new())
        .persists(Primitive::Memories)
        .run()
        .await
        .expect_err("NoopStorage keeps no memories");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Memories));
    assert_eq!(failure.step, Step::FetchAfterStore);
    assert_eq!(failure.found, "ids []");
}

#[tokio::test]
async fn an_adapter_that_ignores_the_conversation_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::IgnoresConversation))
        .persists(Primitive::Messages)
        .run()
        .await
        .expect_err("a conversation must not see another's records");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Messages));
    assert_eq!(failure.step, Step::FetchFromOther(Partition::Conversation));
    assert_eq!(failure.expected, "ids []");
    assert!(failure.found.contains("-message-1, "), "{failure}");
}

#[tokio::test]
async fn an_adapter_that_lets_users_of_one_conversation_share_records_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::IgnoresUser))
        .persists(Primitive::Messages)
        .run()
        .await
        .expect_err("a user must not see another user's records");
    assert_eq!(failure.step, Step::FetchFromOther(Partition::User));
    assert!(
        failure
            .to_string()
            .contains("at step `fetch from another user (same app, conversation and thread)`"),
        "{failure}"
    );
}

#[tokio::test]
async fn an_adapter_that_accepts_a_second_store_of_an_id_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::DuplicateStoreAccepted))
        .persists(Primitive::Memories)
        .run()
        .await
        .expect_err("a second store of an id must be a conflict");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Memories));
    assert_eq!(failure.step, Step::DuplicateStore);
    assert!(
        failure
            .expected
            .contains("StorageError::Conflict { kind: Memories"),
        "{failure}"
    );
    assert_eq!(failure.found, "success");
}

#[tokio::test]
async fn an_adapter_that_accepts_a_mutate_of_a_missing_id_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::MutateOfMissingAccepted))
        .persists(Primitive::Thoughts)
        .run()
        .await
        .expect_err("a mutate of an id never stored must be NotFound");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Thoughts));
    assert_eq!(failure.step, Step::MutateMissing);
    assert!(
        failure.expected.contains("StorageError::NotFound"),
        "{failure}"
    );
    assert_eq!(failure.found, "success");
}

#[tokio::test]
async fn an_adapter_whose_delete_reaches_another_conversation_is_caught() {
    let failure = Conformance::new(InMemoryStorage::with_fault(
        Fault::DeleteReachesEveryConversation,
    ))
    .persists(Primitive::ToolCalls)
    .run()
    .await
    .expect_err("a delete must stay inside its conversation");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::ToolCalls));
    assert_eq!(failure.step, Step::ChangeFromOther(Partition::Conversation));
    assert!(failure.expected.ends_with("-tool-call-3]"), "{failure}");
    assert!(failure.found.ends_with("-tool-call-2]"), "{failure}");
}

#[tokio::test]
async fn two_conversations_writing_different_bytes_under_one_id_must_each_read_back_their_own() {
    // Nothing declared persisted: the fresh reads by id alone must catch the sharing.
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::BytesKeyedByIdAlone))
        .run()
        .await
        .expect_err("bytes kept under their id alone are shared between conversations");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::BytesPer(Partition::Conversation));
    // The first conversation's fresh read returns the 12 bytes the other wrote last.
    assert!(
        failure.expected.contains(
            "the 81 bytes written, read back by id through a fresh `read_retrievable_bytes`"
        ),
        "{failure}"
    );
    assert!(failure.found.starts_with("12 bytes"), "{failure}");
}

#[tokio::test]
async fn an_adapter_whose_conduits_persist_nothing_fails_the_read_back_through_a_fresh_call() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::ConduitsKeepNothing))
        .run()
        .await
        .expect_err("bytes must stay readable by their id after the write's reader");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::WriteText);
    assert!(
        failure
            .expected
            .contains("a fresh `read_retrievable_bytes` of `conformance-"),
        "{failure}"
    );
    assert_eq!(
        failure.found,
        "nothing stored under the id: the bytes were not kept"
    );
}

#[tokio::test]
async fn a_rewrite_under_the_same_id_must_replace_the_bytes_a_fresh_read_finds() {
    // The reader each write returns is right; only reading the id again shows the first bytes.
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::ReadBackKeepsFirstBytes))
        .run()
        .await
        .expect_err("a fresh read after a rewrite must find the new bytes");
    assert_eq!(failure.subject, Subject::RetrievableBytes);
    assert_eq!(failure.step, Step::Rewrite);
    assert!(
        failure
            .expected
            .contains("the 6 bytes written, read back by id"),
        "{failure}"
    );
}

#[tokio::test]
async fn a_fetched_retrievable_must_read_its_own_conversations_bytes() {
    // Fresh reads by id are right; only the re-attachment on fetch keys bytes by id alone.
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::ReattachByIdAlone))
        .persists(Primitive::Retrievables)
        .run()
        .await
        .expect_err("a conversation's fetched retrievable must read its own bytes");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Retrievables));
    assert_eq!(failure.step, Step::BytesPer(Partition::Conversation));
    assert!(
        failure.expected.contains("the first partition's text"),
        "{failure}"
    );
}

#[tokio::test]
async fn an_error_from_the_adapter_reaches_the_failure_unchanged() {
    let failure = Conformance::new(InMemoryStorage::with_fault(Fault::StoreFails))
        .run()
        .await
        .expect_err("a store that errors breaks even the no-op contract");
    assert_eq!(failure.subject, Subject::Primitive(Primitive::Memories));
    assert_eq!(failure.step, Step::Store);
    assert!(matches!(
        failure.error,
        Some(StorageError::Backend { ref message, .. }) if message == "disk full"
    ));
}

// ---------------------------------------------------------------------------------------------
// NoopStorage: empty fetches, honest conduits.

#[tokio::test]
async fn noop_fetches_are_empty_even_after_stores() {
    let storage = NoopStorage::new();
    let message = Message::user("m-1", "hello").expect("a valid message");
    storage
        .store_message(&ctx(), message)
        .await
        .expect("a no-op store succeeds");
    assert!(
        storage
            .fetch_messages(&ctx())
            .await
            .expect("a no-op fetch succeeds")
            .is_empty()
    );
}

#[tokio::test]
async fn noop_retrievable_bytes_are_kept_across_calls_and_shared_by_clones() {
    let storage = NoopStorage::new();
    let clone = storage.clone();
    storage
        .store_retrievable_bytes(&ctx(), "doc".into(), "one\ntwo".into())
        .await
        .expect("the conduit writes");
    let kept = clone
        .read_retrievable_bytes(&ctx(), "doc".into())
        .await
        .expect("the store reads")
        .expect("bytes written through one handle are visible through its clone");
    assert_eq!(
        kept.line(1).await.expect("the reader reads").as_deref(),
        Some("two")
    );
}

#[tokio::test]
async fn separate_noop_values_keep_separate_bytes() {
    let first = NoopStorage::new();
    let second = NoopStorage::new();
    first
        .store_media_bytes(&ctx(), "photo".into(), vec![1, 2, 3].into())
        .await
        .expect("the conduit writes");
    assert!(
        second
            .read_media_bytes(&ctx(), "photo".into())
            .await
            .expect("the store reads")
            .is_none()
    );
    let reader = first
        .read_media_bytes(&ctx(), "photo".into())
        .await
        .expect("the store reads")
        .expect("the bytes are kept under their id");
    assert_eq!(
        &reader.read_all().await.expect("the reader reads")[..],
        &[1, 2, 3]
    );
}

#[tokio::test]
async fn the_process_wide_noop_keeps_bytes_between_uses() {
    NoopStorage::shared()
        .store_retrievable_bytes(&ctx(), "process-wide-note".into(), "kept".into())
        .await
        .expect("the conduit writes");
    let kept = NoopStorage::shared()
        .read_retrievable_bytes(&ctx(), "process-wide-note".into())
        .await
        .expect("the store reads");
    assert!(kept.is_some());
}

#[tokio::test]
async fn noop_storage_keeps_bytes_per_conversation_each_reading_back_its_own() {
    let storage = NoopStorage::new();
    let first = StorageContext::new("conversation-a");
    let second = StorageContext::new("conversation-b");
    for (ctx, text) in [(&first, "a's notes"), (&second, "b's notes")] {
        storage
            .store_retrievable_bytes(ctx, "x".into(), text.into())
            .await
            .expect("the conduit writes");
        storage
            .store_media_bytes(ctx, "x".into(), text.as_bytes().to_vec().into())
            .await
            .expect("the conduit writes");
    }
    for (ctx, text) in [(&first, "a's notes"), (&second, "b's notes")] {
        let spooled = storage
            .read_retrievable_bytes(ctx, "x".into())
            .await
            .expect("the store reads")
            .expect("each conversation's bytes are kept");
        assert_eq!(
            &spooled.read_all().await.expect("reads")[..],
            text.as_bytes()
        );
        assert_eq!(
            spooled.id(),
            "x",
            "the reader keeps the id that was written"
        );
        let media = storage
            .read_media_bytes(ctx, "x".into())
            .await
            .expect("the store reads")
            .expect("each conversation's bytes are kept");
        assert_eq!(&media.read_all().await.expect("reads")[..], text.as_bytes());
    }
    let elsewhere = StorageContext::new("conversation-a").with_user_id("someone-else");
    assert!(
        storage
            .read_retrievable_bytes(&elsewhere, "x".into())
            .await
            .expect("the store reads")
            .is_none(),
        "another user's partition has written nothing under the id"
    );
}

// ---------------------------------------------------------------------------------------------
// The erased handle and the context.

#[tokio::test]
async fn the_shared_handle_reaches_the_adapter_it_wraps() {
    let adapter = Arc::new(InMemoryStorage::new());
    let storage = SharedStorage::from_arc(Arc::clone(&adapter));
    let message = Message::user("m-1", "hello").expect("a valid message");
    storage
        .clone()
        .store_message(&ctx(), message)
        .await
        .expect("the store succeeds");
    let messages: Vec<Message> = adapter.fetch(&ctx()).expect("the lock is healthy");
    assert_eq!(messages.len(), 1);
}

#[tokio::test]
async fn a_storage_error_reaches_the_caller_typed() {
    let storage = SharedStorage::new(InMemoryStorage::new());
    let error = storage
        .mutate_message(
            &ctx(),
            Message::user("never-stored", "hi").expect("a valid message"),
        )
        .await
        .expect_err("mutating an unknown id is refused");
    assert!(matches!(
        error,
        StorageError::NotFound { kind: Primitive::Messages, ref id } if id == "never-stored"
    ));
}

#[tokio::test]
async fn shared_calls_and_conformance_runs_can_move_to_other_tasks() {
    let storage = SharedStorage::new(InMemoryStorage::new());
    let for_a_task = storage.clone();
    tokio::spawn(async move {
        let message = Message::user("m-1", "hello").expect("a valid message");
        for_a_task.store_message(&ctx(), message).await
    })
    .await
    .expect("the task completes")
    .expect("the store succeeds");
    let fetched = storage
        .fetch_messages(&ctx())
        .await
        .expect("the fetch succeeds");
    assert_eq!(fetched.len(), 1);

    let run = Conformance::new(storage)
        .persists(Primitive::Messages)
        .run();
    tokio::spawn(run)
        .await
        .expect("the task completes")
        .expect("the adapter conforms");
}

#[test]
fn building_on_a_context_leaves_earlier_clones_unchanged() {
    let original = StorageContext::new("c").with_turn_id(TurnId::from("t-1"));
    let earlier = original.clone();
    let later = original.with_turn_id(TurnId::from("t-2"));
    assert_eq!(earlier.turn_id().as_str(), "t-1");
    assert_eq!(later.turn_id().as_str(), "t-2");
    assert_eq!(later.conversation_id(), earlier.conversation_id());
}

#[test]
fn a_storage_context_clone_sees_the_same_cancellation() {
    let ctx = ctx();
    let for_a_task = ctx.clone();
    ctx.cancellation().cancel();
    assert!(for_a_task.is_cancelled());
    assert_eq!(for_a_task.turn_id(), ctx.turn_id());
}

// ---------------------------------------------------------------------------------------------
// 50 MiB through each conduit of an adapter backed by files, never held whole in memory.

const CHUNK: usize = 64 * 1024;
const TOTAL: usize = 50 * 1024 * 1024;

/// Writes both conduits into files; every primitive is deliberately not persisted.
struct FileBackedStorage {
    retrievable_bytes: FileSpoolStore,
    media_bytes: FileSpoolStore,
    rest: NoopStorage,
}

impl StorageAdapter for FileBackedStorage {
    async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        self.rest.fetch_memories(ctx).await
    }
    async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        self.rest.fetch_messages(ctx).await
    }
    async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        self.rest.fetch_thoughts(ctx).await
    }
    async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        self.rest.fetch_tool_calls(ctx).await
    }
    async fn fetch_tools(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        self.rest.fetch_tools(ctx).await
    }
    async fn fetch_retrievables(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Retrievable>, StorageError> {
        self.rest.fetch_retrievables(ctx).await
    }
    async fn refresh_standing_instructions(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<StandingInstruction>, StorageError> {
        self.rest.refresh_standing_instructions(ctx).await
    }
    async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        self.rest.store_memory(ctx, memory).await
    }
    async fn mutate_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        self.rest.mutate_memory(ctx, memory).await
    }
    async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_memory(ctx, id).await
    }
    async fn store_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.rest.store_message(ctx, message).await
    }
    async fn mutate_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.rest.mutate_message(ctx, message).await
    }
    async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_message(ctx, id).await
    }
    async fn store_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.rest.store_thought(ctx, thought).await
    }
    async fn mutate_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.rest.mutate_thought(ctx, thought).await
    }
    async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_thought(ctx, id).await
    }
    async fn store_tool_call(
        &self,
        ctx: &StorageContext,
        call: ToolCall,
    ) -> Result<(), StorageError> {
        self.rest.store_tool_call(ctx, call).await
    }
    async fn mutate_tool_call(
        &self,
        ctx: &StorageContext,
        call: ToolCall,
    ) -> Result<(), StorageError> {
        self.rest.mutate_tool_call(ctx, call).await
    }
    async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_tool_call(ctx, id).await
    }
    async fn store_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.rest.store_retrievable(ctx, retrievable).await
    }
    async fn mutate_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.rest.mutate_retrievable(ctx, retrievable).await
    }
    async fn delete_retrievable(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        self.rest.delete_retrievable(ctx, id).await
    }
    async fn store_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.rest.store_standing_instruction(ctx, instruction).await
    }
    async fn mutate_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.rest
            .mutate_standing_instruction(ctx, instruction)
            .await
    }
    async fn delete_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.rest
            .delete_standing_instruction(ctx, instruction)
            .await
    }
    async fn store_media_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        let stored = self.media_bytes.write(&id, bytes).await?;
        Ok(MediaReader::from_spool(stored))
    }
    async fn store_retrievable_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        Ok(self.retrievable_bytes.write(&id, bytes).await?)
    }
    // Keyed by id alone: the 50 MiB test writes from one conversation only.
    async fn read_media_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
    ) -> Result<Option<MediaReader>, StorageError> {
        let stored = self.media_bytes.read(&id).await?;
        Ok(stored.map(MediaReader::from_spool))
    }
    async fn read_retrievable_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
    ) -> Result<Option<SpoolReader>, StorageError> {
        Ok(self.retrievable_bytes.read(&id).await?)
    }
}

/// FNV-1a, fed chunk by chunk, so the content hash never needs the whole payload at once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ContentHash(u64);

impl ContentHash {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn feed(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The `index`-th 64 KiB chunk of the payload: varied bytes, cheap to regenerate.
fn payload_chunk(index: usize) -> Bytes {
    let seed = index.wrapping_mul(2_654_435_761);
    (0..CHUNK)
        .map(|offset| (seed.wrapping_add(offset.wrapping_mul(31)) % 251) as u8)
        .collect::<Vec<u8>>()
        .into()
}

fn expected_hash() -> ContentHash {
    let mut hash = ContentHash::new();
    for index in 0..TOTAL / CHUNK {
        hash.feed(&payload_chunk(index));
    }
    hash
}

fn bytes_on_disk(folder: &std::path::Path) -> u64 {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

/// A 50 MiB source that generates each chunk only when asked, records the largest chunk it
/// handed over, and checks that earlier chunks have already reached `folder` — which can only
/// hold if the writer streams instead of collecting the input first.
fn streamed_payload(folder: std::path::PathBuf, largest_chunk: Arc<AtomicUsize>) -> ConduitBytes {
    let chunks = futures_util::stream::iter(0..TOTAL / CHUNK).then(move |index| {
        let folder = folder.clone();
        let largest_chunk = Arc::clone(&largest_chunk);
        async move {
            // Allow generous buffering (1 MiB) between the writer and the file.
            let must_be_written = index.saturating_sub(16) * CHUNK;
            let written = bytes_on_disk(&folder);
            if written < must_be_written as u64 {
                return Err(std::io::Error::other(format!(
                    "chunk {index} requested while only {written} bytes were on disk: the \
                     writer is collecting the stream instead of writing it as it arrives"
                )));
            }
            let chunk = payload_chunk(index);
            largest_chunk.fetch_max(chunk.len(), Ordering::SeqCst);
            Ok(chunk)
        }
    });
    ConduitBytes::from_stream(chunks)
}

async fn read_back(stream: adk::bytes::ByteStream) -> (usize, ContentHash, usize) {
    let mut stream = stream;
    let mut length = 0;
    let mut hash = ContentHash::new();
    let mut largest_chunk = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("the stored bytes read back");
        length += chunk.len();
        largest_chunk = largest_chunk.max(chunk.len());
        hash.feed(&chunk);
    }
    (length, hash, largest_chunk)
}

struct TemporaryFolder(std::path::PathBuf);

impl TemporaryFolder {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "adk-storage-test-{name}-{}-{}",
            std::process::id(),
            StorageContext::new("unused").turn_id()
        ));
        Self(path)
    }
}

impl Drop for TemporaryFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn the_streaming_check_catches_a_writer_that_collects_the_input_first() {
    // InMemorySpoolStore collects its input before storing it, so nothing reaches the folder
    // while the source is being read.
    let folder = TemporaryFolder::new("collecting");
    std::fs::create_dir_all(&folder.0).expect("the folder is created");
    let error = InMemorySpoolStore::new()
        .write(
            "collected",
            streamed_payload(folder.0.clone(), Arc::new(AtomicUsize::new(0))),
        )
        .await
        .expect_err("the source refuses to run ahead of the disk");
    assert!(
        error.to_string().contains("collecting the stream"),
        "{error}"
    );
}

#[tokio::test]
async fn fifty_mebibytes_stream_through_both_conduits_in_64_kib_chunks() {
    let retrievable_folder = TemporaryFolder::new("retrievable");
    let media_folder = TemporaryFolder::new("media");
    let storage = FileBackedStorage {
        retrievable_bytes: FileSpoolStore::open(&retrievable_folder.0)
            .await
            .expect("the folder opens"),
        media_bytes: FileSpoolStore::open(&media_folder.0)
            .await
            .expect("the folder opens"),
        rest: NoopStorage::new(),
    };
    let expected = expected_hash();

    let largest_written = Arc::new(AtomicUsize::new(0));
    let spool = storage
        .store_retrievable_bytes(
            &ctx(),
            "large-text".into(),
            streamed_payload(retrievable_folder.0.clone(), Arc::clone(&largest_written)),
        )
        .await
        .expect("50 MiB stream into the retrievable conduit");
    assert_eq!(spool.byte_length().await.expect("length"), TOTAL as u64);
    let (length, hash, largest_read) = read_back(spool.stream()).await;
    assert_eq!(length, TOTAL);
    assert_eq!(hash, expected);
    assert_eq!(largest_written.load(Ordering::SeqCst), CHUNK);
    assert!(
        largest_read <= CHUNK,
        "read a chunk of {largest_read} bytes"
    );

    let largest_written = Arc::new(AtomicUsize::new(0));
    let media = storage
        .store_media_bytes(
            &ctx(),
            "large-video".into(),
            streamed_payload(media_folder.0.clone(), Arc::clone(&largest_written)),
        )
        .await
        .expect("50 MiB stream into the media conduit");
    assert_eq!(media.byte_length().await, Some(TOTAL as u64));
    let (length, hash, largest_read) = read_back(media.stream()).await;
    assert_eq!(length, TOTAL);
    assert_eq!(hash, expected);
    assert_eq!(largest_written.load(Ordering::SeqCst), CHUNK);
    assert!(
        largest_read <= CHUNK,
        "read a chunk of {largest_read} bytes"
    );
}

// ---------------------------------------------------------------------------------------------
// An adapter built by `storage_adapter!` over shared state: every primitive really persisted.

/// A record the macro-built adapter keeps, and the key it is found by.
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

/// One primitive's records in store order.
struct Table<T>(Vec<T>);

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T: Keyed> Table<T> {
    fn all(&self) -> Vec<T> {
        self.0.clone()
    }

    fn store(&mut self, record: T) -> Result<(), StorageError> {
        if self.0.iter().any(|stored| stored.key() == record.key()) {
            return Err(StorageError::Conflict {
                kind: T::KIND,
                id: record.key(),
            });
        }
        self.0.push(record);
        Ok(())
    }

    fn mutate(&mut self, record: T) -> Result<(), StorageError> {
        let key = record.key();
        match self.0.iter_mut().find(|stored| stored.key() == key) {
            Some(stored) => {
                *stored = record;
                Ok(())
            }
            None => Err(StorageError::NotFound {
                kind: T::KIND,
                id: key,
            }),
        }
    }

    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.0.retain(|stored| stored.key() != key);
        Ok(())
    }
}

#[derive(Default)]
struct Tables {
    memories: Table<Memory>,
    messages: Table<Message>,
    thoughts: Table<Thought>,
    tool_calls: Table<ToolCall>,
    retrievables: Table<Retrievable>,
    instructions: Table<StandingInstruction>,
}

adk::storage_adapter! {
    /// Every primitive kept in memory, per conversation; clones share the records and the bytes.
    #[derive(Clone, Default)]
    struct MacroStorage {
        tables: Arc<Mutex<HashMap<String, Tables>>>,
        bytes: NoopStorage,
    }

    impl {
        fetch_memories: async |ctx| self.tables(ctx, |tables| tables.memories.all()),
        store_memory: async |ctx, memory| self.tables(ctx, |tables| tables.memories.store(memory))?,
        mutate_memory: async |ctx, memory| self.tables(ctx, |tables| tables.memories.mutate(memory))?,
        delete_memory: async |ctx, id| self.tables(ctx, |tables| tables.memories.delete(&id))?,
        fetch_messages: async |ctx| self.tables(ctx, |tables| tables.messages.all()),
        store_message: async |ctx, message| self.tables(ctx, |tables| tables.messages.store(message))?,
        mutate_message: async |ctx, message| self.tables(ctx, |tables| tables.messages.mutate(message))?,
        delete_message: async |ctx, id| self.tables(ctx, |tables| tables.messages.delete(&id))?,
        fetch_thoughts: async |ctx| self.tables(ctx, |tables| tables.thoughts.all()),
        store_thought: async |ctx, thought| self.tables(ctx, |tables| tables.thoughts.store(thought))?,
        mutate_thought: async |ctx, thought| self.tables(ctx, |tables| tables.thoughts.mutate(thought))?,
        delete_thought: async |ctx, id| self.tables(ctx, |tables| tables.thoughts.delete(&id))?,
        fetch_tool_calls: async |ctx| self.tables(ctx, |tables| tables.tool_calls.all()),
        store_tool_call: async |ctx, call| self.tables(ctx, |tables| tables.tool_calls.store(call))?,
        mutate_tool_call: async |ctx, call| self.tables(ctx, |tables| tables.tool_calls.mutate(call))?,
        delete_tool_call: async |ctx, id| self.tables(ctx, |tables| tables.tool_calls.delete(&id))?,
        fetch_retrievables: async |ctx| self.tables(ctx, |tables| tables.retrievables.all()),
        store_retrievable: async |ctx, item| self.tables(ctx, |tables| tables.retrievables.store(item))?,
        mutate_retrievable: async |ctx, item| self.tables(ctx, |tables| tables.retrievables.mutate(item))?,
        delete_retrievable: async |ctx, id| self.tables(ctx, |tables| tables.retrievables.delete(&id))?,
        refresh_standing_instructions: async |ctx| self.tables(ctx, |tables| tables.instructions.all()),
        store_standing_instruction: async |ctx, instruction| {
            self.tables(ctx, |tables| tables.instructions.store(instruction))?
        },
        mutate_standing_instruction: async |ctx, instruction| {
            self.tables(ctx, |tables| tables.instructions.mutate(instruction))?
        },
        delete_standing_instruction: async |ctx, instruction| {
            self.tables(ctx, |tables| tables.instructions.delete(&instruction.render()))?
        },
        store_media_bytes: async |ctx, id, bytes| {
            self.bytes.store_media_bytes(ctx, id, bytes).await
        },
        store_retrievable_bytes: async |ctx, id, bytes| {
            self.bytes.store_retrievable_bytes(ctx, id, bytes).await
        },
        read_media_bytes: async |ctx, id| self.bytes.read_media_bytes(ctx, id).await,
        read_retrievable_bytes: async |ctx, id| self.bytes.read_retrievable_bytes(ctx, id).await,
        ..noop
    }
}

impl MacroStorage {
    // Runs `work` on the tables of `ctx`'s conversation.
    fn tables<R>(
        &self,
        ctx: &StorageContext,
        work: impl FnOnce(&mut Tables) -> R,
    ) -> Result<R, StorageError> {
        let mut conversations = self
            .tables
            .lock()
            .map_err(|_| StorageError::backend("the tables lock was poisoned"))?;
        let tables = conversations.entry(partition_key(ctx)).or_default();
        Ok(work(tables))
    }
}

fn keys<T: Keyed>(records: &[T]) -> Vec<String> {
    records.iter().map(Keyed::key).collect()
}

fn json(record: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(record).expect("primitives serialize")
}

/// Store two records, fetch them in order, mutate the first in place, delete it, and check
/// each step through a clone (so the state is really shared).
macro_rules! round_trip_test {
    (
        $test:ident, $fetch:ident, $store:ident, $mutate:ident, $delete:ident,
        first: $first:expr, second: $second:expr, revised: $revised:expr,
        delete_with: |$record:ident| $delete_argument:expr
    ) => {
        #[tokio::test]
        async fn $test() {
            let storage = MacroStorage::default();
            let reader = storage.clone();
            let ctx = ctx();
            let (first, second, revised) = ($first, $second, $revised);

            storage
                .$store(&ctx, first.clone())
                .await
                .expect("store the first");
            storage
                .$store(&ctx, second.clone())
                .await
                .expect("store the second");
            let fetched = reader.$fetch(&ctx).await.expect("fetch after store");
            assert_eq!(keys(&fetched), vec![first.key(), second.key()]);
            assert_eq!(json(&fetched[0]), json(&first));

            storage
                .$mutate(&ctx, revised.clone())
                .await
                .expect("mutate the first");
            let fetched = reader.$fetch(&ctx).await.expect("fetch after mutate");
            assert_eq!(keys(&fetched), vec![revised.key(), second.key()]);
            assert_eq!(json(&fetched[0]), json(&revised));

            let $record = revised;
            storage
                .$delete(&ctx, $delete_argument)
                .await
                .expect("delete the first");
            let fetched = reader.$fetch(&ctx).await.expect("fetch after delete");
            assert_eq!(keys(&fetched), vec![second.key()]);
        }
    };
}

round_trip_test!(
    memories_round_trip_through_a_macro_built_adapter,
    fetch_memories, store_memory, mutate_memory, delete_memory,
    first: Memory::new("mem-1", "prefers tea", 0.5, 0.5).expect("valid"),
    second: Memory::new("mem-2", "lives in Lisbon", 0.9, 0.7).expect("valid"),
    revised: Memory::new("mem-1", "prefers coffee now", 0.8, 0.5).expect("valid"),
    delete_with: |record| record.id().to_owned()
);

round_trip_test!(
    messages_round_trip_through_a_macro_built_adapter,
    fetch_messages, store_message, mutate_message, delete_message,
    first: Message::user("msg-1", "hello").expect("valid"),
    second: Message::assistant("msg-2", "hi, how can I help?").expect("valid"),
    revised: Message::user("msg-1", "hello (edited)").expect("valid"),
    delete_with: |record| record.id().to_owned()
);

round_trip_test!(
    thoughts_round_trip_through_a_macro_built_adapter,
    fetch_thoughts, store_thought, mutate_thought, delete_thought,
    first: Thought::new("th-1", "the user greets").expect("valid"),
    second: Thought::new("th-2", "answer briefly").expect("valid"),
    revised: Thought::new("th-1", "the user greets warmly").expect("valid"),
    delete_with: |record| record.id().to_owned()
);

round_trip_test!(
    tool_calls_round_trip_through_a_macro_built_adapter,
    fetch_tool_calls, store_tool_call, mutate_tool_call, delete_tool_call,
    first: ToolCall::new("call-1", "forecast", serde_json::json!({ "city": "Lisbon" }))
        .expect("valid"),
    second: ToolCall::new("call-2", "clock", serde_json::json!({})).expect("valid"),
    revised: ToolCall::new("call-1", "forecast", serde_json::json!({ "city": "Lisbon" }))
        .expect("valid")
        .complete("Sunny"),
    delete_with: |record| record.id().to_owned()
);

round_trip_test!(
    retrievables_round_trip_through_a_macro_built_adapter,
    fetch_retrievables, store_retrievable, mutate_retrievable, delete_retrievable,
    first: Retrievable::new("doc-1", "Rain later.", TrustTier::FirstParty).expect("valid"),
    second: Retrievable::new("doc-2", "Wind at noon.", TrustTier::ThirdPartyPublic)
        .expect("valid"),
    revised: Retrievable::new("doc-1", "Rain this evening.", TrustTier::FirstParty)
        .expect("valid"),
    delete_with: |record| record.id().to_owned()
);

round_trip_test!(
    standing_instructions_round_trip_by_value_through_a_macro_built_adapter,
    refresh_standing_instructions, store_standing_instruction,
    mutate_standing_instruction, delete_standing_instruction,
    first: StandingInstruction::from("Answer in English."),
    second: StandingInstruction::from("Cite sources."),
    revised: StandingInstruction::from("Answer in English."),
    delete_with: |record| record
);

#[tokio::test]
async fn a_macro_built_adapter_passes_the_full_conformance_suite() {
    let report = Conformance::new(MacroStorage::default())
        .persists_all(Primitive::ALL)
        .run()
        .await
        .expect("the macro-built adapter keeps the whole contract");
    assert_eq!(report.fully_checked(), &Primitive::ALL);
}

#[tokio::test]
async fn a_macro_built_noop_adapter_passes_the_suite_declaring_nothing() {
    adk::storage_adapter! {
        struct Forgetful;
        impl { ..noop }
    }
    let report = Conformance::new(Forgetful)
        .run()
        .await
        .expect("..noop honours the no-op contract");
    assert!(report.fully_checked().is_empty());
}
