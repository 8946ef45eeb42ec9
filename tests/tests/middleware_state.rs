//! Typed middleware state as a specification: auto-create, immediate visibility, snapshots,
//! failed transforms, transient reset, persistent round trips per scope, dispatch ack/nack,
//! forks (session shared, thread copied, hook rewrite and failure), versioning (migration,
//! mismatch, opt-in default, unknown records) and save failures.
//!
//! Every rule that touches a store runs on the in-memory and the SQLite session store, and on
//! `PostgresSessionStore` in a fresh schema when `ADK_TEST_POSTGRES_URL` names a database
//! (`.ci/postgres run cargo test -p adk-integration-tests --test middleware_state`); see
//! `on_every_store!` at the end.

use std::collections::HashMap;
use std::future::Future;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::events::{ErrorCode, Event};
use adk::middleware_state::{MiddlewareState, MismatchReason};
use adk::pipeline::{BoxError, Middleware, Next, TurnInput, TurnOutput, from_fn};
use adk::primitives::Message;
use adk::runner::{TurnOutcome, TurnStatus};
use adk::state::{
    Fork, ForkError, InMemorySessionStore, LoadedTurn, MiddlewareStateRecord, MiddlewareStateWrite,
    RecordScope, Session, SessionKey, SessionStore, SessionStoreError, SharedSessionStore,
    TurnCommit,
};
use adk::storage::{NoopStorage, SharedStorage, StorageContext};
use adk_integration_tests::EventRecorder;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// The states under test

/// Transient: a circuit breaker's failure count.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq)]
struct Attempts {
    count: u32,
}

/// Persistent, session-scoped: remembered permission choices.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[middleware_state(persistent, scope = session, key = "tests.permissions")]
struct Permissions {
    allowed: Vec<String>,
}

/// Persistent, thread-scoped: a plan's progress along one conversation path.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[middleware_state(persistent, key = "tests.progress")]
struct Progress {
    done: u32,
}

/// Version 2 with a migration from version 1's `{"count": n}`.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[middleware_state(persistent, version = 2, key = "tests.plan", migrate = Plan::upgrade)]
struct Plan {
    steps: Vec<String>,
}

impl Plan {
    fn upgrade(from_version: u32, json: Value) -> Result<Self, String> {
        match (from_version, json["count"].as_u64()) {
            (1, Some(count)) => Ok(Self {
                steps: (0..count).map(|step| format!("step {step}")).collect(),
            }),
            _ => Err(format!("cannot read version {from_version}: {json}")),
        }
    }
}

/// Version 2, no migration, no opt-in default.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[middleware_state(persistent, version = 2, key = "tests.strict")]
struct Strict {
    value: u32,
}

/// Version 2, no migration, starts from the default after a mismatch.
#[derive(MiddlewareState, Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[middleware_state(persistent, version = 2, key = "tests.lenient", default_on_mismatch)]
struct Lenient {
    value: u32,
}

/// Persistent, but JSON cannot hold it: its map has non-string keys.
#[derive(MiddlewareState, Default, Clone, Debug, Serialize, Deserialize)]
#[middleware_state(persistent, key = "tests.unencodable")]
struct Unencodable {
    by_pair: HashMap<(u8, u8), u8>,
}

// ---------------------------------------------------------------------------------------------
// Helpers

type Step = fn(&mut TurnContext) -> Result<(), BoxError>;

