//! An adapter built by `storage_adapter!` over shared state: every primitive really persisted.

use super::*;

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
