//! Session state as a specification: the four scopes, write-through with a delta, when a write
//! reaches the store, dispatch writes following the primitives' rules, templating, the output
//! key, one load and one atomic commit per turn, and many concurrent turns on one session.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::events::{ErrorCode, Event};
use adk::pipeline::{BoxError, Middleware, Next, TurnInput, TurnOutput, from_fn};
use adk::primitives::Message;
use adk::runner::{TurnOutcome, TurnStatus};
use adk::state::{
    InMemorySessionStore, SessionKey, SessionStore, SessionStoreError, StateKey, conformance,
};
use adk::storage::NoopStorage;
use adk_integration_tests::EventRecorder;
use serde_json::{Value, json};

const THEME: StateKey<String> = adk::state_key!("user:theme" => String);
const SCRATCH: StateKey<u32> = adk::state_key!("temp:scratch" => u32);
const VISITS: StateKey<u32> = adk::state_key!("visits" => u32);
const MOTD: StateKey<String> = adk::state_key!("app:motd" => String);

fn acking() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

/// A turn-scoped middleware whose pre-step is `body` (a plain function, so it is `'static`).
fn step(
    body: fn(&mut TurnContext) -> Result<(), BoxError>,
) -> impl Middleware<TurnInput> + Middleware<TurnOutput> {
    from_fn(move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
        Box::pin(async move {
            body(ctx)?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    })
}

fn key(user: &str, session: &str) -> SessionKey {
    SessionKey::new("app", user, session)
}

fn raw(user: &str, session: &str) -> RawTurnContext {
    RawTurnContext::new(session, "You are a test.")
        .app_name("app")
        .user_id(user)
}

async fn run(runner: &TurnRunner, raw: RawTurnContext) -> TurnOutcome {
    runner.run(raw).await.expect("valid input")
}

fn failure_code(outcome: &TurnOutcome) -> Option<ErrorCode> {
    match &outcome.status {
        TurnStatus::Failed(error) => Some(error.code()),
        _ => None,
    }
}

async fn stored(
    store: &InMemorySessionStore,
    user: &str,
    session: &str,
) -> serde_json::Map<String, Value> {
    store
        .get_session(&key(user, session))
        .await
        .expect("the store answers")
        .map(|session| session.state)
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The store contract, against the in-memory store

#[tokio::test]
async fn the_in_memory_store_passes_the_session_store_conformance_suite() {
    let passed = conformance::check(&InMemorySessionStore::new())
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, conformance::RULES);
}

// ---------------------------------------------------------------------------------------------
// Scopes and persistence across turns

/// A `turn_input` middleware that counts visits, remembers a theme per user and uses scratch.
fn remembering_runner(store: &InMemorySessionStore) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(|ctx: &mut TurnContext| {
            let visits = ctx.state().get(VISITS)?.unwrap_or(0);
            ctx.state_mut().set(VISITS, visits + 1)?;
            if !ctx.state().has(THEME) {
                ctx.state_mut().set(THEME, "dark".to_owned())?;
            }
            assert!(
                !ctx.state().has(SCRATCH),
                "temp: never comes back from the store"
            );
            ctx.state_mut().set(SCRATCH, 7)?;
            ctx.state_mut().set(MOTD, "hello".to_owned())?;
            Ok::<(), BoxError>(())
        }))
        .executor(acking())
        .build()
}

#[tokio::test]
async fn user_state_is_remembered_across_turns_and_sessions_and_temp_state_is_not() {
    let store = InMemorySessionStore::new();
    let runner = remembering_runner(&store);
    assert!(run(&runner, raw("ada", "s1")).await.is_completed());
    assert!(run(&runner, raw("ada", "s1")).await.is_completed());
    assert_eq!(
        stored(&store, "ada", "s1").await,
        *json!({"visits": 2, "user:theme": "dark", "app:motd": "hello"})
            .as_object()
            .expect("object")
    );

    // Another session of the same user sees the user's theme, not the first session's visits.
    let outcome = run(&runner, raw("ada", "s2")).await;
    assert_eq!(outcome.context.state().get(VISITS).expect("u32"), Some(1));
    assert_eq!(
        store
            .user_state(&"app".into(), &"ada".into())
            .await
            .expect("answers")["theme"],
        "dark"
    );
    // Another user shares the app's state only.
    let other = run(&runner, raw("bob", "s3")).await;
    assert_eq!(
        other.context.state().value("app:motd"),
        Some(&json!("hello"))
    );
    assert!(
        store
            .user_state(&"app".into(), &"bob".into())
            .await
            .expect("answers")
            .contains_key("theme")
    );
}

