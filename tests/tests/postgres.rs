//! The PostgreSQL battery: its storage meets the storage contract, keeps every app's, user's,
//! session's and thread's records and bytes apart, migrates once however many processes connect
//! at once, refuses a newer schema, loses nothing under concurrent turns, reuses the connection
//! returned last, and never holds a transaction or connection while a byte stream stalls; its
//! session store meets the session state contract in Google ADK's v1 tables, shared with
//! google-adk, and loses no state update across pools and processes: every stale commit is
//! refused whole.
//!
//! Each test uses its own schema in the database named by `ADK_TEST_POSTGRES_URL`; without it
//! the tests pass without checking anything and say so (see `adk_integration_tests::postgres_database`).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::time::Duration;

use adk::TurnRunner;
use adk::bytes::ConduitBytes;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::ids::ThreadId;
use adk::pipeline::BoxError;
use adk::postgres::tokio_postgres;
use adk::postgres::{PostgresError, PostgresOptions, PostgresSessionStore, PostgresStorage};
use adk::primitives::{
    Memory, Message, Retrievable, RetrievableContent, StandingInstruction, TrustTier,
};
use adk::state::conformance as state_conformance;
use adk::state::{
    MiddlewareStateRecord, MiddlewareStateWrite, RecordScope, SessionKey, SessionStore,
    SessionStoreError, State, StateChange, StateWrite, TurnCommit,
};
use adk::storage::conformance::Conformance;
use adk::storage::{Primitive, StorageAdapter, StorageContext, StorageError};
use adk_integration_tests::postgres_database::{fresh_options, fresh_schema_name, test_url};
use bytes::Bytes;
use futures_util::StreamExt;

/// Session state: the session store in Google ADK's v1 tables.
#[path = "postgres/session_state.rs"]
mod session_state;
/// Several processes: four workers on one database, one killed mid-turn.
#[path = "postgres/several_processes.rs"]
mod several_processes;

/// A storage in a fresh schema, or `None` when no test database is configured.
async fn connect_fresh(label: &str) -> Option<PostgresStorage> {
    let options = fresh_options(label)?;
    Some(PostgresStorage::connect_with(options).await.unwrap())
}

fn message_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|message| message.id().to_owned())
        .collect()
}

/// A plain driver connection whose statements run in `schema`.
async fn raw_client(url: &str, schema: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; SET search_path = \"{schema}\""
        ))
        .await
        .unwrap();
    client
}

