//! Thread ids as a specification: an empty or malformed thread id (`ThreadId::check`: empty,
//! over 256 bytes, a control character) is refused with a typed error by a fork, by the runner
//! and by every session store, before anything is read or written. On SQLite and PostgreSQL the
//! empty thread id is the session-scope slot, so a fork into it would have handed its records to
//! every other thread as session state.
//!
//! Every rule runs on the in-memory and the SQLite session store, and on `PostgresSessionStore`
//! in a fresh schema when `ADK_TEST_POSTGRES_URL` names a database
//! (`.ci/postgres run cargo test -p adk-integration-tests --test thread_ids`).

use std::future::Future;

use adk::TurnRunner;
use adk::context::{DispatchContext, InvalidTurnContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::ids::{ThreadId, ThreadIdProblem};
use adk::pipeline::BoxError;
use adk::primitives::Message;
use adk::state::{
    Fork, ForkError, InMemorySessionStore, MiddlewareStateRecord, MiddlewareStateWrite,
    RecordScope, SessionKey, SessionStore, SessionStoreError, SharedSessionStore, TurnCommit,
};
use adk::storage::{NoopStorage, SharedStorage, StorageContext};
use serde_json::json;

fn acking() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

fn session() -> SessionKey {
    SessionKey::new("app", "ada", "s-1")
}

fn storage_context(thread: &str) -> StorageContext {
    StorageContext::new("s-1")
        .with_app_name("app")
        .with_user_id("ada")
        .with_thread_id(thread)
}

/// A runner over a SQLite storage whose `main` thread holds two messages and one thread-scoped
/// record.
async fn runner_with_a_main_thread(store: &SharedSessionStore) -> (TurnRunner, SharedStorage) {
    let storage = SharedStorage::new(
        adk::sqlite::SqliteStorage::in_memory()
            .await
            .expect("opens"),
    );
    for message in [
        Message::user("m-1", "Plan a trip").expect("valid"),
        Message::assistant("m-2", "Where to?").expect("valid"),
    ] {
        storage
            .store_message(&storage_context("main"), message)
            .await
            .expect("stored");
    }
    let commit = TurnCommit {
        middleware: vec![MiddlewareStateWrite::Put(MiddlewareStateRecord {
            scope: RecordScope::Thread(ThreadId::from("main")),
            key: "tests.progress".to_owned(),
            version: 1,
            json: json!({"done": 1}),
        })],
        ..TurnCommit::default()
    };
    store
        .commit_turn(&session(), commit)
        .await
        .expect("commits");
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(store.clone())
        .executor(acking())
        .build();
    (runner, storage)
}

async fn a_fork_into_an_empty_or_malformed_thread_is_refused_and_writes_nothing(
    store: SharedSessionStore,
) {
    let (runner, storage) = runner_with_a_main_thread(&store).await;
    let too_long = "t".repeat(10_000);
    for (to, problem) in [
        ("", ThreadIdProblem::Empty),
        ("nul\0byte", ThreadIdProblem::ControlCharacter),
        (too_long.as_str(), ThreadIdProblem::TooLong { len: 10_000 }),
    ] {
        let refused = runner
            .fork(Fork::new(session(), "main", to))
            .await
            .expect_err("the target thread id is refused");
        match &refused {
            ForkError::InvalidThread(invalid) => assert_eq!(invalid.problem, problem),
            other => panic!("expected InvalidThread for {to:?}, got {other:?}"),
        }
        assert!(
            refused.to_string().len() < 400,
            "the id is not copied whole into the message: {refused}"
        );
        assert!(
            storage
                .fetch_messages(&storage_context(to))
                .await
                .map_or(true, |messages| messages.is_empty()),
            "no message was copied into {to:?}"
        );
    }
    let refused = runner
        .fork(Fork::new(session(), "", "draft"))
        .await
        .expect_err("the source thread id is refused");
    assert!(
        matches!(refused, ForkError::InvalidThread(_)),
        "{refused:?}"
    );

    // The session-scope slot is untouched: another thread loads no forked record.
    let loaded = store
        .load_turn(&session(), &ThreadId::from("other"))
        .await
        .expect("loads");
    assert_eq!(loaded.middleware, Vec::new());
}

async fn a_store_refuses_an_empty_thread_id_in_every_call(store: SharedSessionStore) {
    let empty = ThreadId::from("");
    let refused = |result: Result<(), SessionStoreError>| {
        assert!(
            matches!(result, Err(SessionStoreError::InvalidThreadId(_))),
            "{result:?}"
        );
    };
    refused(store.load_turn(&session(), &empty).await.map(|_| ()));
    refused(
        store
            .commit_turn(
                &session(),
                TurnCommit {
                    thread: empty.clone(),
                    ..TurnCommit::default()
                },
            )
            .await,
    );
    refused(
        store
            .copy_thread_records(&session(), &ThreadId::from("main"), &empty)
            .await,
    );
    assert_eq!(
        store.get_session(&session()).await.expect("reads"),
        None,
        "nothing was created"
    );
}

#[tokio::test]
async fn a_turn_on_a_malformed_thread_id_is_refused_before_it_runs() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(InMemorySessionStore::new())
        .executor(acking())
        .build();
    let too_long = "t".repeat(ThreadId::MAX_LEN + 1);
    for thread in ["line\nbreak", too_long.as_str()] {
        let refused = runner
            .run(RawTurnContext::new("s-1", "You are a test.").thread_id(thread))
            .await
            .expect_err("a malformed thread id is refused");
        assert!(
            matches!(refused, InvalidTurnContext::InvalidThreadId(_)),
            "{refused:?}"
        );
        assert_eq!(refused.code().as_str(), "E_INVALID_TURN_CONTEXT");
    }
}

async fn on<F, Fut>(store: SharedSessionStore, rule: F)
where
    F: FnOnce(SharedSessionStore) -> Fut,
    Fut: Future<Output = ()>,
{
    rule(store).await;
}

async fn in_memory() -> SharedSessionStore {
    SharedSessionStore::new(InMemorySessionStore::new())
}

async fn sqlite() -> SharedSessionStore {
    SharedSessionStore::new(
        adk::sqlite::SqliteSessionStore::in_memory()
            .await
            .expect("opens"),
    )
}

async fn on_postgres<F, Fut>(label: &str, rule: F)
where
    F: FnOnce(SharedSessionStore) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(options) = adk_integration_tests::postgres_database::fresh_options(label) else {
        eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
        return;
    };
    let store = adk::postgres::PostgresSessionStore::connect_with(options)
        .await
        .expect("connects");
    rule(SharedSessionStore::new(store)).await;
}

macro_rules! on_every_store {
    ($($rule:ident),* $(,)?) => {
        mod in_memory_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $rule() {
                    super::on(super::in_memory().await, super::$rule).await;
                }
            )*
        }
        mod sqlite_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $rule() {
                    super::on(super::sqlite().await, super::$rule).await;
                }
            )*
        }
        mod postgres_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $rule() {
                    super::on_postgres("threadids", super::$rule).await;
                }
            )*
        }
    };
}

on_every_store!(
    a_fork_into_an_empty_or_malformed_thread_is_refused_and_writes_nothing,
    a_store_refuses_an_empty_thread_id_in_every_call,
);
