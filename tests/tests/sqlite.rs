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

/// Byte conduits: both conduits, failing, stalled and large streams.
#[path = "sqlite/byte_conduits.rs"]
mod byte_conduits;
/// Durability: reopen, SIGKILL, concurrent turns.
#[path = "sqlite/durability.rs"]
mod durability;

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
