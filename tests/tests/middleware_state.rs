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
// Rules against a store (each runs on both stores)

async fn transient_state_starts_fresh_every_turn(store: SharedSessionStore) {
    let runner = runner_with(
        &store,
        |ctx| {
            assert!(
                ctx.middleware_state::<Attempts>().is_none(),
                "fresh every turn"
            );
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count += 1)?;
            Ok(())
        },
        nothing,
        skip,
    );
    for _ in 0..2 {
        let outcome = run(&runner, "main").await;
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    assert!(
        records(&store, "main").await.is_empty(),
        "transient state is never stored"
    );
}

fn remember_permission(ctx: &mut TurnContext) -> Result<(), BoxError> {
    ctx.update_middleware_state::<Permissions>(|permissions| {
        permissions
            .allowed
            .push(format!("tool-{}", permissions.allowed.len()));
    })?;
    Ok(())
}

async fn session_scoped_state_round_trips_and_every_thread_sees_it(store: SharedSessionStore) {
    let runner = runner_with(&store, remember_permission, nothing, skip);
    assert!(run(&runner, "main").await.is_completed());
    let outcome = run(&runner, "other-thread").await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        outcome
            .context
            .middleware_state::<Permissions>()
            .map(|p| p.allowed.clone()),
        Some(vec!["tool-0".to_owned(), "tool-1".to_owned()]),
        "the second thread continued the session's record"
    );
    let stored = record(&store, "main", "tests.permissions")
        .await
        .expect("stored");
    assert_eq!(stored.scope, RecordScope::Session);
    assert_eq!(stored.version, 1);
    assert_eq!(stored.json, json!({"allowed": ["tool-0", "tool-1"]}));
}

fn advance(ctx: &mut TurnContext) -> Result<(), BoxError> {
    ctx.update_middleware_state::<Progress>(|progress| progress.done += 1)?;
    Ok(())
}

async fn thread_scoped_state_round_trips_in_its_own_thread_only(store: SharedSessionStore) {
    let runner = runner_with(&store, advance, nothing, skip);
    for _ in 0..3 {
        assert!(run(&runner, "main").await.is_completed());
    }
    let outcome = run(&runner, "elsewhere").await;
    assert_eq!(
        outcome.context.middleware_state::<Progress>(),
        Some(&Progress { done: 1 })
    );
    let main = record(&store, "main", "tests.progress")
        .await
        .expect("stored");
    assert_eq!(
        (main.scope, main.json),
        (thread("main"), json!({"done": 3}))
    );
    let elsewhere = record(&store, "elsewhere", "tests.progress")
        .await
        .expect("stored");
    assert_eq!(elsewhere.json, json!({"done": 1}));
}

async fn middleware_state_commits_with_the_session_state_delta(store: SharedSessionStore) {
    let runner = runner_with(
        &store,
        |ctx| {
            ctx.state_mut().set_value("visits", json!(1))?;
            ctx.update_middleware_state::<Progress>(|progress| progress.done = 1)?;
            Ok(())
        },
        nothing,
        skip,
    );
    assert!(run(&runner, "main").await.is_completed());
    let loaded = store
        .load_turn(&session(), &"main".into())
        .await
        .expect("loads");
    assert_eq!(loaded.session.get("visits"), Some(&json!(1)));
    assert_eq!(loaded.middleware.len(), 1);
}

async fn dispatch_writes_reach_the_turn_on_ack(store: SharedSessionStore) {
    let runner = runner_with(
        &store,
        skip,
        |ctx| {
            ctx.update_middleware_state::<Progress>(|progress| progress.done = 4)?;
            Ok(())
        },
        |ctx| {
            assert_eq!(ctx.middleware_state::<Progress>().map(|p| p.done), Some(4));
            Ok(())
        },
    );
    let outcome = run(&runner, "main").await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let stored = record(&store, "main", "tests.progress")
        .await
        .expect("stored");
    assert_eq!(stored.json, json!({"done": 4}));
}