#[tokio::test]
async fn without_a_session_store_temp_state_lives_for_one_turn() {
    // A key outside `temp:` without a store fails the turn: see `state_without_store.rs`.
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx: &mut TurnContext| {
            assert!(!ctx.state().has(SCRATCH), "nothing carried over");
            ctx.state_mut().set(SCRATCH, 1)?;
            Ok::<(), BoxError>(())
        }))
        .executor(acking())
        .build();
    for _ in 0..2 {
        let outcome = run(&runner, raw("ada", "s1")).await;
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
}

#[tokio::test]
async fn writes_are_visible_at_once_to_later_middleware_and_the_executor() {
    let seen = Arc::new(AtomicUsize::new(0));
    let seen_by_executor = Arc::clone(&seen);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx: &mut TurnContext| {
            ctx.state_mut().set_value("temp:handoff", json!(41))?;
            Ok::<(), BoxError>(())
        }))
        .turn_input(step(|ctx: &mut TurnContext| {
            let value = ctx.state().value("temp:handoff").cloned();
            ctx.state_mut().set_value(
                "temp:handoff",
                json!(value.and_then(|v| v.as_u64()).unwrap_or(0) + 1),
            )?;
            Ok::<(), BoxError>(())
        }))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let seen = Arc::clone(&seen_by_executor);
            Box::pin(async move {
                let value = ctx.state().value("temp:handoff").and_then(Value::as_u64);
                seen.store(usize::try_from(value.unwrap_or(0))?, Ordering::SeqCst);
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    assert!(run(&runner, raw("ada", "s1")).await.is_completed());
    assert_eq!(seen.load(Ordering::SeqCst), 42);
}

#[tokio::test]
async fn null_is_committed_as_a_value_and_a_delete_as_a_removal() {
    let store = InMemorySessionStore::new();
    store
        .create_session(
            &key("ada", "s1"),
            json!({"gone": 1}).as_object().expect("object").clone(),
        )
        .await
        .expect("created");
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(|ctx: &mut TurnContext| {
            ctx.state_mut().set_value("nothing", Value::Null)?;
            assert!(ctx.state_mut().delete("gone"));
            assert!(!ctx.state().has("gone"));
            Ok::<(), BoxError>(())
        }))
        .executor(acking())
        .build();
    assert!(run(&runner, raw("ada", "s1")).await.is_completed());
    assert_eq!(
        stored(&store, "ada", "s1").await,
        *json!({"nothing": null}).as_object().expect("object")
    );
}

// ---------------------------------------------------------------------------------------------
// Dispatch writes follow the primitives' rules

fn dispatch_runner(store: &InMemorySessionStore, finish: &'static str) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.state_mut().set_value("from_dispatch", json!(true))?;
                assert!(
                    ctx.state().has("from_dispatch"),
                    "visible at once in the dispatch"
                );
                match finish {
                    "ack" => ctx.ack()?,
                    "nack" => ctx.nack("refused")?,
                    "abort" => ctx.abort("stop"),
                    _ => return Err("failed".into()),
                }
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

#[tokio::test]
async fn a_dispatch_write_reaches_the_turn_and_the_store_on_ack() {
    let store = InMemorySessionStore::new();
    let outcome = run(&dispatch_runner(&store, "ack"), raw("ada", "s1")).await;
    assert!(outcome.context.state().has("from_dispatch"));
    assert_eq!(
        stored(&store, "ada", "s1").await.get("from_dispatch"),
        Some(&json!(true))
    );
}

#[tokio::test]
async fn a_dispatch_write_is_dropped_on_nack_abort_and_error() {
    for finish in ["nack", "abort", "error"] {
        let store = InMemorySessionStore::new();
        let outcome = run(&dispatch_runner(&store, finish), raw("ada", "s1")).await;
        assert!(!outcome.context.state().has("from_dispatch"), "{finish}");
        assert!(stored(&store, "ada", "s1").await.is_empty(), "{finish}");
    }
}

#[tokio::test]
async fn a_failed_turn_commits_nothing() {
    let store = InMemorySessionStore::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(|ctx: &mut TurnContext| {
            ctx.state_mut().set(VISITS, 1)?;
            Ok::<(), BoxError>(())
        }))
        .turn_output(step(|_ctx: &mut TurnContext| {
            Err::<(), BoxError>("broken".into())
        }))
        .executor(acking())
        .build();
    let outcome = run(&runner, raw("ada", "s1")).await;
    assert_eq!(failure_code(&outcome), Some(ErrorCode::OutputPipelineError));
    assert_eq!(
        store.get_session(&key("ada", "s1")).await.expect("answers"),
        None
    );
}