/// A turn-scoped middleware whose pre-step is `body`.
fn step(body: Step) -> impl Middleware<TurnInput> + Middleware<TurnOutput> {
    from_fn(move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
        Box::pin(async move {
            body(ctx)?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    })
}

/// An executor that runs `body`, stores an assistant answer and acks.
fn answering(
    body: fn(&mut DispatchContext) -> Result<(), BoxError>,
) -> impl adk::dispatch::Executor {
    executor_fn(move |ctx: &mut DispatchContext| {
        Box::pin(async move {
            body(ctx)?;
            let answer = Message::assistant(format!("{}-answer", ctx.turn_id()), "done")?;
            ctx.store_message(answer).await?;
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

fn nothing(_: &mut DispatchContext) -> Result<(), BoxError> {
    Ok(())
}

fn session() -> SessionKey {
    SessionKey::new("app", "ada", "s-1")
}

fn raw(thread: &str) -> RawTurnContext {
    RawTurnContext::new("s-1", "You are a test.")
        .app_name("app")
        .user_id("ada")
        .thread_id(thread)
}

fn storage_context(thread: &str) -> StorageContext {
    StorageContext::new("s-1")
        .with_app_name("app")
        .with_user_id("ada")
        .with_thread_id(thread)
}

async fn run(runner: &TurnRunner, thread: &str) -> TurnOutcome {
    runner.run(raw(thread)).await.expect("valid input")
}

fn runner_with(
    store: &SharedSessionStore,
    input: Step,
    executor: fn(&mut DispatchContext) -> Result<(), BoxError>,
    output: Step,
) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(input))
        .executor(answering(executor))
        .turn_output(step(output))
        .build()
}

fn skip(_: &mut TurnContext) -> Result<(), BoxError> {
    Ok(())
}

async fn records(store: &SharedSessionStore, thread: &str) -> Vec<MiddlewareStateRecord> {
    store
        .load_turn(&session(), &thread.into())
        .await
        .expect("the store loads")
        .middleware
}

async fn record(
    store: &SharedSessionStore,
    thread: &str,
    key: &str,
) -> Option<MiddlewareStateRecord> {
    records(store, thread)
        .await
        .into_iter()
        .find(|record| record.key == key)
}

async fn put(store: &SharedSessionStore, scope: RecordScope, key: &str, version: u32, json: Value) {
    let commit = TurnCommit {
        middleware: vec![MiddlewareStateWrite::Put(MiddlewareStateRecord {
            scope,
            key: key.to_owned(),
            version,
            json,
        })],
        ..TurnCommit::default()
    };
    store
        .commit_turn(&session(), commit)
        .await
        .expect("the store commits");
}

fn thread(id: &str) -> RecordScope {
    RecordScope::Thread(id.into())
}

// ---------------------------------------------------------------------------------------------
// Reading and updating (no store needed)

#[tokio::test]
async fn an_update_creates_the_default_when_the_state_is_missing() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            assert!(
                ctx.middleware_state::<Attempts>().is_none(),
                "unset before any write"
            );
            ctx.update_middleware_state::<Attempts>(|attempts| {
                assert_eq!(
                    *attempts,
                    Attempts::default(),
                    "the update starts from Default"
                );
                attempts.count += 1;
            })?;
            Ok(())
        }))
        .executor(answering(nothing))
        .build();
    let outcome = run(&runner, "main").await;
    assert_eq!(
        outcome.context.middleware_state::<Attempts>(),
        Some(&Attempts { count: 1 })
    );
}

#[tokio::test]
async fn an_update_is_visible_at_once_to_later_middleware_the_executor_and_turn_output() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 1)?;
            Ok(())
        }))
        .turn_input(step(|ctx| {
            assert_eq!(ctx.middleware_state::<Attempts>().map(|a| a.count), Some(1));
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count += 1)?;
            Ok(())
        }))
        .executor(answering(|ctx| {
            assert_eq!(ctx.middleware_state::<Attempts>().map(|a| a.count), Some(2));
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count += 1)?;
            Ok(())
        }))
        .turn_output(step(|ctx| {
            assert_eq!(ctx.middleware_state::<Attempts>().map(|a| a.count), Some(3));
            Ok(())
        }))
        .build();
    let outcome = run(&runner, "main").await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn a_snapshot_taken_before_an_update_keeps_its_value() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 5)?;
            // A read borrows the context, so it cannot change under the reader; a clone is a
            // snapshot that later updates do not reach.
            let snapshot = ctx.middleware_state::<Attempts>().cloned();
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 6)?;
            assert_eq!(snapshot, Some(Attempts { count: 5 }));
            assert_eq!(ctx.middleware_state::<Attempts>().map(|a| a.count), Some(6));
            Ok(())
        }))
        .executor(answering(nothing))
        .build();
    assert!(run(&runner, "main").await.is_completed());
}

