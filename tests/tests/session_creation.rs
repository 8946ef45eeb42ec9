//! A session exists once a turn ran in it: a completed turn that wrote only `temp:` keys, or no
//! state at all, still creates its session (Google ADK creates it before the first event), so
//! `get_session` and `list_sessions` find it.
//!
//! Runs on the in-memory and the SQLite session store, and on `PostgresSessionStore` in a fresh
//! schema when `ADK_TEST_POSTGRES_URL` names a database
//! (`.ci/postgres run cargo test -p adk-integration-tests --test session_creation`).

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::state::{InMemorySessionStore, SessionKey, SessionStore, SharedSessionStore};
use adk::storage::NoopStorage;
use serde_json::json;

fn temp_only() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.state_mut().set_value("temp:scratch", json!(1))?;
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

async fn a_turn_that_wrote_only_temp_keys_creates_its_session(store: SharedSessionStore) {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(temp_only())
        .build();
    let raw = RawTurnContext::new("s-temp", "You are a test.")
        .app_name("app")
        .user_id("ada")
        .user_message("hello");
    let outcome = runner.run(raw).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);

    let key = SessionKey::new("app", "ada", "s-temp");
    let session = store
        .get_session(&key)
        .await
        .expect("reads")
        .expect("the session exists once a turn ran in it");
    assert!(session.state.is_empty(), "temp: keys are not stored");
    let listed = store
        .list_sessions(&key.app, Some(&key.user))
        .await
        .expect("lists");
    assert_eq!(listed.len(), 1);
}

#[tokio::test]
async fn in_memory_a_turn_that_wrote_only_temp_keys_creates_its_session() {
    a_turn_that_wrote_only_temp_keys_creates_its_session(SharedSessionStore::new(
        InMemorySessionStore::new(),
    ))
    .await;
}

#[tokio::test]
async fn sqlite_a_turn_that_wrote_only_temp_keys_creates_its_session() {
    let store = adk::sqlite::SqliteSessionStore::in_memory()
        .await
        .expect("opens");
    a_turn_that_wrote_only_temp_keys_creates_its_session(SharedSessionStore::new(store)).await;
}

#[tokio::test]
async fn postgres_a_turn_that_wrote_only_temp_keys_creates_its_session() {
    let Some(options) = adk_integration_tests::postgres_database::fresh_options("tempsession")
    else {
        eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
        return;
    };
    let store = adk::postgres::PostgresSessionStore::connect_with(options)
        .await
        .expect("connects");
    a_turn_that_wrote_only_temp_keys_creates_its_session(SharedSessionStore::new(store)).await;
}
