//! The PostgreSQL battery: its storage meets the storage contract, keeps every app's, user's,
//! session's and thread's records and bytes apart, migrates once however many processes connect
//! at once, refuses a newer schema, loses nothing under concurrent turns, and never holds a
//! transaction or connection while a byte stream stalls; its session store meets the session
//! state contract in Google ADK's v1 tables, shared with google-adk, and loses no state update
//! across pools and processes: every stale commit is refused whole.
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

// ---------------------------------------------------------------------------------------------
// Several processes

/// What one worker process printed: its acknowledged writes, its refused contested stores, and
/// the turns whose state commit landed or was refused as stale.
#[derive(Default)]
struct WorkerReport {
    acknowledged: Vec<String>,
    refused: Vec<String>,
    state_committed: Vec<u64>,
    state_refused: Vec<u64>,
}

fn read_report(lines: impl Iterator<Item = String>, report: &mut WorkerReport) {
    for line in lines {
        if let Some(id) = line.strip_prefix("ack ") {
            report.acknowledged.push(id.to_owned());
        } else if let Some(id) = line.strip_prefix("refused ") {
            report.refused.push(id.to_owned());
        } else if let Some(turn) = line.strip_prefix("state-ack ") {
            report.state_committed.push(turn.parse().unwrap());
        } else if let Some(turn) = line.strip_prefix("state-stale ") {
            report.state_refused.push(turn.parse().unwrap());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_sharing_conversations_with_one_killed_mid_turn_lose_and_duplicate_nothing()
{
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    const WORKERS: u64 = 4;
    const TURNS: u64 = 120;
    const CONVERSATIONS: u64 = 3;
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("processes");
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();

    let mut children: Vec<_> = (0..WORKERS)
        .map(|worker| {
            Command::new(env!("CARGO_BIN_EXE_postgres_turns"))
                .args([
                    url.clone(),
                    schema.clone(),
                    worker.to_string(),
                    TURNS.to_string(),
                    CONVERSATIONS.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut reports: Vec<WorkerReport> = (0..WORKERS).map(|_| WorkerReport::default()).collect();

    // Worker 0 is killed (SIGKILL) right after it wrote the first half of a turn, once it has
    // some acknowledged turns behind it.
    let mut victim_lines = BufReader::new(children[0].stdout.take().unwrap()).lines();
    let mut killed_mid_turn = None;
    for line in victim_lines.by_ref() {
        let line = line.unwrap();
        if let Some(turn) = line.strip_prefix("mid ")
            && reports[0].acknowledged.len() >= 40
        {
            children[0].kill().unwrap();
            killed_mid_turn = Some(turn.to_owned());
            break;
        }
        read_report(std::iter::once(line), &mut reports[0]);
    }
    let killed_mid_turn = killed_mid_turn.expect("worker 0 ended before it could be killed");
    children[0].wait().unwrap();
    // Lines already in the pipe were printed after their turn completed, so they count too.
    read_report(victim_lines.map_while(Result::ok), &mut reports[0]);

    for (worker, child) in children.iter_mut().enumerate().skip(1) {
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        read_report(lines.map_while(Result::ok), &mut reports[worker]);
        let status = child.wait().unwrap();
        assert!(status.success(), "worker {worker} failed: {status}");
        assert_eq!(
            reports[worker].acknowledged.len() + reports[worker].refused.len(),
            (TURNS * 2) as usize,
            "worker {worker} did not account for every write of every turn"
        );
        assert_eq!(
            reports[worker].state_committed.len() + reports[worker].state_refused.len(),
            TURNS as usize,
            "worker {worker} did not account for every turn's state commit"
        );
    }

    let storage = PostgresStorage::connect_with(options).await.unwrap();
    let mut copies: HashMap<String, usize> = HashMap::new();
    for conversation in 0..CONVERSATIONS {
        let ctx = StorageContext::new(format!("shared-{conversation}"));
        for id in message_ids(&storage.fetch_messages(&ctx).await.unwrap()) {
            *copies.entry(id).or_default() += 1;
        }
    }

    // Every acknowledged write is there, exactly once.
    for (worker, report) in reports.iter().enumerate() {
        for id in &report.acknowledged {
            assert_eq!(
                copies.get(id),
                Some(&1),
                "worker {worker} acknowledged `{id}`"
            );
        }
    }
    // Nothing is stored twice, and each contested message was stored by at most one worker:
    // every other attempt was refused, and the refusal reported.
    assert!(copies.values().all(|count| *count == 1), "{copies:?}");
    for turn in 0..TURNS {
        let id = format!("contested-{turn}");
        let acknowledged = reports
            .iter()
            .filter(|report| report.acknowledged.contains(&id))
            .count();
        let refused = reports
            .iter()
            .filter(|report| report.refused.contains(&id))
            .count();
        assert!(
            acknowledged <= 1,
            "`{id}` acknowledged by {acknowledged} workers"
        );
        // The three surviving workers all got to turn `turn` and reported on it.
        assert!(
            acknowledged + refused >= 3,
            "`{id}`: a store went unreported"
        );
        if copies.contains_key(&id) && acknowledged == 0 {
            // Only the killed worker can have stored it without saying so.
            assert_eq!(id, format!("contested-{killed_mid_turn}"));
        }
    }
    // The killed turn wrote its first half; that write was never acknowledged.
    let half = format!("w0-{killed_mid_turn}");
    assert_eq!(copies.get(&half), Some(&1));
    assert!(!reports[0].acknowledged.contains(&half));

    // No state update was lost silently: the shared counter counts exactly the commits that
    // were acknowledged, and each worker's own counter in each conversation exactly its
    // acknowledged commits there. A refused commit applied nothing, not even its uncontested
    // key; and refusals happened, so the check was not won by luck.
    let sessions = storage.session_store().await.unwrap();
    let committed: usize = reports
        .iter()
        .map(|report| report.state_committed.len())
        .sum();
    let refused: usize = reports
        .iter()
        .map(|report| report.state_refused.len())
        .sum();
    let user = sessions
        .user_state(&Default::default(), &Default::default())
        .await
        .unwrap();
    assert_eq!(
        user.get("turns"),
        Some(&serde_json::json!(committed)),
        "{committed} commits acknowledged, {refused} refused"
    );
    assert!(
        refused > 0,
        "no commit was ever stale: the workers did not contend"
    );
    for conversation in 0..CONVERSATIONS {
        let key = SessionKey::new("default", "default", format!("shared-{conversation}"));
        let state = sessions.get_session(&key).await.unwrap().unwrap().state;
        for (worker, report) in reports.iter().enumerate() {
            let landed = report
                .state_committed
                .iter()
                .filter(|turn| **turn % CONVERSATIONS == conversation)
                .count();
            let stored = state
                .get(&format!("w{worker}_turns"))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            assert_eq!(
                stored, landed as u64,
                "worker {worker}'s counter in conversation {conversation}"
            );
        }
    }

    // The database the four processes leave behind still meets both whole contracts.
    Conformance::new(storage)
        .persists_all(Primitive::ALL)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    let passed = state_conformance::check(&sessions)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, state_conformance::RULES);
}

// ---------------------------------------------------------------------------------------------
// Session state

/// A session store in a fresh schema, or `None` when no test database is configured.
async fn sessions_fresh(label: &str) -> Option<PostgresSessionStore> {
    let options = fresh_options(label)?;
    Some(PostgresSessionStore::connect_with(options).await.unwrap())
}

fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_state_conformance_suite_passes() {
    let Some(sessions) = sessions_fresh("state_conformance").await else {
        return;
    };
    let passed = state_conformance::check(&sessions)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, state_conformance::RULES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_session_stores_with_their_own_pools_pass_the_state_suite_at_once() {
    let Some(options) = fresh_options("state_conformance_x4") else {
        return;
    };
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            tokio::spawn(async move {
                let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
                state_conformance::check(&sessions).await
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
async fn session_state_is_kept_in_google_adks_v1_tables_with_jsonb_state() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("adk_layout");
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let storage = PostgresStorage::connect_with(options).await.unwrap();
    let sessions = storage.session_store().await.unwrap();
    let key = SessionKey::new("a", "u1", "s1");
    let initial = serde_json::json!({"app:k": 1, "user:k": 2, "sk": null, "temp:t": 3});
    sessions
        .create_session(&key, object(initial))
        .await
        .unwrap();

    let client = raw_client(&url, &schema).await;
    let column_types: Vec<(String, String, String)> = client
        .query(
            "SELECT table_name::TEXT, column_name::TEXT, data_type::TEXT
               FROM information_schema.columns
              WHERE table_schema = $1
                AND table_name IN ('app_states', 'user_states', 'sessions', 'events')
                AND column_name IN ('state', 'update_time', 'event_data')
              ORDER BY table_name, column_name",
            &[&schema],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("app_states", "state", "jsonb"),
        ("app_states", "update_time", "timestamp without time zone"),
        ("events", "event_data", "jsonb"),
        ("sessions", "state", "jsonb"),
        ("sessions", "update_time", "timestamp without time zone"),
        ("user_states", "state", "jsonb"),
        ("user_states", "update_time", "timestamp without time zone"),
    ]
    .iter()
    .map(|(table, column, kind)| ((*table).into(), (*column).into(), (*kind).into()))
    .collect();
    assert_eq!(column_types, expected);

    let row = client
        .query_one(
            "SELECT (SELECT state FROM app_states WHERE app_name = 'a'),
                    (SELECT state FROM user_states WHERE app_name = 'a' AND user_id = 'u1'),
                    (SELECT state FROM sessions WHERE app_name = 'a' AND user_id = 'u1' AND id = 's1'),
                    (SELECT value FROM adk_internal_metadata WHERE key = 'schema_version')",
            &[],
        )
        .await
        .unwrap();
    let (app, user, session): (serde_json::Value, serde_json::Value, serde_json::Value) =
        (row.get(0), row.get(1), row.get(2));
    assert_eq!(app, serde_json::json!({"k": 1}));
    assert_eq!(user, serde_json::json!({"k": 2}));
    assert_eq!(session, serde_json::json!({"sk": null}));
    assert_eq!(row.get::<_, String>(3), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_written_by_google_adk_into_its_own_tables_is_read_and_continued() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("adk_first");
    let client = raw_client(&url, &schema).await;
    // What google-adk's DatabaseSessionService leaves on PostgreSQL (v1 schema), made first.
    client
        .batch_execute(
            "CREATE TABLE adk_internal_metadata (key VARCHAR(128) PRIMARY KEY, value VARCHAR(256) NOT NULL);
             INSERT INTO adk_internal_metadata VALUES ('schema_version', '1');
             CREATE TABLE app_states (app_name VARCHAR(128) PRIMARY KEY, state JSONB NOT NULL,
                 update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL);
             CREATE TABLE user_states (app_name VARCHAR(128), user_id VARCHAR(128), state JSONB NOT NULL,
                 update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (app_name, user_id));
             CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128),
                 state JSONB NOT NULL, create_time TIMESTAMP WITHOUT TIME ZONE NOT NULL,
                 update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (app_name, user_id, id));
             CREATE TABLE events (id VARCHAR(128), app_name VARCHAR(128), user_id VARCHAR(128),
                 session_id VARCHAR(128), invocation_id VARCHAR(256) NOT NULL,
                 timestamp TIMESTAMP WITHOUT TIME ZONE NOT NULL, event_data JSONB,
                 PRIMARY KEY (id, app_name, user_id, session_id),
                 FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id)
                     ON DELETE CASCADE);
             INSERT INTO app_states VALUES ('a', '{\"k\": 1, \"k2\": \"A\"}', '2026-01-02 03:04:05.000001');
             INSERT INTO user_states VALUES ('a', 'u1', '{\"k\": 2, \"k2\": \"U\"}', '2026-01-02 03:04:05.000001');
             INSERT INTO sessions VALUES ('a', 'u1', 's1', '{\"sk\": null, \"sk2\": \"S\"}',
                 '2026-01-02 03:04:05.000001', '2026-01-02 03:04:05.123456');
             INSERT INTO events VALUES ('e1', 'a', 'u1', 's1', 'i1', '2026-01-02 03:04:05.123456', '{}');",
        )
        .await
        .unwrap();

    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
    let key = SessionKey::new("a", "u1", "s1");
    let session = sessions.get_session(&key).await.unwrap().unwrap();
    assert_eq!(
        session.state,
        object(serde_json::json!({
            "sk": null, "sk2": "S", "user:k": 2, "user:k2": "U", "app:k": 1, "app:k2": "A"
        }))
    );
    assert_eq!(
        session.last_update_time.to_string(),
        "2026-01-02T03:04:05.123456Z"
    );

    // A turn continues from there, and ADK's own event row is left alone.
    let mut turn = State::from_loaded(
        sessions
            .load_turn(&key, &ThreadId::default())
            .await
            .unwrap(),
    );
    turn.set_value("user:k", serde_json::json!(3)).unwrap();
    sessions
        .commit_turn(&key, turn.to_commit(&ThreadId::default()))
        .await
        .unwrap();
    let user: serde_json::Value = client
        .query_one(
            "SELECT state FROM user_states WHERE app_name = 'a' AND user_id = 'u1'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(user, serde_json::json!({"k": 3, "k2": "U"}));
    let events: i64 = client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(events, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adk_session_tables_of_another_schema_version_are_refused_with_the_version_named() {
    let Some(url) = test_url() else {
        return;
    };
    // Version 2 (a future google-adk), stamped in the metadata table.
    let schema = fresh_schema_name("adk_v2");
    raw_client(&url, &schema)
        .await
        .batch_execute(
            "CREATE TABLE adk_internal_metadata (key VARCHAR(128) PRIMARY KEY, value VARCHAR(256) NOT NULL);
             INSERT INTO adk_internal_metadata VALUES ('schema_version', '2');",
        )
        .await
        .unwrap();
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let error = PostgresSessionStore::connect_with(options.clone())
        .await
        .unwrap_err();
    let SessionStoreError::Backend(source) = &error else {
        panic!("expected a backend error, got {error}");
    };
    assert!(
        matches!(
            source.downcast_ref::<PostgresError>(),
            Some(PostgresError::AdkSchemaVersion { found }) if found == "2"
        ),
        "{error}"
    );
    assert!(error.to_string().contains("schema version `2`"), "{error}");
    // The storage does not read those tables, so it still connects.
    PostgresStorage::connect_with(options).await.unwrap();

    // Version 0 (legacy google-adk): session tables but no metadata table. Stamping it as
    // version 1 would let both sides misread it, so connecting refuses to migrate it.
    let schema = fresh_schema_name("adk_v0");
    raw_client(&url, &schema)
        .await
        .batch_execute(
            "CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128),
                 state JSONB, create_time TIMESTAMP, update_time TIMESTAMP,
                 PRIMARY KEY (app_name, user_id, id));
             CREATE TABLE events (id VARCHAR(128), app_name VARCHAR(128), user_id VARCHAR(128),
                 session_id VARCHAR(128), actions BYTEA, PRIMARY KEY (id, app_name, user_id, session_id));",
        )
        .await
        .unwrap();
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let error = PostgresSessionStore::connect_with(options)
        .await
        .unwrap_err();
    let message = format!("{error}: {:?}", std::error::Error::source(&error));
    assert!(message.contains("schema version 0"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_commit_applies_neither_its_state_nor_its_middleware_records() {
    let Some(sessions) = sessions_fresh("stale_records").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    let thread = ThreadId::default();
    sessions
        .create_session(&key, object(serde_json::json!({"step": 0})))
        .await
        .unwrap();
    let mut first = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    let mut second = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    first.set_value("step", serde_json::json!(1)).unwrap();
    sessions
        .commit_turn(&key, first.to_commit(&thread))
        .await
        .unwrap();

    second.set_value("step", serde_json::json!(2)).unwrap();
    second
        .set_value("user:seen", serde_json::json!(true))
        .unwrap();
    let mut commit = second.to_commit(&thread);
    commit.middleware = vec![MiddlewareStateWrite::Put(MiddlewareStateRecord {
        scope: RecordScope::Thread(thread.clone()),
        key: "planner".into(),
        version: 1,
        json: serde_json::json!({"plan": "second"}),
    })];
    let error = sessions.commit_turn(&key, commit).await.unwrap_err();
    assert!(
        matches!(&error, SessionStoreError::Stale { keys } if keys == &["step"]),
        "{error}"
    );

    let loaded = sessions.load_turn(&key, &thread).await.unwrap();
    assert_eq!(loaded.session, object(serde_json::json!({"step": 1})));
    assert!(loaded.user.is_empty());
    assert!(loaded.middleware.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_incremented_through_eight_pools_with_retries_lose_no_increment() {
    const STORES: usize = 8;
    const INCREMENTS: u64 = 15;
    let Some(options) = fresh_options("counters") else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "counted");
    let thread = ThreadId::default();
    let tasks: Vec<_> = (0..STORES)
        .map(|_| {
            let (options, key, thread) = (options.clone(), key.clone(), thread.clone());
            tokio::spawn(async move {
                // Its own pool, as another process would have.
                let sessions = PostgresSessionStore::connect_with(options.pool_size(2))
                    .await
                    .unwrap();
                let mut refused = 0_u64;
                for _ in 0..INCREMENTS {
                    loop {
                        let mut turn =
                            State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
                        for name in ["user:count", "count"] {
                            let count = turn.value(name).and_then(|n| n.as_u64()).unwrap_or(0);
                            turn.set_value(name, serde_json::json!(count + 1)).unwrap();
                        }
                        match sessions.commit_turn(&key, turn.to_commit(&thread)).await {
                            Ok(()) => break,
                            Err(error) if error.is_stale() => refused += 1,
                            Err(error) => panic!("{error}"),
                        }
                    }
                }
                refused
            })
        })
        .collect();
    let mut refused = 0;
    for task in tasks {
        refused += task.await.unwrap();
    }
    let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
    let state = sessions.get_session(&key).await.unwrap().unwrap().state;
    let total = STORES as u64 * INCREMENTS;
    assert_eq!(
        state["count"],
        serde_json::json!(total),
        "{refused} refusals"
    );
    assert_eq!(state["user:count"], serde_json::json!(total));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_deletes_its_middleware_records_and_a_new_one_starts_without_them() {
    let Some(sessions) = sessions_fresh("delete_records").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    let record = |scope: RecordScope| {
        MiddlewareStateWrite::Put(MiddlewareStateRecord {
            scope,
            key: "planner::PlanState<alloc::vec::Vec<planner::Step>>".repeat(8),
            version: 3,
            json: serde_json::json!({"steps": 2}),
        })
    };
    let commit = TurnCommit {
        user: vec![StateWrite {
            name: "theme".into(),
            change: StateChange::Set(serde_json::json!("dark")),
            expected: None,
        }],
        middleware: vec![
            record(RecordScope::Session),
            record(RecordScope::Thread(ThreadId::default())),
        ],
        ..TurnCommit::default()
    };
    sessions.commit_turn(&key, commit).await.unwrap();
    let loaded = sessions
        .load_turn(&key, &ThreadId::default())
        .await
        .unwrap();
    assert_eq!(loaded.middleware.len(), 2);

    sessions.delete_session(&key).await.unwrap();
    let loaded = sessions
        .load_turn(&key, &ThreadId::default())
        .await
        .unwrap();
    assert!(loaded.middleware.is_empty());
    assert_eq!(
        loaded.user["theme"], "dark",
        "user state outlives the session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_longer_than_adks_128_characters_is_refused_whole_by_the_commit() {
    let Some(sessions) = sessions_fresh("long_id").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s".repeat(129));
    let mut turn = State::from_loaded(
        sessions
            .load_turn(&key, &ThreadId::default())
            .await
            .unwrap(),
    );
    turn.set_value("user:seen", serde_json::json!(true))
        .unwrap();
    let error = sessions
        .commit_turn(&key, turn.to_commit(&ThreadId::default()))
        .await
        .unwrap_err();
    let message = format!("{error}: {:?}", std::error::Error::source(&error));
    assert!(message.contains("value too long"), "{message}");
    assert!(
        sessions
            .user_state(&key.app, &key.user)
            .await
            .unwrap()
            .is_empty()
    );
}