#[tokio::test]
async fn a_failed_transform_leaves_the_state_unchanged() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            // A missing state stays missing.
            let refused = ctx.try_update_middleware_state(|attempts: &mut Attempts| {
                attempts.count = 99;
                Err(BoxError::from("refused"))
            });
            assert!(refused.is_err());
            assert!(ctx.middleware_state::<Attempts>().is_none());
            // A set state keeps its value, though the transform changed its copy first.
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 1)?;
            let refused = ctx.try_update_middleware_state(|attempts: &mut Attempts| {
                attempts.count = 99;
                Err(BoxError::from("refused"))
            });
            assert!(refused.is_err());
            assert_eq!(ctx.middleware_state::<Attempts>().map(|a| a.count), Some(1));
            // A transform that succeeds is applied.
            ctx.try_update_middleware_state(|attempts: &mut Attempts| {
                attempts.count += 1;
                Ok::<(), BoxError>(())
            })?;
            assert_eq!(ctx.middleware_state::<Attempts>().map(|a| a.count), Some(2));
            Ok(())
        }))
        .executor(answering(nothing))
        .build();
    assert!(run(&runner, "main").await.is_completed());
}

#[tokio::test]
async fn several_states_are_read_together_under_one_borrow() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(InMemorySessionStore::new())
        .turn_input(step(|ctx| {
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 2)?;
            ctx.update_middleware_state::<Progress>(|progress| progress.done = 7)?;
            let states = ctx.middleware_states();
            let (attempts, progress) = (states.get::<Attempts>(), states.get::<Progress>());
            assert_eq!(
                (attempts.map(|a| a.count), progress.map(|p| p.done)),
                (Some(2), Some(7))
            );
            Ok(())
        }))
        .executor(answering(nothing))
        .build();
    assert!(run(&runner, "main").await.is_completed());
}

// ---------------------------------------------------------------------------------------------
// The rules, by topic (each runs on every store below)

#[path = "middleware_state/forks.rs"]
mod forks;
#[path = "middleware_state/save_failures.rs"]
mod save_failures;
#[path = "middleware_state/store_rules.rs"]
mod store_rules;
#[path = "middleware_state/versions.rs"]
mod versions;

use forks::*;
use save_failures::*;
use store_rules::*;
use versions::*;

// ---------------------------------------------------------------------------------------------
// Both stores

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

async fn on<F, Fut>(store: impl Future<Output = SharedSessionStore>, rule: F)
where
    F: FnOnce(SharedSessionStore) -> Fut,
    Fut: Future<Output = ()>,
{
    rule(store.await).await;
}

/// Runs `rule` on a PostgreSQL session store in a fresh schema (named after `label`), or says
/// it was not checked.
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
                    super::on(super::in_memory(), super::$rule).await;
                }
            )*
        }
        mod sqlite_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $rule() {
                    super::on(super::sqlite(), super::$rule).await;
                }
            )*
        }
        mod postgres_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $rule() {
                    super::on_postgres("mws", super::$rule).await;
                }
            )*
        }
    };
}

on_every_store!(
    transient_state_starts_fresh_every_turn,
    session_scoped_state_round_trips_and_every_thread_sees_it,
    thread_scoped_state_round_trips_in_its_own_thread_only,
    middleware_state_commits_with_the_session_state_delta,
    dispatch_writes_reach_the_turn_on_ack,
    dispatch_writes_are_dropped_on_nack,
    after_a_fork_session_state_is_shared_and_thread_state_diverges,
    a_fork_hook_rewrites_the_copied_thread_state,
    a_failing_fork_hook_persists_nothing,
    a_fork_at_a_message_the_thread_lacks_is_refused,
    an_old_version_is_migrated_and_stored_at_the_new_version,
    a_mismatch_without_migration_is_reported_and_the_record_is_kept,
    a_record_of_another_shape_is_reported_as_a_shape_change,
    default_on_mismatch_reports_then_starts_from_the_default,
    a_record_of_no_known_type_is_kept_and_reported_once,
    a_state_that_cannot_be_saved_is_reported_and_the_answer_still_stands,
    a_failed_commit_is_reported_and_the_answer_still_stands,
);