async fn dispatch_writes_are_dropped_on_nack(store: SharedSessionStore) {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(advance))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.update_middleware_state::<Progress>(|progress| progress.done = 100)?;
                ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 100)?;
                ctx.nack("no")?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, "main").await;
    assert!(
        matches!(outcome.status, TurnStatus::Failed(_)),
        "{:?}",
        outcome.status
    );
    assert_eq!(
        outcome.context.middleware_state::<Progress>(),
        Some(&Progress { done: 1 })
    );
    assert!(outcome.context.middleware_state::<Attempts>().is_none());
    assert!(
        records(&store, "main").await.is_empty(),
        "a refused turn commits nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// Forks

async fn main_thread_with_messages(storage: &SharedStorage) -> Vec<Message> {
    let messages = vec![
        Message::user("m-1", "plan a trip").expect("valid"),
        Message::assistant("m-2", "where to?").expect("valid"),
        Message::user("m-3", "Lisbon").expect("valid"),
    ];
    for message in &messages {
        storage
            .store_message(&storage_context("main"), message.clone())
            .await
            .expect("stored");
    }
    messages
}

async fn sqlite_storage() -> SharedStorage {
    SharedStorage::new(
        adk::sqlite::SqliteStorage::in_memory()
            .await
            .expect("opens"),
    )
}

async fn after_a_fork_session_state_is_shared_and_thread_state_diverges(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    let messages = main_thread_with_messages(&storage).await;
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(store.clone())
        .turn_input(step(|ctx| {
            advance(ctx)?;
            remember_permission(ctx)
        }))
        .executor(answering(nothing))
        .build();
    assert!(run(&runner, "main").await.is_completed()); // main: done 1, session: 1 permission

    let forked = runner
        .fork(Fork::new(session(), "main", "draft").at_message(messages[1].id()))
        .await
        .expect("forks");
    assert_eq!((forked.messages_copied, forked.records_copied), (2, 1));
    let copied = storage
        .fetch_messages(&storage_context("draft"))
        .await
        .expect("reads");
    let ids: Vec<&str> = copied.iter().map(Message::id).collect();
    assert_eq!(
        ids,
        [messages[0].id(), messages[1].id()],
        "up to and including the fork message"
    );

    // The fork starts from main's thread state, then both go their own way.
    let draft = run(&runner, "draft").await;
    assert_eq!(
        draft.context.middleware_state::<Progress>(),
        Some(&Progress { done: 2 })
    );
    let main = run(&runner, "main").await;
    assert_eq!(
        main.context.middleware_state::<Progress>(),
        Some(&Progress { done: 2 })
    );
    assert!(run(&runner, "main").await.is_completed());
    assert_eq!(
        record(&store, "main", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 3}))
    );
    assert_eq!(
        record(&store, "draft", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 2}))
    );

    // Session state is one record both threads wrote: 1 + draft + main + main.
    let permissions = record(&store, "draft", "tests.permissions")
        .await
        .expect("shared");
    assert_eq!(
        permissions.json["allowed"].as_array().map(Vec::len),
        Some(4)
    );
}

async fn a_fork_hook_rewrites_the_copied_thread_state(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    main_thread_with_messages(&storage).await;
    put(
        &store,
        thread("main"),
        "tests.progress",
        1,
        json!({"done": 5}),
    )
    .await;
    let forked = Fork::new(session(), "main", "draft")
        .hook(|states| {
            assert_eq!(
                states.get::<Progress>(),
                Some(&Progress { done: 5 }),
                "the copy"
            );
            states.update::<Progress>(|progress| progress.done = 0)?;
            Ok(())
        })
        .run(&storage, &store)
        .await
        .expect("forks");
    assert_eq!(
        forked.messages_copied, 3,
        "no message given: up to the latest"
    );
    assert_eq!(
        record(&store, "draft", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 0}))
    );
    assert_eq!(
        record(&store, "main", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 5}))
    );
}

async fn a_failing_fork_hook_persists_nothing(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    main_thread_with_messages(&storage).await;
    put(
        &store,
        thread("main"),
        "tests.progress",
        1,
        json!({"done": 5}),
    )
    .await;
    let error = Fork::new(session(), "main", "draft")
        .hook(|states| {
            states.update::<Progress>(|progress| progress.done = 0)?;
            Err("the plan cannot be forked".into())
        })
        .run(&storage, &store)
        .await
        .expect_err("the hook failed");
    assert!(matches!(error, ForkError::Hook(_)), "{error}");
    assert!(
        storage
            .fetch_messages(&storage_context("draft"))
            .await
            .expect("reads")
            .is_empty()
    );
    assert!(record(&store, "draft", "tests.progress").await.is_none());
}

