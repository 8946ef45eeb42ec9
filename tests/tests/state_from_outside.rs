//! State from outside a turn (issue 32 item 3): a caller hands a state delta with the run
//! (Google ADK's R9), a tool handler reads and writes session state (R10), a `turn_input`
//! middleware that answers by itself completes the turn (R6), and app and user state are read
//! and written without a turn.
//!
//! Every scenario runs on the in-memory, the SQLite and the PostgreSQL session store (the last
//! in a fresh schema when `ADK_TEST_POSTGRES_URL` names a database:
//! `.ci/postgres run cargo test -p adk-integration-tests --test state_from_outside`).

use adk::prelude::*;
use adk::state::{InMemorySessionStore, SessionKey, SessionStore, SharedSessionStore};
use serde_json::{Map, Value, json};

/// Runs the scenario `$name(store)` once per session store, as `$name::in_memory`,
/// `$name::sqlite` and `$name::postgres`.
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test]
            async fn in_memory() {
                super::$name(SharedSessionStore::new(InMemorySessionStore::new())).await;
            }

            #[tokio::test]
            async fn sqlite() {
                let store = adk::sqlite::SqliteSessionStore::in_memory().await.expect("opens");
                super::$name(SharedSessionStore::new(store)).await;
            }

            #[tokio::test]
            async fn postgres() {
                let Some(options) = adk_integration_tests::postgres_database::fresh_options("outside")
                else {
                    eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
                    return;
                };
                let store = adk::postgres::PostgresSessionStore::connect_with(options)
                    .await
                    .expect("connects");
                super::$name(SharedSessionStore::new(store)).await;
            }
        }
    )*};
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().expect("an object").clone()
}

fn key(session: &str) -> SessionKey {
    SessionKey::new("app", "ada", session)
}

fn raw(session: &str) -> RawTurnContext {
    RawTurnContext::new(session, "You are a test.")
        .app_name("app")
        .user_id("ada")
        .user_message("hello")
}

async fn state_of(store: &SharedSessionStore, session: &str) -> Map<String, Value> {
    store
        .get_session(&key(session))
        .await
        .expect("reads")
        .expect("the session exists")
        .state
}

/// An executor that records the state it saw under `temp:`-free key `seen` and acknowledges.
fn recording_executor(
    seen: std::sync::Arc<std::sync::Mutex<Option<Map<String, Value>>>>,
) -> impl adk::dispatch::Executor {
    adk::dispatch::executor_fn(move |ctx: &mut DispatchContext| {
        let seen = seen.clone();
        Box::pin(async move {
            *seen.lock().expect("not poisoned") = Some(ctx.state().to_map());
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

// R9: a state delta with the run.

async fn the_callers_delta_is_seen_by_the_turn_and_committed_with_it(store: SharedSessionStore) {
    let seen = std::sync::Arc::default();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(recording_executor(std::sync::Arc::clone(&seen)))
        .build();
    let delta = json!({"step": 2, "user:locale": "de", "app:motd": "hi", "temp:trace": "t-1"});
    let outcome = runner
        .run(raw("r9").state_delta(object(delta.clone())))
        .await
        .expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);

    let seen = seen
        .lock()
        .expect("not poisoned")
        .clone()
        .expect("the executor ran");
    assert_eq!(
        seen,
        object(delta),
        "the whole delta, temp: included, is visible to the turn"
    );
    assert_eq!(
        state_of(&store, "r9").await,
        object(json!({"step": 2, "user:locale": "de", "app:motd": "hi"})),
        "committed with the turn, temp: left out"
    );
    assert_eq!(
        store
            .user_state(&key("r9").app, &key("r9").user)
            .await
            .expect("reads"),
        object(json!({"locale": "de"}))
    );
}

async fn a_turn_that_fails_commits_none_of_the_callers_delta(store: SharedSessionStore) {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(adk::dispatch::executor_fn(|_ctx: &mut DispatchContext| {
            Box::pin(async move { Err::<(), BoxError>("the model is down".into()) })
        }))
        .build();
    let outcome = runner
        .run(raw("r9-failed").state_value("user:locale", json!("de")))
        .await
        .expect("valid input");
    assert!(!outcome.is_completed(), "{:?}", outcome.status);
    assert!(
        store
            .get_session(&key("r9-failed"))
            .await
            .expect("reads")
            .is_none(),
        "nothing committed"
    );
    assert!(
        store
            .user_state(&key("r9").app, &key("r9").user)
            .await
            .expect("reads")
            .is_empty()
    );
}

async fn the_callers_delta_is_refused_as_stale_like_any_write(store: SharedSessionStore) {
    store
        .create_session(&key("r9-stale"), object(json!({"step": 1})))
        .await
        .expect("creates");
    // Another writer changes `step` after this turn loaded it.
    let interloper = store.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(adk::dispatch::executor_fn(
            move |ctx: &mut DispatchContext| {
                let interloper = interloper.clone();
                Box::pin(async move {
                    let mut commit = adk::state::TurnCommit::default();
                    commit.session.push(adk::state::StateWrite {
                        name: "step".into(),
                        change: adk::state::StateChange::Set(json!(7)),
                        expected: Some(json!(1)),
                    });
                    interloper.commit_turn(&key("r9-stale"), commit).await?;
                    ctx.ack()?;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .build();
    let outcome = runner
        .run(raw("r9-stale").state_value("step", json!(2)))
        .await
        .expect("valid input");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("refused as stale, got {:?}", outcome.status);
    };
    assert_eq!(error.code(), adk::events::ErrorCode::StaleState);
    assert_eq!(
        state_of(&store, "r9-stale").await,
        object(json!({"step": 7}))
    );
}

on_every_store!(
    the_callers_delta_is_seen_by_the_turn_and_committed_with_it,
    a_turn_that_fails_commits_none_of_the_callers_delta,
    the_callers_delta_is_refused_as_stale_like_any_write,
);

#[tokio::test]
async fn a_delta_key_with_an_empty_name_is_refused_before_the_turn_runs() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .build();
    let error = runner
        .run(raw("r9-invalid").state_value("user:", json!(1)))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, adk::context::InvalidTurnContext::StateDelta(_)),
        "{error:?}"
    );
}