// docs/state.md: "A turn that fails or is aborted commits nothing." A dispatch aborted on its own
// (`DispatchAborted`) gave no answer: `turn_output` runs, but no state is committed, neither what
// `turn_input` wrote nor what `turn_output` did.
#[tokio::test]
async fn a_turn_that_fails_or_is_aborted_commits_nothing_a_dispatch_abort_included() {
    let store = InMemorySessionStore::new();
    let turn_output_ran = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&turn_output_ran);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(|ctx: &mut TurnContext| {
            ctx.state_mut().set(VISITS, 1)?;
            Ok::<(), BoxError>(())
        }))
        .turn_output(from_fn(
            move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
                let ran = Arc::clone(&ran);
                Box::pin(async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    ctx.state_mut().set(THEME, "dark".to_owned())?;
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.abort("no answer this time");
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw("ada", "s1")).await;
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
    assert_eq!(
        turn_output_ran.load(Ordering::SeqCst),
        1,
        "turn_output runs"
    );
    assert_eq!(
        store.get_session(&key("ada", "s1")).await.expect("answers"),
        None,
        "a dispatch-aborted turn committed its state"
    );
    assert!(
        store
            .user_state(&"app".into(), &"ada".into())
            .await
            .expect("answers")
            .is_empty(),
        "a dispatch-aborted turn committed its user state"
    );
}

// ---------------------------------------------------------------------------------------------
// Templating

fn templating_runner(
    store: &InMemorySessionStore,
    prompt: &str,
    calls: Arc<AtomicUsize>,
) -> (TurnRunner, RawTurnContext) {
    let prompts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(|ctx: &mut TurnContext| {
            ctx.state_mut().set_value("temp:mood", json!("cheerful"))?;
            Ok::<(), BoxError>(())
        }))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let calls = Arc::clone(&calls);
            let prompts = Arc::clone(&prompts);
            Box::pin(async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let rendered = format!(
                    "{} | {}",
                    ctx.system_prompt().render(),
                    ctx.standing_instructions
                        .iter()
                        .map(|i| i.render())
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                prompts
                    .lock()
                    .map_err(|_| "poisoned")?
                    .push(rendered.clone());
                ctx.state_mut()
                    .set_value("temp:rendered", json!(rendered))?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let raw = RawTurnContext::new("s1", prompt)
        .app_name("app")
        .user_id("ada")
        .standing_instruction("Mood: {temp:mood}. Optional: [{absent?}] Verbatim: {not-a-key}");
    (runner, raw)
}

#[tokio::test]
async fn instructions_are_rendered_from_every_scope_before_the_dispatch() {
    let store = InMemorySessionStore::new();
    store
        .create_session(
            &key("ada", "s1"),
            json!({"user:name": "Ada", "app:brand": "Acme", "topic": "tea"})
                .as_object()
                .expect("object")
                .clone(),
        )
        .await
        .expect("created");
    let calls = Arc::new(AtomicUsize::new(0));
    let (runner, raw) = templating_runner(
        &store,
        "Hi {user:name} from {app:brand} about {topic}.",
        Arc::clone(&calls),
    );
    let outcome = run(&runner, raw).await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        outcome.context.state().value("temp:rendered"),
        Some(&json!(
            "Hi Ada from Acme about tea. | Mood: cheerful. Optional: [] Verbatim: {not-a-key}"
        ))
    );
    // The turn keeps the template; only the dispatch saw the rendered text.
    assert_eq!(
        outcome.context.system_prompt().render(),
        "Hi {user:name} from {app:brand} about {topic}."
    );
}

#[tokio::test]
async fn a_missing_required_template_key_fails_the_turn_before_the_model_is_called() {
    let store = InMemorySessionStore::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let (runner, raw) = templating_runner(&store, "Hi {user:name}.", Arc::clone(&calls));
    let outcome = run(&runner, raw).await;
    assert_eq!(
        failure_code(&outcome),
        Some(ErrorCode::StateTemplateKeyMissing)
    );
    match &outcome.status {
        TurnStatus::Failed(error) => {
            assert!(format!("{error:#}").contains("`user:name`"), "{error:#}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the model was never called"
    );
}

// ---------------------------------------------------------------------------------------------
// Output key

#[tokio::test]
async fn the_output_key_saves_the_final_assistant_text_of_the_turn() {
    const LAST_REPLY: StateKey<String> = adk::state_key!("last_reply" => String);
    let store = InMemorySessionStore::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .output_key(LAST_REPLY)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_message(Message::assistant("draft", "thinking")?)
                    .await?;
                ctx.store_message(Message::assistant("final", "Hello there!")?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw("ada", "s1")).await;
    assert_eq!(
        outcome.context.state().get(LAST_REPLY).expect("a string"),
        Some("Hello there!".to_owned())
    );
    assert_eq!(
        stored(&store, "ada", "s1").await.get("last_reply"),
        Some(&json!("Hello there!"))
    );
}

// docs/state.md: the output key holds "the last assistant message a completed turn's dispatch
// added": the model's reply, not an assistant message `turn_output` stores after it.
#[tokio::test]
async fn the_output_key_holds_the_last_assistant_message_the_dispatch_added_not_turn_outputs() {
    const LAST_REPLY: StateKey<String> = adk::state_key!("last_reply" => String);
    let store = InMemorySessionStore::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .output_key(LAST_REPLY)
        .turn_output(from_fn(
            |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
                Box::pin(async move {
                    ctx.store_message(Message::assistant("footer", "(answered by a bot)")?)
                        .await?;
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_message(Message::assistant("reply", "The model's answer.")?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw("ada", "s1")).await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        outcome.context.state().get(LAST_REPLY).expect("a string"),
        Some("The model's answer.".to_owned())
    );
    assert_eq!(
        stored(&store, "ada", "s1").await.get("last_reply"),
        Some(&json!("The model's answer."))
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency: one load and one atomic commit per turn

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_turns_on_one_session_land_different_keys_and_refuse_stale_overwrites() {
    const TURNS: usize = 24;
    let store = InMemorySessionStore::new();
    store
        .create_session(
            &key("ada", "s1"),
            json!({"shared": "initial"})
                .as_object()
                .expect("object")
                .clone(),
        )
        .await
        .expect("created");
    // Every turn loads before any commits: each waits here after its load.
    let barrier = Arc::new(tokio::sync::Barrier::new(TURNS));
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .observe(events.listener())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let barrier = Arc::clone(&barrier);
            Box::pin(async move {
                barrier.wait().await;
                let index: u64 = ctx.stash.get("test.index")?.ok_or("no index")?;
                ctx.state_mut()
                    .set_value(format!("own{index}"), json!(index))?;
                ctx.state_mut()
                    .set_value(format!("user:own{index}"), json!(index))?;
                if index.is_multiple_of(2) {
                    ctx.state_mut().set_value("shared", json!(index))?;
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let turns = (0..TURNS).map(|index| {
        let runner = runner.clone();
        tokio::spawn(async move {
            let raw = raw("ada", "s1").stash(json!({"test": {"index": index}}));
            (index, run(&runner, raw).await)
        })
    });
    let mut committed = Vec::new();
    let mut stale = Vec::new();
    for turn in futures_util::future::join_all(turns).await {
        let (index, outcome) = turn.expect("the turn task ran");
        match failure_code(&outcome) {
            None => committed.push(index),
            Some(ErrorCode::StaleState) => stale.push(index),
            Some(other) => panic!("turn {index} failed with {other}"),
        }
    }
    let state = stored(&store, "ada", "s1").await;
    // Turns that did not touch the contested key all landed, and exactly one writer of it won.
    let odd_turns: Vec<usize> = (0..TURNS)
        .filter(|index| !index.is_multiple_of(2))
        .collect();
    assert!(odd_turns.iter().all(|index| committed.contains(index)));
    let winners: Vec<usize> = committed
        .iter()
        .copied()
        .filter(|index| index.is_multiple_of(2))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one overwrite of `shared` wins: {committed:?}"
    );
    assert_eq!(stale.len(), TURNS / 2 - 1);
    assert_eq!(state["shared"], json!(winners[0]));
    // Nothing of a refused commit was applied: neither its session key nor its user key.
    for index in &stale {
        assert!(
            !state.contains_key(&format!("own{index}")),
            "turn {index} was half-applied"
        );
        assert!(
            !state.contains_key(&format!("user:own{index}")),
            "turn {index} was half-applied"
        );
    }
    for index in &committed {
        assert_eq!(state[&format!("own{index}")], json!(index));
        assert_eq!(state[&format!("user:own{index}")], json!(index));
    }
    // Each refusal was an error event too.
    let stale_events = events
        .events()
        .iter()
        .filter(|event| matches!(event, Event::Error { error, .. } if error.code() == ErrorCode::StaleState))
        .count();
    assert_eq!(stale_events, stale.len());
}

#[tokio::test]
async fn a_failed_load_is_reported_and_the_turn_does_not_run() {
    #[derive(Clone)]
    struct Broken;
    impl SessionStore for Broken {
        async fn create_session(
            &self,
            _: &SessionKey,
            _: serde_json::Map<String, Value>,
        ) -> Result<adk::state::Session, SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn get_session(
            &self,
            _: &SessionKey,
        ) -> Result<Option<adk::state::Session>, SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn list_sessions(
            &self,
            _: &adk::ids::AppName,
            _: Option<&adk::ids::UserId>,
        ) -> Result<Vec<adk::state::Session>, SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn delete_session(&self, _: &SessionKey) -> Result<(), SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn app_state(
            &self,
            _: &adk::ids::AppName,
        ) -> Result<serde_json::Map<String, Value>, SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn user_state(
            &self,
            _: &adk::ids::AppName,
            _: &adk::ids::UserId,
        ) -> Result<serde_json::Map<String, Value>, SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn load_turn(
            &self,
            _: &SessionKey,
            _: &adk::ids::ThreadId,
        ) -> Result<adk::state::LoadedTurn, SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn commit_turn(
            &self,
            _: &SessionKey,
            _: adk::state::TurnCommit,
        ) -> Result<(), SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
        async fn copy_thread_records(
            &self,
            _: &SessionKey,
            _: &adk::ids::ThreadId,
            _: &adk::ids::ThreadId,
        ) -> Result<(), SessionStoreError> {
            Err(SessionStoreError::backend("down"))
        }
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(Broken)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw("ada", "s1")).await;
    assert_eq!(failure_code(&outcome), Some(ErrorCode::StateLoadFailed));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_passes_the_session_store_conformance_suite() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let store = adk::sqlite::SqliteSessionStore::open(folder.path().join("sessions.db"))
        .await
        .expect("opens");
    let passed = conformance::check(&store)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, conformance::RULES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rows_hold_state_exactly_as_google_adk_lays_it_out() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("sessions.db");
    let store = adk::sqlite::SqliteSessionStore::open(&path)
        .await
        .expect("opens");
    let initial = json!({"sk": null, "sk2": "S", "user:k": 2, "user:k2": "U", "app:k": 1, "app:k2": "A", "temp:t": 1});
    store
        .create_session(
            &SessionKey::new("a", "u1", "s1"),
            initial.as_object().expect("object").clone(),
        )
        .await
        .expect("created");
    drop(store);
    let connection = rusqlite::Connection::open(&path).expect("opens");
    let text = |sql: &str| -> String {
        connection
            .query_row(sql, [], |row| row.get(0))
            .expect("a row")
    };
    assert_eq!(
        text("SELECT state FROM app_states WHERE app_name = 'a'"),
        r#"{"k": 1, "k2": "A"}"#
    );
    assert_eq!(
        text("SELECT state FROM user_states WHERE app_name = 'a' AND user_id = 'u1'"),
        r#"{"k": 2, "k2": "U"}"#
    );
    assert_eq!(
        text("SELECT state FROM sessions WHERE id = 's1'"),
        r#"{"sk": null, "sk2": "S"}"#
    );
    assert_eq!(
        text("SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'"),
        "1"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_reads_state_written_by_google_adk() {
    // tests/data/google-adk/sessions.db was written by google-adk 2.13's DatabaseSessionService
    // (make_fixture.py beside it); copied so opening it (WAL mode) leaves the fixture untouched.
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("sessions.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/data/google-adk/sessions.db"),
        &path,
    )
    .expect("the fixture is there");
    let store = adk::sqlite::SqliteSessionStore::open(&path)
        .await
        .expect("opens ADK's file");
    let session = store
        .get_session(&SessionKey::new("a", "u1", "s1"))
        .await
        .expect("reads")
        .expect("ADK's session is found");
    assert_eq!(
        session.state,
        *json!({"sk": null, "sk2": "S", "user:k": 1, "user:k2": "U", "app:k": "A", "app:k2": 2})
            .as_object()
            .expect("object")
    );
    let listed = store.list_sessions(&"a".into(), None).await.expect("lists");
    assert_eq!(listed.len(), 2);
    // A turn here writes back into ADK's rows, prefixes stripped.
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(|ctx: &mut TurnContext| {
            ctx.state_mut().set(THEME, "dark".to_owned())?;
            Ok::<(), BoxError>(())
        }))
        .executor(acking())
        .build();
    assert!(
        run(&runner, raw("u1", "s1").app_name("a"))
            .await
            .is_completed()
    );
    assert_eq!(
        store
            .user_state(&"a".into(), &"u1".into())
            .await
            .expect("reads"),
        *json!({"k": 1, "k2": "U", "theme": "dark"})
            .as_object()
            .expect("object")
    );
}
