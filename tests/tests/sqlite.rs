//! The SQLite storage battery: it meets the storage contract, keeps each conversation's records
//! apart and in store order, keeps every acknowledged write through a reopen and through
//! SIGKILL, loses nothing under concurrent turns, and streams bytes in and out in bounded chunks.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::TurnRunner;
use adk::bytes::{CHUNK_SIZE, ConduitBytes};
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::primitives::{
    Memory, Message, Retrievable, RetrievableContent, StandingInstruction, Thought, ToolCall,
    TrustTier,
};
use adk::sqlite::{SqliteError, SqliteStorage};
use adk::storage::conformance::Conformance;
use adk::storage::{Primitive, StorageAdapter, StorageContext, StorageError};
use bytes::Bytes;
use futures_util::StreamExt;

async fn open_fresh() -> (tempfile::TempDir, SqliteStorage) {
    let folder = tempfile::tempdir().unwrap();
    let storage = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    (folder, storage)
}

fn message_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|message| message.id().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The contract

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_with_every_primitive_persisted() {
    let (_folder, storage) = open_fresh().await;
    let report = Conformance::new(storage)
        .persists_all(Primitive::ALL)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(report.fully_checked(), Primitive::ALL);
    assert!(report.accepted_only().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_against_an_in_memory_database() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    Conformance::new(storage)
        .persists_all(Primitive::ALL)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
}

/// Stores three records of one primitive, mutates the middle one, deletes it, and checks the
/// fetched keys after each step; `make(key, revision)` builds the records.
async fn round_trip<Record, Make, Key>(
    storage: &SqliteStorage,
    ctx: &StorageContext,
    make: Make,
    key_of: Key,
    keys: [&str; 3],
) where
    Record: Clone + serde::Serialize,
    Make: Fn(&str, u32) -> Record,
    Key: Fn(&Record) -> String,
    SqliteStorage: Calls<Record>,
{
    for key in keys {
        storage.store_record(ctx, make(key, 0)).await.unwrap();
    }
    let fetched = storage.fetch_records(ctx).await.unwrap();
    assert_eq!(fetched.iter().map(&key_of).collect::<Vec<_>>(), keys);

    let revised = make(keys[1], 1);
    storage.mutate_record(ctx, revised.clone()).await.unwrap();
    let fetched = storage.fetch_records(ctx).await.unwrap();
    assert_eq!(
        fetched.iter().map(&key_of).collect::<Vec<_>>(),
        keys,
        "the mutated record keeps its position"
    );
    assert_eq!(
        serde_json::to_value(&fetched[1]).unwrap(),
        serde_json::to_value(&revised).unwrap(),
        "the fetch returns the mutated value"
    );

    storage.delete_record(ctx, revised).await.unwrap();
    let fetched = storage.fetch_records(ctx).await.unwrap();
    assert_eq!(
        fetched.iter().map(&key_of).collect::<Vec<_>>(),
        [keys[0], keys[2]]
    );
}

/// One primitive's four callbacks under common names, so `round_trip` serves all six.
trait Calls<Record> {
    async fn fetch_records(&self, ctx: &StorageContext) -> Result<Vec<Record>, StorageError>;
    async fn store_record(&self, ctx: &StorageContext, record: Record) -> Result<(), StorageError>;
    async fn mutate_record(&self, ctx: &StorageContext, record: Record)
    -> Result<(), StorageError>;
    async fn delete_record(&self, ctx: &StorageContext, record: Record)
    -> Result<(), StorageError>;
}

macro_rules! calls {
    ($record:ty, $fetch:ident, $store:ident, $mutate:ident, $delete:ident, |$r:ident| $key:expr) => {
        impl Calls<$record> for SqliteStorage {
            async fn fetch_records(
                &self,
                ctx: &StorageContext,
            ) -> Result<Vec<$record>, StorageError> {
                self.$fetch(ctx).await
            }
            async fn store_record(
                &self,
                ctx: &StorageContext,
                record: $record,
            ) -> Result<(), StorageError> {
                self.$store(ctx, record).await
            }
            async fn mutate_record(
                &self,
                ctx: &StorageContext,
                record: $record,
            ) -> Result<(), StorageError> {
                self.$mutate(ctx, record).await
            }
            async fn delete_record(
                &self,
                ctx: &StorageContext,
                $r: $record,
            ) -> Result<(), StorageError> {
                self.$delete(ctx, $key).await
            }
        }
    };
}

calls!(
    Memory,
    fetch_memories,
    store_memory,
    mutate_memory,
    delete_memory,
    |r| r.id().to_owned()
);
calls!(
    Message,
    fetch_messages,
    store_message,
    mutate_message,
    delete_message,
    |r| r.id().to_owned()
);
calls!(
    Thought,
    fetch_thoughts,
    store_thought,
    mutate_thought,
    delete_thought,
    |r| r.id().to_owned()
);
calls!(
    ToolCall,
    fetch_tool_calls,
    store_tool_call,
    mutate_tool_call,
    delete_tool_call,
    |r| r.id().to_owned()
);
calls!(
    Retrievable,
    fetch_retrievables,
    store_retrievable,
    mutate_retrievable,
    delete_retrievable,
    |r| r.id().to_owned()
);
calls!(
    StandingInstruction,
    refresh_standing_instructions,
    store_standing_instruction,
    mutate_standing_instruction,
    delete_standing_instruction,
    |r| r
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_primitive_round_trips_and_a_mutate_keeps_its_position() {
    let (_folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("round-trips");
    let keys = ["first", "second", "third"];
    round_trip(
        &storage,
        &ctx,
        |key, revision| Memory::new(key, format!("fact {revision}"), 0.5, 0.5).unwrap(),
        |memory| memory.id().to_owned(),
        keys,
    )
    .await;
    round_trip(
        &storage,
        &ctx,
        |key, revision| Message::user(key, format!("text {revision}")).unwrap(),
        |message| message.id().to_owned(),
        keys,
    )
    .await;
    round_trip(
        &storage,
        &ctx,
        |key, revision| Thought::new(key, format!("thinking {revision}")).unwrap(),
        |thought| thought.id().to_owned(),
        keys,
    )
    .await;
    round_trip(
        &storage,
        &ctx,
        |key, revision| {
            let pending =
                ToolCall::new(key, "forecast", serde_json::json!({"city": "Oslo"})).unwrap();
            if revision == 0 {
                pending
            } else {
                pending.complete("Snow")
            }
        },
        |tool_call| tool_call.id().to_owned(),
        keys,
    )
    .await;
    round_trip(
        &storage,
        &ctx,
        |key, revision| {
            Retrievable::new(key, format!("chunk {revision}"), TrustTier::FirstParty).unwrap()
        },
        |retrievable| retrievable.id().to_owned(),
        keys,
    )
    .await;
    // Identified by value: the "mutated" instruction is the same text.
    round_trip(
        &storage,
        &ctx,
        |key, _revision| StandingInstruction::new(key).unwrap(),
        StandingInstruction::render,
        ["Be brief.", "Cite sources.", "Answer in English."],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_another_conversation_are_invisible() {
    let (_folder, storage) = open_fresh().await;
    let ours = StorageContext::new("ours");
    let theirs = StorageContext::new("theirs");
    storage
        .store_message(&theirs, Message::user("shared-id", "theirs").unwrap())
        .await
        .unwrap();
    storage
        .store_memory(&theirs, Memory::new("memory", "theirs", 0.5, 0.5).unwrap())
        .await
        .unwrap();
    storage
        .store_standing_instruction(&theirs, StandingInstruction::from("Be brief."))
        .await
        .unwrap();

    assert!(storage.fetch_messages(&ours).await.unwrap().is_empty());
    assert!(storage.fetch_memories(&ours).await.unwrap().is_empty());
    assert!(
        storage
            .refresh_standing_instructions(&ours)
            .await
            .unwrap()
            .is_empty()
    );
    // The same id in another conversation is a different record.
    storage
        .store_message(&ours, Message::user("shared-id", "ours").unwrap())
        .await
        .unwrap();
    let error = storage
        .mutate_memory(&ours, Memory::new("memory", "ours", 0.5, 0.5).unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(error, StorageError::NotFound { kind: Primitive::Memories, ref id } if id == "memory")
    );
    storage
        .delete_message(&ours, "shared-id".into())
        .await
        .unwrap();
    assert_eq!(
        message_ids(&storage.fetch_messages(&theirs).await.unwrap()),
        ["shared-id"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_and_bytes_of_another_app_user_or_thread_are_invisible() {
    let (_folder, storage) = open_fresh().await;
    let ours = StorageContext::new("shared-conversation");
    storage
        .store_message(&ours, Message::user("m-1", "ours").unwrap())
        .await
        .unwrap();
    storage
        .store_media_bytes(&ours, "photo".into(), b"ours".to_vec().into())
        .await
        .unwrap();
    let neighbours = [
        StorageContext::new("shared-conversation").with_app_name("another-app"),
        StorageContext::new("shared-conversation").with_user_id("another-user"),
        StorageContext::new("shared-conversation").with_thread_id("another-thread"),
    ];
    for theirs in &neighbours {
        assert!(storage.fetch_messages(theirs).await.unwrap().is_empty());
        assert!(
            storage
                .media_reader(theirs, "photo")
                .await
                .unwrap()
                .is_none()
        );
        // The same ids are free for them, and their writes leave ours alone.
        storage
            .store_message(theirs, Message::user("m-1", "theirs").unwrap())
            .await
            .unwrap();
        storage
            .store_media_bytes(theirs, "photo".into(), b"theirs".to_vec().into())
            .await
            .unwrap();
    }
    let fetched = storage.fetch_messages(&ours).await.unwrap();
    assert_eq!(fetched.len(), 1);
    assert_eq!(
        fetched[0].content().map(ToString::to_string).as_deref(),
        Some("ours")
    );
    let photo = storage.media_reader(&ours, "photo").await.unwrap().unwrap();
    assert_eq!(&photo.read_all().await.unwrap()[..], b"ours");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storing_an_existing_id_is_a_conflict_but_an_equal_instruction_is_kept_once() {
    let (_folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("conflicts");
    storage
        .store_message(&ctx, Message::user("m-1", "first").unwrap())
        .await
        .unwrap();
    let error = storage
        .store_message(&ctx, Message::user("m-1", "again").unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(error, StorageError::Conflict { kind: Primitive::Messages, ref id } if id == "m-1")
    );
    assert_eq!(
        storage.fetch_messages(&ctx).await.unwrap()[0]
            .content()
            .unwrap()
            .render(),
        "first"
    );

    for _ in 0..2 {
        storage
            .store_standing_instruction(&ctx, StandingInstruction::from("Cite sources."))
            .await
            .unwrap();
    }
    assert_eq!(
        storage.refresh_standing_instructions(&ctx).await.unwrap(),
        [StandingInstruction::from("Cite sources.")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_schema_is_refused_with_both_versions_named() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("newer.db");
    // As a newer adk would have left it.
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();

    let error = SqliteStorage::open(&path).await.unwrap_err();
    let source = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<SqliteError>())
        .unwrap_or_else(|| panic!("not a SqliteError: {error}"));
    assert!(matches!(
        source,
        SqliteError::SchemaTooNew {
            found: 99,
            supported: 5,
            ..
        }
    ));
    assert!(error.to_string().contains("schema version 99"), "{error}");
}

// The version 1 schema's byte tables, as adk wrote them before bytes were scoped per
// conversation: one set of bytes per (conduit, id) for every conversation.
const VERSION_1_PRIMITIVE_TABLES: [&str; 6] = [
    "memories",
    "messages",
    "thoughts",
    "tool_calls",
    "retrievables",
    "standing_instructions",
];

const VERSION_1_SCHEMA: &str = "
    CREATE TABLE blobs (
        key INTEGER PRIMARY KEY AUTOINCREMENT, conduit TEXT NOT NULL, id TEXT NOT NULL,
        conversation_id TEXT NOT NULL, byte_length INTEGER NOT NULL,
        chunk_count INTEGER NOT NULL, UNIQUE (conduit, id));
    CREATE TABLE blob_chunks (
        blob_key INTEGER NOT NULL REFERENCES blobs (key) ON DELETE CASCADE,
        sequence INTEGER NOT NULL, data BLOB NOT NULL,
        PRIMARY KEY (blob_key, sequence)) WITHOUT ROWID;
    INSERT INTO blobs VALUES (1, 'retrievable', 'manual', 'owner', 9, 2);
    INSERT INTO blob_chunks VALUES (1, 0, CAST('step ' AS BLOB)), (1, 1, CAST('one' AS BLOB));
    PRAGMA user_version = 1;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_file_is_upgraded_and_its_records_and_bytes_stay_with_the_conversation_that_wrote_them()
 {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("version-1.db");
    let connection = rusqlite::Connection::open(&path).unwrap();
    for table in VERSION_1_PRIMITIVE_TABLES {
        connection
            .execute_batch(&format!(
                "CREATE TABLE {table} (
                    sequence INTEGER PRIMARY KEY, conversation_id TEXT NOT NULL,
                    id TEXT NOT NULL, turn_id TEXT NOT NULL, record TEXT NOT NULL,
                    UNIQUE (conversation_id, id));
                 CREATE INDEX {table}_in_order ON {table} (conversation_id, sequence);"
            ))
            .unwrap();
    }
    for (id, text) in [("m-1", "first"), ("m-2", "second")] {
        let json = serde_json::to_string(&Message::user(id, text).unwrap()).unwrap();
        connection
            .execute(
                "INSERT INTO messages (conversation_id, id, turn_id, record)
                 VALUES ('owner', ?1, 't-1', ?2)",
                [id, &json],
            )
            .unwrap();
    }
    connection.execute_batch(VERSION_1_SCHEMA).unwrap();
    drop(connection);

    let storage = SqliteStorage::open(&path).await.unwrap();
    let owner = StorageContext::new("owner");
    // Records written before apps, users and threads existed belong to the defaults.
    assert_eq!(
        message_ids(&storage.fetch_messages(&owner).await.unwrap()),
        ["m-1", "m-2"]
    );
    assert!(
        storage
            .fetch_messages(&StorageContext::new("owner").with_user_id("someone-else"))
            .await
            .unwrap()
            .is_empty()
    );
    let stranger = StorageContext::new("stranger");
    let kept = storage
        .retrievable_reader(&owner, "manual")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&kept.read_all().await.unwrap()[..], b"step one");
    assert!(
        storage
            .retrievable_reader(&stranger, "manual")
            .await
            .unwrap()
            .is_none()
    );
    // Another conversation may now use the id without touching the owner's bytes.
    storage
        .store_retrievable_bytes(&stranger, "manual".into(), "theirs".into())
        .await
        .unwrap();
    assert_eq!(&kept.read_all().await.unwrap()[..], b"step one");
    assert_eq!(storage.integrity_check().await.unwrap(), "ok");
    drop(storage);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_conversations_writing_bytes_under_one_id_each_read_back_their_own() {
    let (_folder, storage) = open_fresh().await;
    let alice = StorageContext::new("alice");
    let bob = StorageContext::new("bob");
    let chunk = |text: &'static str| {
        let chunk = Retrievable::new("notes", text, TrustTier::FirstParty).unwrap();
        (chunk.clone(), chunk.spoolable_text().unwrap())
    };
    for (ctx, text) in [(&alice, "alice's notes"), (&bob, "bob's notes")] {
        let (record, spooled) = chunk(text);
        let reader = storage
            .store_retrievable_bytes(ctx, "notes".into(), spooled.into())
            .await
            .unwrap();
        storage
            .store_retrievable(ctx, record.into_spooled(reader))
            .await
            .unwrap();
        storage
            .store_media_bytes(ctx, "photo".into(), text.as_bytes().to_vec().into())
            .await
            .unwrap();
    }

    for (ctx, text) in [(&alice, "alice's notes"), (&bob, "bob's notes")] {
        let fetched = storage.fetch_retrievables(ctx).await.unwrap();
        assert_eq!(fetched[0].content_string().await.unwrap(), text);
        let spool = storage
            .retrievable_reader(ctx, "notes")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&spool.read_all().await.unwrap()[..], text.as_bytes());
        let media = storage.media_reader(ctx, "photo").await.unwrap().unwrap();
        assert_eq!(&media.read_all().await.unwrap()[..], text.as_bytes());
    }
    assert!(
        storage
            .media_reader(&StorageContext::new("carol"), "photo")
            .await
            .unwrap()
            .is_none()
    );
}

// A stream that yields `first` and then nothing until it is dropped, reporting when it is.
fn stalled_after(first: &'static [u8], dropped: Arc<tokio::sync::Notify>) -> ConduitBytes {
    struct ReportDrop(Arc<tokio::sync::Notify>);
    impl Drop for ReportDrop {
        fn drop(&mut self) {
            self.0.notify_one();
        }
    }
    let guard = ReportDrop(dropped);
    ConduitBytes::from_stream(
        futures_util::stream::once(async move { Ok(Bytes::from_static(first)) }).chain(
            futures_util::stream::once(async move {
                let _guard = guard;
                std::future::pending::<std::io::Result<Bytes>>().await
            }),
        ),
    )
}

fn blob_rows(path: &std::path::Path) -> (i64, i64) {
    let connection = rusqlite::Connection::open(path).unwrap();
    let count = |table: &str| {
        connection
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .unwrap()
    };
    (count("blobs"), count("blob_chunks"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_delays_no_other_conversations_write() {
    let (_folder, storage) = open_fresh().await;
    let stalled_turn = tokio_util::sync::CancellationToken::new();
    let stalled_ctx = StorageContext::new("slow").with_cancellation(stalled_turn.clone());
    let dropped = Arc::new(tokio::sync::Notify::new());
    let upload = {
        let storage = storage.clone();
        let stream = stalled_after(b"first chunk", Arc::clone(&dropped));
        tokio::spawn(async move {
            storage
                .store_media_bytes(&stalled_ctx, "upload".into(), stream)
                .await
        })
    };
    // Let the stalled upload begin and write its first chunk.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    let other = StorageContext::new("fast");
    // Far longer than any write takes; before staging, these waited for the stalled stream
    // until the turn was cancelled.
    let patience = std::time::Duration::from_secs(20);
    tokio::time::timeout(
        patience,
        storage.store_message(&other, Message::user("m-1", "hello").unwrap()),
    )
    .await
    .expect("a message write waited for another conversation's stalled upload")
    .unwrap();
    tokio::time::timeout(
        patience,
        storage.store_media_bytes(&other, "upload".into(), b"whole".to_vec().into()),
    )
    .await
    .expect("a byte write waited for another conversation's stalled upload")
    .unwrap();
    assert!(!upload.is_finished());

    stalled_turn.cancel();
    let error = upload.await.unwrap().unwrap_err();
    assert!(matches!(error, StorageError::Cancelled { .. }), "{error}");
    dropped.notified().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_conversations_streaming_one_id_beside_a_stalled_third_upload_neither_wait_nor_leak() {
    let (folder, storage) = open_fresh().await;
    let database = folder.path().join("agent.db");
    let stalled_turn = tokio_util::sync::CancellationToken::new();
    let stalled_ctx = StorageContext::new("third").with_cancellation(stalled_turn.clone());
    let dropped = Arc::new(tokio::sync::Notify::new());
    let stalled = {
        let storage = storage.clone();
        let stream = stalled_after(b"never finished", Arc::clone(&dropped));
        tokio::spawn(async move {
            storage
                .store_retrievable_bytes(&stalled_ctx, "shared".into(), stream)
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    let streams = ["first", "second"].map(|conversation| {
        let storage = storage.clone();
        tokio::spawn(async move {
            let ctx = StorageContext::new(conversation);
            let line = format!("{conversation} conversation's line\n");
            let chunks: Vec<std::io::Result<Bytes>> =
                (0..200).map(|_| Ok(Bytes::from(line.clone()))).collect();
            let reader = storage
                .store_retrievable_bytes(
                    &ctx,
                    "shared".into(),
                    ConduitBytes::from_stream(futures_util::stream::iter(chunks)),
                )
                .await
                .unwrap();
            (ctx, line.repeat(200), reader)
        })
    });
    for stream in streams {
        let (ctx, expected, reader) =
            tokio::time::timeout(std::time::Duration::from_secs(30), stream)
                .await
                .expect("a stream waited for the stalled upload")
                .unwrap();
        assert_eq!(&reader.read_all().await.unwrap()[..], expected.as_bytes());
        let again = storage
            .retrievable_reader(&ctx, "shared")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&again.read_all().await.unwrap()[..], expected.as_bytes());
    }
    assert!(!stalled.is_finished());

    stalled_turn.cancel();
    assert!(matches!(
        stalled.await.unwrap().unwrap_err(),
        StorageError::Cancelled { .. }
    ));
    dropped.notified().await;
    // The stalled upload's staged rows are removed (by a job queued behind this write at the
    // latest), and only the two published payloads remain.
    storage
        .store_message(
            &StorageContext::new("third"),
            Message::user("after", "x").unwrap(),
        )
        .await
        .unwrap();
    assert!(
        storage
            .retrievable_reader(&StorageContext::new("third"), "shared")
            .await
            .unwrap()
            .is_none()
    );
    let (blobs, chunks) = blob_rows(&database);
    assert_eq!(blobs, 2, "a staged or replaced blob row was left behind");
    // 200 lines of under 30 bytes fit in one 64 KiB chunk per arriving line: 200 each.
    assert_eq!(chunks, 400, "chunks of a staged upload were left behind");
}

// ---------------------------------------------------------------------------------------------
// Durability

fn storing_runner(storage: SqliteStorage) -> TurnRunner {
    TurnRunner::builder()
        .storage(storage)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let turn: u64 = ctx.stash.get("test.turn")?.ok_or("no turn number")?;
                ctx.store_message(Message::user(format!("{turn}-question"), "why?")?)
                    .await?;
                tokio::task::yield_now().await;
                ctx.store_message(Message::assistant(format!("{turn}-answer"), "because")?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

fn turn(conversation: &str, number: u64) -> RawTurnContext {
    RawTurnContext::new(conversation, "You are a test.")
        .stash(serde_json::json!({ "test": { "turn": number } }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_writes_survive_reopening_the_file() {
    let (folder, storage) = open_fresh().await;
    let outcome = storing_runner(storage).run(turn("kept", 7)).await.unwrap();
    assert!(outcome.is_completed());
    drop(outcome);

    let reopened = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    let ctx = StorageContext::new("kept");
    assert_eq!(
        message_ids(&reopened.fetch_messages(&ctx).await.unwrap()),
        ["7-question", "7-answer"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_stream_leaves_a_sound_database_with_every_acknowledged_write() {
    let folder = tempfile::tempdir().unwrap();
    let database = folder.path().join("crash.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sqlite_turns"))
        .arg(&database)
        .arg("crashing")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 200 {
        match lines.next() {
            Some(line) => acknowledged.push(line.unwrap()),
            None => panic!("the child stopped early after {acknowledged:?}"),
        }
    }
    // SIGKILL on Unix: no destructor, no flush, no checkpoint runs in the child.
    child.kill().unwrap();
    child.wait().unwrap();
    // Lines already in the pipe were printed after their writes were acknowledged too.
    acknowledged.extend(lines.map_while(Result::ok));

    let storage = SqliteStorage::open(&database).await.unwrap();
    assert_eq!(storage.integrity_check().await.unwrap(), "ok");
    let stored: HashSet<String> = message_ids(
        &storage
            .fetch_messages(&StorageContext::new("crashing"))
            .await
            .unwrap(),
    )
    .into_iter()
    .collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|id| !stored.contains(*id))
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_turns_lose_no_write_and_keep_each_turns_order() {
    const TURNS: u64 = 200;
    const CONVERSATIONS: u64 = 4;
    let (_folder, storage) = open_fresh().await;
    let runner = storing_runner(storage.clone());
    let tasks: Vec<_> = (0..TURNS)
        .map(|number| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let conversation = format!("busy-{}", number % CONVERSATIONS);
                runner.run(turn(&conversation, number)).await
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().unwrap().is_completed());
    }

    for conversation in 0..CONVERSATIONS {
        let ctx = StorageContext::new(format!("busy-{conversation}"));
        let ids = message_ids(&storage.fetch_messages(&ctx).await.unwrap());
        let turns: Vec<u64> = (0..TURNS)
            .filter(|number| number % CONVERSATIONS == conversation)
            .collect();
        assert_eq!(ids.len(), turns.len() * 2, "conversation {conversation}");
        for number in turns {
            let question = ids
                .iter()
                .position(|id| *id == format!("{number}-question"));
            let answer = ids.iter().position(|id| *id == format!("{number}-answer"));
            match (question, answer) {
                (Some(question), Some(answer)) => assert!(
                    question < answer,
                    "turn {number}: the answer was fetched before the question"
                ),
                _ => panic!("turn {number} lost a message: {ids:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Byte conduits

fn chunked(parts: &[&'static [u8]]) -> ConduitBytes {
    let chunks: Vec<std::io::Result<Bytes>> = parts
        .iter()
        .map(|part| Ok(Bytes::from_static(part)))
        .collect();
    ConduitBytes::from_stream(futures_util::stream::iter(chunks))
}

/// An id, a way to make the input, and the bytes it should store.
type ConduitInput = (&'static str, fn() -> ConduitBytes, &'static [u8]);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_conduits_keep_text_bytes_and_streams_across_a_reopen() {
    let (folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("bytes");
    let inputs: [ConduitInput; 3] = [
        (
            "text",
            || "línea uno\r\nline two\n".into(),
            "línea uno\r\nline two\n".as_bytes(),
        ),
        (
            "bytes",
            || vec![0_u8, 0xff, b'\n', 0x80].into(),
            &[0, 0xff, b'\n', 0x80],
        ),
        (
            "stream",
            || chunked(&[b"str", b"eam\xe2", b"\x9c\x93"]),
            "stream✓".as_bytes(),
        ),
    ];
    for (id, input, expected) in inputs {
        let spool = storage
            .store_retrievable_bytes(&ctx, id.into(), input())
            .await
            .unwrap();
        assert_eq!(&spool.read_all().await.unwrap()[..], expected, "{id}");
        assert_eq!(spool.describe().unwrap().store(), "sqlite");
        let media = storage
            .store_media_bytes(&ctx, id.into(), input())
            .await
            .unwrap();
        assert_eq!(&media.read_all().await.unwrap()[..], expected, "{id}");
        assert_eq!(media.byte_length().await, Some(expected.len() as u64));
    }

    let reopened = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    for (id, _, expected) in inputs {
        let spool = reopened
            .retrievable_reader(&ctx, id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&spool.read_all().await.unwrap()[..], expected, "{id}");
        let media = reopened.media_reader(&ctx, id).await.unwrap().unwrap();
        assert_eq!(&media.read_all().await.unwrap()[..], expected, "{id}");
    }
    assert!(
        reopened
            .media_reader(&ctx, "absent")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_stream_stores_nothing_and_keeps_the_earlier_bytes() {
    let (_folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("bytes");
    storage
        .store_retrievable_bytes(&ctx, "doc".into(), "kept".into())
        .await
        .unwrap();
    let failing = ConduitBytes::from_stream(futures_util::stream::iter(vec![
        Ok(Bytes::from_static(b"partial")),
        Err(std::io::Error::other("the upload broke")),
    ]));
    let error = storage
        .store_retrievable_bytes(&ctx, "doc".into(), failing)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the upload broke"), "{error}");
    let kept = storage
        .retrievable_reader(&ctx, "doc")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&kept.read_all().await.unwrap()[..], b"kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetched_retrievable_reads_its_spooled_text_after_a_reopen() {
    let (folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("spooled");
    let chunk = Retrievable::new("manual", "step one\nstep two", TrustTier::FirstParty).unwrap();
    let text = chunk.spoolable_text().unwrap();
    let reader = storage
        .store_retrievable_bytes(&ctx, chunk.id().to_owned(), text.into())
        .await
        .unwrap();
    storage
        .store_retrievable(&ctx, chunk.into_spooled(reader))
        .await
        .unwrap();

    let reopened = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    let fetched = reopened.fetch_retrievables(&ctx).await.unwrap();
    assert!(matches!(
        fetched[0].content(),
        RetrievableContent::Artifact(artifact) if !artifact.reader().is_detached()
    ));
    assert_eq!(
        fetched[0].content_string().await.unwrap(),
        "step one\nstep two"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_stops_a_stalled_stream_and_frees_the_writer() {
    let (_folder, storage) = open_fresh().await;
    let cancellation = tokio_util::sync::CancellationToken::new();
    let ctx = StorageContext::new("stalled").with_cancellation(cancellation.clone());
    // One chunk, then the turn is cancelled and the stream never yields again.
    let stalled = futures_util::stream::once(async { Ok(Bytes::from_static(b"partial")) }).chain(
        futures_util::stream::once(async move {
            cancellation.cancel();
            std::future::pending::<std::io::Result<Bytes>>().await
        }),
    );

    let error = storage
        .store_media_bytes(&ctx, "upload".into(), ConduitBytes::from_stream(stalled))
        .await
        .unwrap_err();

    assert!(matches!(error, StorageError::Cancelled { .. }), "{error}");
    assert!(
        storage
            .media_reader(&ctx, "upload")
            .await
            .unwrap()
            .is_none()
    );
    storage
        .store_message(&ctx, Message::user("after", "still writable").unwrap())
        .await
        .unwrap();
}

/// A payload produced one chunk at a time; each chunk reports when it is dropped, so the source
/// knows the most bytes of its payload held at any moment.
struct CountingSource {
    alive: Arc<AtomicUsize>,
    most_alive: Arc<AtomicUsize>,
}

struct CountedChunk {
    bytes: Vec<u8>,
    alive: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for CountedChunk {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for CountedChunk {
    fn drop(&mut self) {
        self.alive.fetch_sub(self.bytes.len(), Ordering::SeqCst);
    }
}

const LARGE_PAYLOAD: usize = 20 * 1024 * 1024;

fn payload_byte(position: usize) -> u8 {
    if position % 1000 == 999 {
        b'\n'
    } else {
        b'a' + (position % 26) as u8
    }
}

impl CountingSource {
    fn new() -> Self {
        Self {
            alive: Arc::new(AtomicUsize::new(0)),
            most_alive: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn stream(&self) -> ConduitBytes {
        let alive = Arc::clone(&self.alive);
        let most_alive = Arc::clone(&self.most_alive);
        let chunks = (0..LARGE_PAYLOAD).step_by(CHUNK_SIZE).map(move |start| {
            let end = (start + CHUNK_SIZE).min(LARGE_PAYLOAD);
            let bytes: Vec<u8> = (start..end).map(payload_byte).collect();
            let now_alive = alive.fetch_add(bytes.len(), Ordering::SeqCst) + bytes.len();
            most_alive.fetch_max(now_alive, Ordering::SeqCst);
            Ok(Bytes::from_owner(CountedChunk {
                bytes,
                alive: Arc::clone(&alive),
            }))
        });
        ConduitBytes::from_stream(futures_util::stream::iter(chunks))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20_mib_stream_goes_through_with_a_bounded_number_of_chunks_held() {
    let (_folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("large");
    let source = CountingSource::new();

    let reader = storage
        .store_retrievable_bytes(&ctx, "large".into(), source.stream())
        .await
        .unwrap();

    let most_alive = source.most_alive.load(Ordering::SeqCst);
    assert!(
        most_alive <= 8 * CHUNK_SIZE,
        "{most_alive} bytes of the stream were held at once"
    );
    assert_eq!(source.alive.load(Ordering::SeqCst), 0);
    assert_eq!(reader.byte_length().await.unwrap(), LARGE_PAYLOAD as u64);

    let mut stream = reader.stream();
    let mut position = 0;
    let mut largest_chunk = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        largest_chunk = largest_chunk.max(chunk.len());
        for (offset, byte) in chunk.iter().enumerate() {
            assert_eq!(
                *byte,
                payload_byte(position + offset),
                "byte {}",
                position + offset
            );
        }
        position += chunk.len();
    }
    assert_eq!(position, LARGE_PAYLOAD);
    assert!(
        largest_chunk <= CHUNK_SIZE,
        "read a chunk of {largest_chunk} bytes"
    );
    assert_eq!(
        reader.line_count().await.unwrap(),
        (LARGE_PAYLOAD / 1000 + 1) as u64
    );
}