// ---------------------------------------------------------------------------------------------
// The contract

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_with_every_primitive_persisted() {
    let Some(storage) = connect_fresh("conformance").await else {
        return;
    };
    let report = Conformance::new(storage)
        .persists_all(Primitive::ALL)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(report.fully_checked(), Primitive::ALL);
    assert!(report.accepted_only().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_conformance_runs_at_once_on_one_database_all_pass() {
    let Some(options) = fresh_options("conformance_x4") else {
        return;
    };
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            tokio::spawn(async move {
                let storage = PostgresStorage::connect_with(options).await.unwrap();
                Conformance::new(storage)
                    .persists_all(Primitive::ALL)
                    .run()
                    .await
            })
        })
        .collect();
    for run in runs {
        run.await
            .unwrap()
            .unwrap_or_else(|failure| panic!("{failure}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_and_bytes_of_another_app_user_session_or_thread_are_invisible() {
    let Some(storage) = connect_fresh("scoping").await else {
        return;
    };
    let ours = StorageContext::new("session")
        .with_app_name("shop")
        .with_user_id("ada")
        .with_thread_id("main");
    let neighbours = [
        StorageContext::new("session")
            .with_app_name("other-app")
            .with_user_id("ada"),
        StorageContext::new("session")
            .with_app_name("shop")
            .with_user_id("grace"),
        StorageContext::new("other-session")
            .with_app_name("shop")
            .with_user_id("ada"),
        StorageContext::new("session")
            .with_app_name("shop")
            .with_user_id("ada")
            .with_thread_id("draft"),
    ];
    for theirs in &neighbours {
        storage
            .store_message(theirs, Message::user("shared-id", "theirs").unwrap())
            .await
            .unwrap();
        storage
            .store_memory(theirs, Memory::new("memory", "theirs", 0.5, 0.5).unwrap())
            .await
            .unwrap();
        storage
            .store_standing_instruction(theirs, StandingInstruction::from("Be brief."))
            .await
            .unwrap();
        storage
            .store_media_bytes(theirs, "logo".into(), Bytes::from_static(b"theirs").into())
            .await
            .unwrap();
    }

    assert!(storage.fetch_messages(&ours).await.unwrap().is_empty());
    assert!(storage.fetch_memories(&ours).await.unwrap().is_empty());
    assert!(
        storage
            .refresh_standing_instructions(&ours)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(storage.media_reader(&ours, "logo").await.unwrap().is_none());

    // The same ids in our scope are different records and bytes.
    storage
        .store_message(&ours, Message::user("shared-id", "ours").unwrap())
        .await
        .unwrap();
    let ours_logo = storage
        .store_media_bytes(&ours, "logo".into(), Bytes::from_static(b"ours").into())
        .await
        .unwrap();
    assert_eq!(&ours_logo.read_all().await.unwrap()[..], b"ours");
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
    for theirs in &neighbours {
        assert_eq!(
            message_ids(&storage.fetch_messages(theirs).await.unwrap()),
            ["shared-id"]
        );
        let logo = storage.media_reader(theirs, "logo").await.unwrap().unwrap();
        assert_eq!(&logo.read_all().await.unwrap()[..], b"theirs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storing_an_existing_id_is_a_conflict_but_an_equal_instruction_is_kept_once() {
    let Some(storage) = connect_fresh("conflicts").await else {
        return;
    };
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
async fn sixteen_racing_stores_of_one_id_store_it_once_and_refuse_the_rest() {
    let Some(storage) = connect_fresh("racing").await else {
        return;
    };
    let ctx = StorageContext::new("racing");
    let racers: Vec<_> = (0..16)
        .map(|racer| {
            let storage = storage.clone();
            let ctx = ctx.clone();
            tokio::spawn(async move {
                storage
                    .store_message(
                        &ctx,
                        Message::user("contested", format!("{racer}")).unwrap(),
                    )
                    .await
            })
        })
        .collect();
    let mut stored = 0;
    for racer in racers {
        match racer.await.unwrap() {
            Ok(()) => stored += 1,
            Err(StorageError::Conflict { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(stored, 1);
    assert_eq!(storage.fetch_messages(&ctx).await.unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Migrations

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_schema_is_refused_with_both_versions_named() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("newer");
    let client = raw_client(&url, &schema).await;
    // As a newer adk would have left it.
    client
        .batch_execute(
            "CREATE TABLE adk_rs_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
             INSERT INTO adk_rs_migrations (version, description) VALUES (1, 'one'), (99, 'future')",
        )
        .await
        .unwrap();

    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let error = PostgresStorage::connect_with(options).await.unwrap_err();
    let StorageError::Backend { source, .. } = &error else {
        panic!("expected a backend error, got {error}");
    };
    assert!(matches!(
        source.downcast_ref::<PostgresError>(),
        Some(PostgresError::SchemaTooNew {
            found: 99,
            supported: 7,
        })
    ));
    assert!(error.to_string().contains("schema version 99"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_processes_connecting_at_once_migrate_the_schema_exactly_once() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("migrate");
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let connections: Vec<_> = (0..8)
        .map(|_| tokio::spawn(PostgresStorage::connect_with(options.clone())))
        .collect();
    for connection in connections {
        connection.await.unwrap().unwrap();
    }
    let client = raw_client(&url, &schema).await;
    let versions: Vec<i64> = client
        .query(
            "SELECT version FROM adk_rs_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(
        versions,
        (1..=PostgresStorage::schema_version()).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_keeps_every_record_and_byte() {
    let Some(options) = fresh_options("reconnect") else {
        return;
    };
    let ctx = StorageContext::new("kept");
    {
        let storage = PostgresStorage::connect_with(options.clone())
            .await
            .unwrap();
        storage
            .store_message(&ctx, Message::user("m-1", "hello").unwrap())
            .await
            .unwrap();
        let chunk =
            Retrievable::new("manual", "step one\nstep two", TrustTier::FirstParty).unwrap();
        let text = chunk.spoolable_text().unwrap();
        let reader = storage
            .store_retrievable_bytes(&ctx, chunk.id().to_owned(), text.into())
            .await
            .unwrap();
        storage
            .store_retrievable(&ctx, chunk.into_spooled(reader))
            .await
            .unwrap();
    }
    let reconnected = PostgresStorage::connect_with(options).await.unwrap();
    assert_eq!(
        message_ids(&reconnected.fetch_messages(&ctx).await.unwrap()),
        ["m-1"]
    );
    let fetched = reconnected.fetch_retrievables(&ctx).await.unwrap();
    assert!(matches!(
        fetched[0].content(),
        RetrievableContent::Artifact(artifact) if !artifact.reader().is_detached()
    ));
    assert_eq!(
        fetched[0].content_string().await.unwrap(),
        "step one\nstep two"
    );
}

// ---------------------------------------------------------------------------------------------
// Turns

fn storing_runner(storage: PostgresStorage) -> TurnRunner {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_turns_lose_no_write_and_keep_each_turns_order() {
    const TURNS: u64 = 200;
    const CONVERSATIONS: u64 = 4;
    let Some(options) = fresh_options("busy") else {
        return;
    };
    // Fewer connections than concurrent turns: calls wait for a connection, none fails.
    let storage = PostgresStorage::connect_with(options.pool_size(8))
        .await
        .unwrap();
    let runner = storing_runner(storage.clone());
    let tasks: Vec<_> = (0..TURNS)
        .map(|number| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let conversation = format!("busy-{}", number % CONVERSATIONS);
                let raw = RawTurnContext::new(conversation.as_str(), "You are a test.")
                    .stash(serde_json::json!({ "test": { "turn": number } }));
                runner.run(raw).await
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
// Pooling

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_one_after_another_reuse_the_connection_returned_last() {
    let Some(url) = test_url() else {
        return;
    };
    // The pool's connections are the server's backends with this application name.
    let name = fresh_schema_name("lifo");
    let mut config: tokio_postgres::Config = url.parse().unwrap();
    config.application_name(&name);
    let options = PostgresOptions::from_config(config)
        .schema(name.as_str())
        .unwrap()
        .pool_size(4);
    let storage = PostgresStorage::connect_with(options).await.unwrap();
    let admin = raw_client(&url, &name).await;
    let ctx = StorageContext::new("pooled");

    // Bursts of concurrent calls until the pool holds more than one connection.
    let mut opened = 0;
    for burst in 0..50 {
        let calls = (0..16).map(|n| {
            let message = Message::user(format!("burst-{burst}-{n}"), "at once").unwrap();
            storage.store_message(&ctx, message)
        });
        for stored in futures_util::future::join_all(calls).await {
            stored.unwrap();
        }
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .await
            .unwrap();
        opened = row.get::<_, i64>(0);
        if opened > 1 {
            break;
        }
    }
    assert!(opened > 1, "50 bursts of 16 calls opened one connection");

    let since: String = admin
        .query_one("SELECT clock_timestamp()::TEXT", &[])
        .await
        .unwrap()
        .get(0);
    for n in 0..20 {
        let message = Message::user(format!("alone-{n}"), "one after another").unwrap();
        storage.store_message(&ctx, message).await.unwrap();
    }
    let used: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = $1 AND state_change >= $2::TEXT::TIMESTAMPTZ",
            &[&name, &since],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        used, 1,
        "20 calls one after another ran on {used} of the pool's {opened} connections"
    );
}

// ---------------------------------------------------------------------------------------------
// Byte conduits

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_holds_no_connection_so_a_pool_of_one_keeps_serving() {
    let Some(options) = fresh_options("stall") else {
        return;
    };
    let storage = PostgresStorage::connect_with(options.pool_size(1))
        .await
        .unwrap();
    let ctx = StorageContext::new("stalled");
    storage
        .store_media_bytes(&ctx, "upload".into(), Bytes::from_static(b"old").into())
        .await
        .unwrap();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let stalling = futures_util::stream::once(async { Ok(Bytes::from_static(b"new, ")) }).chain(
        futures_util::stream::once(async move {
            released.await.unwrap();
            Ok(Bytes::from_static(b"complete"))
        }),
    );
    let upload = tokio::spawn({
        let storage = storage.clone();
        let ctx = ctx.clone();
        async move {
            storage
                .store_media_bytes(&ctx, "upload".into(), ConduitBytes::from_stream(stalling))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!upload.is_finished());

    // While the upload waits for its source, the one connection serves everything else, and
    // readers still see the old bytes whole.
    let served = tokio::time::timeout(Duration::from_secs(5), async {
        storage
            .store_message(&ctx, Message::user("during", "still writable").unwrap())
            .await
            .unwrap();
        let old = storage.media_reader(&ctx, "upload").await.unwrap().unwrap();
        old.read_all().await.unwrap()
    })
    .await
    .expect("a call waited for the stalled upload's connection");
    assert_eq!(&served[..], b"old");

    release.send(()).unwrap();
    let reader = upload.await.unwrap().unwrap();
    assert_eq!(&reader.read_all().await.unwrap()[..], b"new, complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_stream_stores_nothing_and_keeps_the_earlier_bytes() {
    let Some(storage) = connect_fresh("failing").await else {
        return;
    };
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
async fn cancelling_the_turn_stops_a_stalled_stream_and_stores_nothing() {
    let Some(storage) = connect_fresh("cancel").await else {
        return;
    };
    let cancellation = tokio_util::sync::CancellationToken::new();
    let ctx = StorageContext::new("stalled").with_cancellation(cancellation.clone());
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_stream_reads_back_in_chunks_of_at_most_chunk_size() {
    const LENGTH: usize = 3 * adk::bytes::CHUNK_SIZE + 17;
    let Some(storage) = connect_fresh("large").await else {
        return;
    };
    let ctx = StorageContext::new("large");
    let payload: Vec<u8> = (0..LENGTH).map(|position| (position % 251) as u8).collect();
    // One oversized incoming chunk, split on the way in.
    let incoming = ConduitBytes::from_stream(futures_util::stream::iter(vec![Ok(Bytes::from(
        payload.clone(),
    ))]));
    let reader = storage
        .store_media_bytes(&ctx, "large".into(), incoming)
        .await
        .unwrap();
    let mut stream = reader.stream();
    let mut read = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        assert!(chunk.len() <= adk::bytes::CHUNK_SIZE);
        read.extend_from_slice(&chunk);
    }
    assert_eq!(read, payload);
}