async fn a_fork_at_a_message_the_thread_lacks_is_refused(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    main_thread_with_messages(&storage).await;
    let error = Fork::new(session(), "main", "draft")
        .at_message("no-such-message")
        .run(&storage, &store)
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ForkError::MessageNotFound { .. }),
        "{error}"
    );
    let error = Fork::new(session(), "empty", "draft")
        .run(&storage, &store)
        .await
        .expect_err("refused");
    assert!(matches!(error, ForkError::NoMessages { .. }), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Versioning

fn mismatches(recorder: &EventRecorder) -> Vec<adk::middleware_state::Mismatch> {
    recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::MiddlewareStateMismatch { mismatch, .. } => Some(mismatch),
            _ => None,
        })
        .collect()
}

fn observed_runner(
    store: &SharedSessionStore,
    recorder: &EventRecorder,
    input: Step,
) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .observe(recorder.listener())
        .turn_input(step(input))
        .executor(answering(nothing))
        .build()
}

async fn an_old_version_is_migrated_and_stored_at_the_new_version(store: SharedSessionStore) {
    put(&store, thread("main"), "tests.plan", 1, json!({"count": 2})).await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        let plan = ctx.middleware_state::<Plan>().cloned();
        assert_eq!(
            plan.map(|plan| plan.steps),
            Some(vec!["step 0".into(), "step 1".into()])
        );
        Ok(())
    });
    assert!(run(&runner, "main").await.is_completed());
    assert!(mismatches(&recorder).is_empty());
    let stored = record(&store, "main", "tests.plan").await.expect("kept");
    assert_eq!(
        (stored.version, stored.json),
        (2, json!({"steps": ["step 0", "step 1"]}))
    );
}

async fn a_mismatch_without_migration_is_reported_and_the_record_is_kept(
    store: SharedSessionStore,
) {
    put(
        &store,
        thread("main"),
        "tests.strict",
        1,
        json!({"value": 7}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        assert!(
            ctx.middleware_state::<Strict>().is_none(),
            "never silently defaulted"
        );
        let refused = ctx.update_middleware_state::<Strict>(|strict| strict.value = 1);
        assert!(
            matches!(
                refused,
                Err(adk::middleware_state::MiddlewareStateError::Unreadable(_))
            ),
            "{refused:?}"
        );
        Ok(())
    });
    assert!(run(&runner, "main").await.is_completed());
    let reported = mismatches(&recorder);
    assert_eq!(reported.len(), 1, "{reported:?}");
    let mismatch = &reported[0];
    assert!(
        mismatch.type_name.ends_with("Strict"),
        "{}",
        mismatch.type_name
    );
    assert_eq!((mismatch.stored_version, mismatch.current_version), (1, 2));
    assert_eq!(mismatch.reason, MismatchReason::VersionChanged);
    assert!(!mismatch.defaulted);
    let stored = record(&store, "main", "tests.strict").await.expect("kept");
    assert_eq!((stored.version, stored.json), (1, json!({"value": 7})));
}

