//! A turn on SQLite storage and the session store its `session_store_one_flush` hands out makes
//! one WAL commit (issue 33): the turn's assistant messages are held back and inserted in the
//! transaction that commits its state and events, on the storage's writer connection, while
//! nothing the turn or its caller relies on is lost or reordered (see `adk::storage` `held`,
//! `docs/sqlite.md`).
//!
//! Which transaction wrote a row is seen through a trigger the tests add to the file: each
//! message insert records the session state visible to the connection inserting it. Inside the
//! commit's transaction that is the state the turn is committing; a message committed on its
//! own, before the turn's commit, sees the state before the turn.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::path::{Path, PathBuf};

use adk::TurnRunner;
use adk::context::RawTurnContext;
use adk::events::ErrorCode;
use adk::primitives::Message;
use adk::runner::TurnStatus;
use adk::sqlite::{SqliteSessionStore, SqliteStorage};
use adk::state::{SessionKey, SessionStore, conformance};
use adk::storage::{StorageAdapter, StorageContext, StorageError};
use adk_integration_tests::one_flush::{AnswerId, Then, answering};
use rusqlite::Connection;

/// A runner on `storage` and `sessions` whose executor stores an answer named by `id`, counts
/// its turns in session state, then does `then`.
fn runner(
    storage: &SqliteStorage,
    sessions: SqliteSessionStore,
    id: AnswerId,
    then: Then,
) -> TurnRunner {
    TurnRunner::builder()
        .storage(storage.clone())
        .session_store(sessions)
        .executor(answering(storage.clone(), id, then))
        .build()
}

fn raw(conversation: &str) -> RawTurnContext {
    RawTurnContext::new(conversation, "Be brief.")
        .app_name("shop")
        .user_id("ada")
}

fn storage_context(conversation: &str) -> StorageContext {
    StorageContext::new(conversation)
        .with_app_name("shop")
        .with_user_id("ada")
}

/// A fresh database file with the storage and its one-flush session store on it.
async fn fresh() -> (
    tempfile::TempDir,
    PathBuf,
    SqliteStorage,
    SqliteSessionStore,
) {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("agent.db");
    let storage = SqliteStorage::open(&path).await.unwrap();
    let sessions = storage.session_store_one_flush().await.unwrap();
    (folder, path, storage, sessions)
}

/// Adds the trigger that records, for each message inserted, the session state the inserting
/// connection sees at that moment (`NULL` when the session does not exist yet for it).
fn watch_message_inserts(path: &Path) {
    Connection::open(path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE seen (message TEXT, session_state TEXT);
             CREATE TRIGGER watch AFTER INSERT ON messages BEGIN
                 INSERT INTO seen SELECT NEW.id,
                     (SELECT state FROM sessions WHERE id = NEW.conversation_id);
             END;",
        )
        .unwrap();
}

