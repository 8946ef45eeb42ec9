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
/// Where an executor leaves the state it saw, for the test to read after the turn.
type Seen = std::sync::Arc<std::sync::Mutex<Option<Map<String, Value>>>>;

/// The state the executor recorded in `seen`; panics (failing the test) if it never ran.
fn what_the_executor_saw(seen: &Seen) -> Map<String, Value> {
    seen.lock()
        .expect("not poisoned")
        .clone()
        .expect("the executor ran")
}

fn recording_executor(seen: Seen) -> impl adk::dispatch::Executor {
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

    let seen = what_the_executor_saw(&seen);
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

adk_integration_tests::on_every_session_store!("outside":
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

// R6: a `turn_input` middleware that answers by itself completes the turn.

/// A `turn_input` middleware answering "opening hours" from its cache, counting the hit in
/// state; any other question goes on to the executor.
#[adk::middleware(pipeline = turn_input)]
async fn cache(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let asked = ctx
        .user_message()
        .and_then(|message| message.content())
        .map(|content| content.render());
    if asked.as_deref() == Some("opening hours?") {
        let hits = ctx
            .state()
            .value("cache_hits")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        ctx.state_mut().set_value("cache_hits", json!(hits + 1))?;
        ctx.state_mut()
            .set_value("user:last_topic", json!("hours"))?;
        ctx.complete_with("9 to 5.").await?;
        return Ok(());
    }
    let _downstream = next.run(ctx).await;
    Ok(())
}

fn executor_that_must_not_run(
    called: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> impl adk::dispatch::Executor {
    adk::dispatch::executor_fn(move |ctx: &mut DispatchContext| {
        called.store(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

async fn a_short_cut_reply_is_stored_and_its_state_committed_without_the_executor(
    store: SharedSessionStore,
) {
    let storage = SharedStorage::new(
        adk::sqlite::SqliteStorage::in_memory()
            .await
            .expect("opens"),
    );
    let called = std::sync::Arc::default();
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(store.clone())
        .turn_input(cache)
        .executor(executor_that_must_not_run(std::sync::Arc::clone(&called)))
        .output_key(adk::state_key!("last_reply" => String))
        .build();
    for _ in 0..2 {
        let raw = RawTurnContext::new("r6", "You are a test.")
            .app_name("app")
            .user_id("ada")
            .user_message("opening hours?");
        let outcome = runner.run(raw).await.expect("valid input");
        assert!(outcome.is_completed(), "{:?}", outcome.status);
        assert_eq!(outcome.dispatch, None, "no dispatch ran");
        let reply = outcome
            .reply()
            .expect("the short-cut reply is the turn's reply");
        assert_eq!(reply.content().expect("text").render(), "9 to 5.");
    }
    assert!(
        !called.load(std::sync::atomic::Ordering::SeqCst),
        "the executor was never called"
    );
    assert_eq!(
        state_of(&store, "r6").await,
        object(json!({"cache_hits": 2, "user:last_topic": "hours", "last_reply": "9 to 5."})),
        "each short-cut turn committed its state, the output key included"
    );
    let context = StorageContext::new("r6")
        .with_app_name("app")
        .with_user_id("ada");
    let stored: Vec<(Role, String)> = storage
        .fetch_messages(&context)
        .await
        .expect("reads")
        .iter()
        .map(|message| (message.role(), message.content().expect("text").render()))
        .collect();
    let turn = [
        (Role::User, "opening hours?".to_owned()),
        (Role::Assistant, "9 to 5.".to_owned()),
    ];
    assert_eq!(
        stored,
        [turn.clone(), turn].concat(),
        "question and reply stored, in order"
    );
}

async fn a_short_cut_turn_that_fails_afterwards_commits_nothing(store: SharedSessionStore) {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(cache)
        .turn_output(adk::pipeline::from_fn(|_ctx: &mut TurnContext, _next| {
            Box::pin(async move { Err::<(), BoxError>("turn_output refuses".into()) })
        }))
        .executor(ScriptedModel::new())
        .build();
    let outcome = runner
        .run(raw("r6-failed").user_message("opening hours?"))
        .await
        .expect("valid input");
    assert!(
        matches!(outcome.status, TurnStatus::Failed(_)),
        "{:?}",
        outcome.status
    );
    assert!(outcome.reply().is_none(), "a failed turn has no reply");
    assert!(
        store
            .get_session(&key("r6-failed"))
            .await
            .expect("reads")
            .is_none(),
        "nothing committed"
    );
}

adk_integration_tests::on_every_session_store!("outside":
    a_short_cut_reply_is_stored_and_its_state_committed_without_the_executor,
    a_short_cut_turn_that_fails_afterwards_commits_nothing,
);

#[tokio::test]
async fn a_turn_input_that_returns_without_next_and_without_a_reply_is_still_a_short_circuit() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(adk::pipeline::from_fn(|_ctx: &mut TurnContext, _next| {
            Box::pin(async move { Ok::<(), BoxError>(()) })
        }))
        .executor(ScriptedModel::new())
        .build();
    let outcome = runner.run(raw("r6-forgot")).await.expect("valid input");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("a forgotten next fails the turn, got {:?}", outcome.status);
    };
    assert_eq!(error.code(), adk::events::ErrorCode::PipelineShortCircuited);
}

#[tokio::test]
async fn completing_with_a_reply_after_the_dispatch_is_refused() {
    let refusal = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = std::sync::Arc::clone(&refusal);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_output(adk::pipeline::from_fn(
            move |ctx: &mut TurnContext, next| {
                let seen = std::sync::Arc::clone(&seen);
                Box::pin(async move {
                    let refused = ctx.complete_with("too late").await.expect_err("refused");
                    *seen.lock().expect("not poisoned") = Some(refused.to_string());
                    let _downstream = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(ScriptedModel::new())
        .build();
    let outcome = runner.run(raw("r6-late")).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let refusal = refusal.lock().expect("not poisoned").clone().expect("ran");
    assert!(refusal.contains("already dispatched"), "{refusal}");
    assert_ne!(
        outcome
            .reply()
            .and_then(|reply| reply.content())
            .map(|c| c.render()),
        Some("too late".to_owned())
    );
}

// R10: a tool handler reads and writes session state.

/// `remember`: reads `user:name`, counts `visits`, stores the favorite it is given under
/// `user:favorite`, and scribbles under `temp:`.
fn remember_tool() -> Tool {
    Tool::builder("remember")
        .description("Remembers the user's favorite.")
        .handler(
            |args: Value, invocation: adk::primitives::ToolInvocation| async move {
                let name = invocation.state_value("user:name").unwrap_or(Value::Null);
                let visits = invocation
                    .state(adk::state_key!("visits" => u32))?
                    .unwrap_or(0);
                invocation.set_state(adk::state_key!("visits" => u32), visits + 1)?;
                invocation.update_state([
                    ("user:favorite".to_owned(), args["favorite"].clone()),
                    ("temp:scratch".to_owned(), json!("tool")),
                ])?;
                Ok(format!("noted for {name}"))
            },
        )
        .build()
        .expect("a valid tool")
}

/// Calls `remember` twice, then acks; `nack` instead of the ack when asked to. Records what
/// the second call answered and the state the executor saw after the calls.
fn tool_calling_executor(nack: bool, seen: Seen) -> impl adk::dispatch::Executor {
    adk::dispatch::executor_fn(move |ctx: &mut DispatchContext| {
        let seen = seen.clone();
        Box::pin(async move {
            ctx.call_tool("remember", "call-1", json!({"favorite": "tea"}))
                .await?;
            ctx.call_tool("remember", "call-2", json!({"favorite": "coffee"}))
                .await?;
            *seen.lock().expect("not poisoned") = Some(ctx.state_mut().to_map());
            if nack {
                ctx.nack("the model refused")?;
            } else {
                ctx.ack()?;
            }
            Ok::<(), BoxError>(())
        })
    })
}

async fn a_tool_handler_reads_state_and_its_writes_are_committed_with_the_turn(
    store: SharedSessionStore,
) {
    store
        .create_session(
            &key("r10"),
            object(json!({"user:name": "Ada", "visits": 3})),
        )
        .await
        .expect("creates");
    let seen = std::sync::Arc::default();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .tool(remember_tool())
        .executor(tool_calling_executor(false, std::sync::Arc::clone(&seen)))
        .build();
    let outcome = runner.run(raw("r10")).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);

    let seen = what_the_executor_saw(&seen);
    assert_eq!(
        seen["visits"], 5,
        "the second call saw the first call's write"
    );
    assert_eq!(
        seen["temp:scratch"], "tool",
        "temp: writes are visible in the turn"
    );
    assert_eq!(
        state_of(&store, "r10").await,
        object(json!({"user:name": "Ada", "visits": 5, "user:favorite": "coffee"})),
        "committed with the turn, temp: left out"
    );
}

async fn a_tool_handlers_writes_in_a_nacked_dispatch_are_dropped(store: SharedSessionStore) {
    store
        .create_session(&key("r10-nack"), object(json!({"visits": 3})))
        .await
        .expect("creates");
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .tool(remember_tool())
        .executor(tool_calling_executor(true, std::sync::Arc::default()))
        .build();
    let outcome = runner.run(raw("r10-nack")).await.expect("valid input");
    assert!(!outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        state_of(&store, "r10-nack").await,
        object(json!({"visits": 3}))
    );
}

adk_integration_tests::on_every_session_store!("outside":
    a_tool_handler_reads_state_and_its_writes_are_committed_with_the_turn,
    a_tool_handlers_writes_in_a_nacked_dispatch_are_dropped,
);

#[tokio::test]
async fn a_tool_handlers_write_with_an_empty_key_is_refused_and_nothing_is_written() {
    let invocation = adk::primitives::ToolInvocation::new("t", "call-1");
    let refused = invocation.update_state([
        ("fine".to_owned(), json!(1)),
        ("user:".to_owned(), json!(2)),
    ]);
    assert!(matches!(
        refused,
        Err(adk::state::StateError::EmptyName { .. })
    ));
    assert!(invocation.state_map().is_empty(), "all or nothing");
}

#[tokio::test]
async fn the_executor_sees_a_tool_handlers_writes_through_state_after_it_returns() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let recorded = std::sync::Arc::clone(&seen);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(InMemorySessionStore::new())
        .tool(remember_tool())
        .dispatch_output(adk::pipeline::from_fn(
            move |ctx: &mut DispatchContext, next| {
                let recorded = std::sync::Arc::clone(&recorded);
                Box::pin(async move {
                    *recorded.lock().expect("not poisoned") = ctx.state().value("visits").cloned();
                    let _downstream = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(adk::dispatch::executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                if ctx.iteration() == 0 {
                    ctx.call_tool("remember", "call-1", json!({"favorite": "tea"}))
                        .await?;
                } else {
                    ctx.ack()?;
                }
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner.run(raw("r10-output")).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(*seen.lock().expect("not poisoned"), Some(json!(1)));
    assert_eq!(outcome.context.state().value("visits"), Some(&json!(1)));
}

// Outside a turn: `StateEdit` over `SessionStore::commit_state`.

async fn an_edit_outside_a_turn_writes_user_and_app_state_that_the_next_turn_sees(
    store: SharedSessionStore,
) {
    let mut edit = adk::state::StateEdit::load(&store, "app", "ada")
        .await
        .expect("loads");
    edit.state_mut()
        .set(adk::state_key!("user:theme" => String), "dark".to_owned())
        .expect("writes");
    edit.state_mut()
        .set_value("app:motd", json!("welcome"))
        .expect("writes");
    edit.state_mut()
        .set_value("temp:draft", json!(1))
        .expect("writes");
    edit.commit(&store).await.expect("commits");
    assert!(
        store
            .list_sessions(&"app".into(), None)
            .await
            .expect("lists")
            .is_empty(),
        "an edit creates no session"
    );
    assert_eq!(
        store
            .user_state(&"app".into(), &"ada".into())
            .await
            .expect("reads"),
        object(json!({"theme": "dark"})),
        "temp: keys are dropped"
    );

    let seen = std::sync::Arc::default();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(recording_executor(std::sync::Arc::clone(&seen)))
        .build();
    let outcome = runner.run(raw("edit")).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let seen = what_the_executor_saw(&seen);
    assert_eq!(
        seen,
        object(json!({"user:theme": "dark", "app:motd": "welcome"}))
    );

    let mut edit = adk::state::StateEdit::load(&store, "app", "ada")
        .await
        .expect("loads");
    assert!(
        edit.state_mut().delete("user:theme"),
        "the edit reads what it wrote"
    );
    edit.commit(&store).await.expect("commits");
    assert_eq!(
        state_of(&store, "edit").await,
        object(json!({"app:motd": "welcome"})),
        "a deletion reaches the store like a write"
    );
}

async fn an_edit_is_refused_as_stale_when_a_turn_changed_its_key_after_the_load(
    store: SharedSessionStore,
) {
    let mut edit = adk::state::StateEdit::load(&store, "app", "ada")
        .await
        .expect("loads");
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(ScriptedModel::new())
        .build();
    let outcome = runner
        .run(raw("edit-stale").state_value("user:theme", json!("light")))
        .await
        .expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);

    edit.state_mut()
        .set_value("user:theme", json!("dark"))
        .expect("writes");
    edit.state_mut()
        .set_value("app:motd", json!("hi"))
        .expect("writes");
    let refused = edit.commit(&store).await.expect_err("stale");
    assert!(refused.is_stale(), "{refused}");
    let adk::state::StateEditError::Store(adk::state::SessionStoreError::Stale { keys }) = refused
    else {
        panic!("a stale refusal");
    };
    assert_eq!(keys, ["user:theme"], "the conflicting key is named");
    assert!(
        store
            .app_state(&"app".into())
            .await
            .expect("reads")
            .get("motd")
            .is_none(),
        "nothing of the edit was applied"
    );
    assert_eq!(
        store
            .user_state(&"app".into(), &"ada".into())
            .await
            .expect("reads"),
        object(json!({"theme": "light"}))
    );
}

async fn a_turn_is_refused_as_stale_when_an_edit_changed_its_key_meanwhile(
    store: SharedSessionStore,
) {
    let editor = store.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(adk::dispatch::executor_fn(
            move |ctx: &mut DispatchContext| {
                let editor = editor.clone();
                Box::pin(async move {
                    let mut edit = adk::state::StateEdit::load(&editor, "app", "ada").await?;
                    edit.state_mut()
                        .set_value("user:theme", json!("from the form"))?;
                    edit.commit(&editor).await?;
                    ctx.ack()?;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .build();
    let outcome = runner
        .run(raw("edit-turn").state_value("user:theme", json!("from the turn")))
        .await
        .expect("valid input");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("refused as stale, got {:?}", outcome.status);
    };
    assert_eq!(error.code(), adk::events::ErrorCode::StaleState);
    assert_eq!(
        store
            .user_state(&"app".into(), &"ada".into())
            .await
            .expect("reads"),
        object(json!({"theme": "from the form"}))
    );
}

adk_integration_tests::on_every_session_store!("outside":
    an_edit_outside_a_turn_writes_user_and_app_state_that_the_next_turn_sees,
    an_edit_is_refused_as_stale_when_a_turn_changed_its_key_after_the_load,
    a_turn_is_refused_as_stale_when_an_edit_changed_its_key_meanwhile,
);

#[tokio::test]
async fn an_edit_that_writes_a_session_key_is_refused_and_writes_nothing() {
    let store = InMemorySessionStore::new();
    let mut edit = adk::state::StateEdit::load(&store, "app", "ada")
        .await
        .expect("loads");
    edit.state_mut()
        .set_value("step", json!(2))
        .expect("writes");
    edit.state_mut()
        .set_value("user:theme", json!("dark"))
        .expect("writes");
    let refused = edit.commit(&store).await.expect_err("refused");
    assert!(
        matches!(&refused, adk::state::StateEditError::SessionKey { keys } if keys == &["step"]),
        "{refused:?}"
    );
    assert!(
        store
            .user_state(&"app".into(), &"ada".into())
            .await
            .expect("reads")
            .is_empty()
    );
}

#[tokio::test]
async fn a_store_that_predates_commit_state_refuses_it_as_unsupported() {
    let store = adk_integration_tests::StoreWithRequiredMethodsOnly::default();
    let mut edit = adk::state::StateEdit::load(&store, "app", "ada")
        .await
        .expect("loads");
    edit.state_mut()
        .set_value("user:theme", json!("dark"))
        .expect("writes");
    let refused = edit.commit(&store).await.expect_err("unsupported");
    assert!(
        matches!(
            refused,
            adk::state::StateEditError::Store(adk::state::SessionStoreError::Unsupported {
                operation: "commit_state"
            })
        ),
        "{refused:?}"
    );
}