async fn a_record_of_another_shape_is_reported_as_a_shape_change(store: SharedSessionStore) {
    put(
        &store,
        thread("main"),
        "tests.strict",
        2,
        json!({"value": "seven"}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, skip);
    assert!(run(&runner, "main").await.is_completed());
    let reported = mismatches(&recorder);
    assert!(
        matches!(&reported[..], [mismatch] if matches!(mismatch.reason, MismatchReason::ShapeChanged(_))),
        "{reported:?}"
    );
}

async fn default_on_mismatch_reports_then_starts_from_the_default(store: SharedSessionStore) {
    put(
        &store,
        thread("main"),
        "tests.lenient",
        1,
        json!({"value": 7}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        assert!(ctx.middleware_state::<Lenient>().is_none());
        ctx.update_middleware_state::<Lenient>(|lenient| lenient.value += 1)?;
        Ok(())
    });
    assert!(run(&runner, "main").await.is_completed());
    let reported = mismatches(&recorder);
    assert!(
        matches!(&reported[..], [mismatch] if mismatch.defaulted),
        "{reported:?}"
    );
    let stored = record(&store, "main", "tests.lenient")
        .await
        .expect("rewritten");
    assert_eq!((stored.version, stored.json), (2, json!({"value": 1})));
}

async fn a_record_of_no_known_type_is_kept_and_reported_once(store: SharedSessionStore) {
    put(
        &store,
        RecordScope::Session,
        "tests.removed_type",
        3,
        json!({"x": 1}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, remember_permission);
    for _ in 0..2 {
        assert!(run(&runner, "main").await.is_completed());
    }
    let unknown: Vec<_> = recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::MiddlewareStateUnknown { record, .. } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(unknown.len(), 1, "once per runner: {unknown:?}");
    assert_eq!(
        (unknown[0].key.as_str(), unknown[0].version),
        ("tests.removed_type", 3)
    );
    let kept = record(&store, "main", "tests.removed_type")
        .await
        .expect("kept");
    assert_eq!(kept.json, json!({"x": 1}));
}

// ---------------------------------------------------------------------------------------------
// Save failures

fn error_codes(recorder: &EventRecorder) -> Vec<ErrorCode> {
    recorder
        .errors()
        .iter()
        .map(adk::events::TurnError::code)
        .collect()
}

async fn a_state_that_cannot_be_saved_is_reported_and_the_answer_still_stands(
    store: SharedSessionStore,
) {
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        ctx.state_mut().set_value("visits", json!(1))?;
        ctx.update_middleware_state::<Unencodable>(|state| {
            state.by_pair.insert((1, 2), 3);
        })?;
        Ok(())
    });
    let outcome = run(&runner, "main").await;
    assert_eq!(
        error_codes(&recorder),
        [ErrorCode::MiddlewareStateSaveFailed]
    );
    assert_eq!(
        outcome.error().map(adk::events::TurnError::code),
        Some(ErrorCode::MiddlewareStateSaveFailed)
    );
    assert!(outcome.reply().is_some(), "the answer still stands");
    let loaded = store
        .load_turn(&session(), &"main".into())
        .await
        .expect("loads");
    assert!(
        loaded.session.is_empty() && loaded.middleware.is_empty(),
        "nothing half-saved"
    );
}

/// A store whose commits fail.
struct RefusingStore(SharedSessionStore);

impl SessionStore for RefusingStore {
    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        self.0.create_session(key, state).await
    }
    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        self.0.get_session(key).await
    }
    async fn list_sessions(
        &self,
        app: &adk::ids::AppName,
        user: Option<&adk::ids::UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        self.0.list_sessions(app, user).await
    }
    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        self.0.delete_session(key).await
    }
    async fn app_state(
        &self,
        app: &adk::ids::AppName,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        self.0.app_state(app).await
    }
    async fn user_state(
        &self,
        app: &adk::ids::AppName,
        user: &adk::ids::UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        self.0.user_state(app, user).await
    }
    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &adk::ids::ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        self.0.load_turn(key, thread).await
    }
    async fn commit_turn(
        &self,
        _key: &SessionKey,
        _commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        Err(SessionStoreError::backend(std::io::Error::other(
            "disk full",
        )))
    }
    async fn copy_thread_records(
        &self,
        key: &SessionKey,
        from: &adk::ids::ThreadId,
        to: &adk::ids::ThreadId,
    ) -> Result<(), SessionStoreError> {
        self.0.copy_thread_records(key, from, to).await
    }
}

async fn a_failed_commit_is_reported_and_the_answer_still_stands(store: SharedSessionStore) {
    let recorder = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(RefusingStore(store.clone()))
        .observe(recorder.listener())
        .turn_input(step(advance))
        .executor(answering(nothing))
        .build();
    let outcome = run(&runner, "main").await;
    assert_eq!(error_codes(&recorder), [ErrorCode::StateCommitFailed]);
    assert!(matches!(outcome.status, TurnStatus::Failed(_)));
    assert!(outcome.reply().is_some(), "the answer still stands");
    assert!(records(&store, "main").await.is_empty());
}

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