/// The session state each message's insert saw, by message id, in insertion order.
fn seen(path: &Path) -> Vec<(String, Option<String>)> {
    let connection = Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT message, session_state FROM seen ORDER BY rowid")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn count(path: &Path, sql: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(sql, [], |row| row.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_answer_is_written_in_the_transaction_that_commits_its_state() {
    let (_folder, path, storage, sessions) = fresh().await;
    watch_message_inserts(&path);
    let runner = runner(&storage, sessions, AnswerId::PerTurn, Then::Answer);
    // The first turn creates the session; the second commits to an existing one.
    for _ in 0..2 {
        let outcome = runner.run(raw("c-1")).await.unwrap();
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    let answers = storage
        .fetch_messages(&storage_context("c-1"))
        .await
        .unwrap();
    assert_eq!(answers.len(), 2, "both answers are stored");
    let seen = seen(&path);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, answers[0].id());
    assert_eq!(seen[1].0, answers[1].id());
    // Each answer was inserted by the transaction writing the state its own turn committed.
    assert_eq!(seen[0].1.as_deref(), Some(r#"{"turns": 1}"#), "{seen:?}");
    assert_eq!(seen[1].1.as_deref(), Some(r#"{"turns": 2}"#), "{seen:?}");
    // Each turn's event is there too, committed with its state.
    assert_eq!(
        count(
            &path,
            "SELECT COUNT(*) FROM events WHERE session_id = 'c-1'"
        ),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_session_store_leaves_each_answer_in_a_transaction_of_its_own() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("agent.db");
    let storage = SqliteStorage::open(&path).await.unwrap();
    let sessions = SqliteSessionStore::open(&path).await.unwrap();
    watch_message_inserts(&path);
    let runner = runner(&storage, sessions, AnswerId::PerTurn, Then::Answer);
    for _ in 0..2 {
        let outcome = runner.run(raw("c-2")).await.unwrap();
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    let seen = seen(&path);
    assert_eq!(seen.len(), 2, "{seen:?}");
    // Stored when the executor called store_message: before its turn's state was committed.
    assert_eq!(seen[0].1, None, "{seen:?}");
    assert_eq!(seen[1].1.as_deref(), Some(r#"{"turns": 1}"#), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_answer_is_read_back_by_its_turn_and_stored_when_the_turn_fails_uncommitted() {
    let (_folder, path, storage, _) = fresh().await;
    for (conversation, then) in [("c-3", Then::ReadBackAndFail), ("c-4", Then::Fail)] {
        let sessions = storage.session_store_one_flush().await.unwrap();
        let outcome = runner(&storage, sessions, AnswerId::PerTurn, then)
            .run(raw(conversation))
            .await
            .unwrap();
        let TurnStatus::Failed(error) = &outcome.status else {
            panic!("the turn failed: {:?}", outcome.status);
        };
        assert_eq!(error.code(), ErrorCode::ExecutorError, "{error:?}");
        let cause = std::error::Error::source(error).map(ToString::to_string);
        assert_eq!(
            cause.as_deref(),
            Some("the executor failed after answering"),
            "{conversation}: {error}"
        );
        let answers = storage
            .fetch_messages(&storage_context(conversation))
            .await
            .unwrap();
        assert_eq!(
            answers.len(),
            1,
            "{conversation}: the stored answer is kept"
        );
        assert_eq!(
            count(
                &path,
                &format!("SELECT COUNT(*) FROM sessions WHERE id = '{conversation}'")
            ),
            0,
            "a failed turn commits nothing"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_id_is_taken_fails_the_commit_and_none_of_the_turns_state_lands() {
    let (_folder, path, storage, sessions) = fresh().await;
    storage
        .store_message(
            &storage_context("c-5"),
            Message::assistant("m-fixed", "an earlier answer").unwrap(),
        )
        .await
        .unwrap();
    let outcome = runner(&storage, sessions, AnswerId::Fixed, Then::Answer)
        .run(raw("c-5"))
        .await
        .unwrap();
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("the turn failed: {:?}", outcome.status);
    };
    assert_eq!(error.code(), ErrorCode::StateCommitFailed, "{error:?}");
    let conflict = std::iter::successors(std::error::Error::source(error), |cause| cause.source())
        .any(|cause| {
            matches!(
                cause.downcast_ref::<StorageError>(),
                Some(StorageError::Conflict { id, .. }) if id == "m-fixed"
            )
        });
    assert!(conflict, "the conflict is the commit's cause: {error:?}");
    // The transaction that would have written the answer wrote nothing else either.
    for table in ["sessions", "events"] {
        let column = if table == "sessions" {
            "id"
        } else {
            "session_id"
        };
        assert_eq!(
            count(
                &path,
                &format!("SELECT COUNT(*) FROM {table} WHERE {column} = 'c-5'")
            ),
            0,
            "{table}"
        );
    }
    let answers = storage
        .fetch_messages(&storage_context("c-5"))
        .await
        .unwrap();
    assert_eq!(answers.len(), 1);
    assert!(
        format!("{:?}", answers[0]).contains("an earlier answer"),
        "the earlier answer is kept: {answers:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_database_refuses_takes_the_turns_state_and_events_down_with_it() {
    let (_folder, path, storage, sessions) = fresh().await;
    // A first turn creates the session, with `turns` at 1.
    let runner = runner(&storage, sessions, AnswerId::PerTurn, Then::Answer);
    assert!(runner.run(raw("c-6")).await.unwrap().is_completed());
    // From now on the database refuses every message insert, as a full disk or a constraint
    // would: the refusal comes after the state and event writes of the same transaction.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN
                 SELECT RAISE(ABORT, 'refused');
             END;",
        )
        .unwrap();
    let outcome = runner.run(raw("c-6")).await.unwrap();
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("the turn failed: {:?}", outcome.status);
    };
    assert_eq!(error.code(), ErrorCode::StateCommitFailed, "{error:?}");
    let state: String = Connection::open(&path)
        .unwrap()
        .query_row("SELECT state FROM sessions WHERE id = 'c-6'", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(
        state, r#"{"turns": 1}"#,
        "the second turn's state rolled back"
    );
    assert_eq!(
        count(
            &path,
            "SELECT COUNT(*) FROM events WHERE session_id = 'c-6'"
        ),
        1,
        "and its event"
    );
    assert_eq!(count(&path, "SELECT COUNT(*) FROM messages"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_flush_store_passes_the_session_store_conformance_suite() {
    let (_folder, path, storage, sessions) = fresh().await;
    let passed = conformance::check(&sessions)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, conformance::RULES);
    // In memory too: the store shares the storage's one connection.
    let in_memory = SqliteStorage::in_memory().await.unwrap();
    let passed = conformance::check(&in_memory.session_store_one_flush().await.unwrap())
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, conformance::RULES);
    // The file still opens as a plain session store, and as storage, after both wrote to it.
    drop((storage, sessions));
    let plain = SqliteSessionStore::open(&path).await.unwrap();
    assert!(
        plain
            .get_session(&SessionKey::new("shop", "ada", "none"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        SqliteStorage::open(&path)
            .await
            .unwrap()
            .integrity_check()
            .await
            .unwrap(),
        "ok"
    );
}
