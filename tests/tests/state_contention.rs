//! Contention policies (issue 32 item 4): how concurrent turns writing one shared key resolve,
//! as declared with the key in `state_key!`.
//!
//! The promise of the issue: a shared `app:` counter incremented by 256 concurrent turns ends at
//! exactly 256 with no turn refused, on every store; a `refuse` key under the same load refuses
//! turns, each refusal naming the key. Every scenario runs on the in-memory, the SQLite and the
//! PostgreSQL session store (the last when `ADK_TEST_POSTGRES_URL` names a database:
//! `.ci/postgres run cargo test -p adk-integration-tests --test state_contention`).

use std::collections::BTreeSet;
use std::sync::Arc;

use adk::prelude::*;
use adk::state::contention::{Add, LastWriterWins, Max, MergeWith, Union};
use adk::state::{SessionStore, SharedSessionStore, StateKey};
use futures_util::StreamExt;
use serde_json::json;

const VISITS: StateKey<u64, Add> = adk::state_key!("app:visits" => u64, on_conflict = add);
const LAST_SEEN: StateKey<String> = adk::state_key!("app:last_seen" => String);
const LAST_WRITER: StateKey<String, LastWriterWins> =
    adk::state_key!("app:last_writer" => String, on_conflict = last_writer_wins);
const SESSIONS: StateKey<BTreeSet<String>, Union> =
    adk::state_key!("app:sessions" => BTreeSet<String>, on_conflict = union);
const HIGHEST: StateKey<u32, Max> = adk::state_key!("app:highest" => u32, on_conflict = max);
const LONGEST: StateKey<String, MergeWith> =
    adk::state_key!("app:longest" => String, on_conflict = merge(longer));

/// The longer of the stored name and the new one (the stored one on a tie).
fn longer(stored: Option<String>, new: String) -> String {
    match stored {
        Some(stored) if stored.len() >= new.len() => stored,
        _ => new,
    }
}

/// Turns at once, and how many of them run at the same time.
const TURNS: usize = 256;
const IN_FLIGHT: usize = 32;

fn raw(session: usize) -> RawTurnContext {
    RawTurnContext::new(format!("s-{session}"), "You are a test.")
        .app_name("shop")
        .user_id(format!("u-{session}"))
        .user_message("hello")
}

/// A runner whose executor waits a millisecond (so the turns in flight overlap between their
/// load and their commit, on every store), calls `write` on the dispatch's state, then
/// acknowledges.
fn runner(
    store: &SharedSessionStore,
    write: impl Fn(&mut adk::state::State, usize) -> Result<(), BoxError> + Send + Sync + 'static,
) -> TurnRunner {
    let write = Arc::new(write);
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(adk::dispatch::executor_fn(
            move |ctx: &mut DispatchContext| {
                let write = Arc::clone(&write);
                Box::pin(async move {
                    let session: usize = ctx
                        .storage_context()
                        .conversation_id()
                        .as_str()
                        .trim_start_matches("s-")
                        .parse()?;
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    write(ctx.state_mut(), session)?;
                    ctx.ack()?;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .build()
}

/// Runs `TURNS` turns on distinct sessions of one app, `IN_FLIGHT` at a time on the
/// multi-thread runtime, and returns their outcomes.
async fn run_all(runner: &TurnRunner) -> Vec<TurnOutcome> {
    futures_util::stream::iter(0..TURNS)
        .map(|session| async move { runner.run(raw(session)).await.expect("valid input") })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await
}

async fn app_state(store: &SharedSessionStore) -> serde_json::Map<String, serde_json::Value> {
    store.app_state(&"shop".into()).await.expect("reads")
}

async fn a_shared_app_counter_under_256_concurrent_turns_ends_exact_with_no_turn_refused(
    store: SharedSessionStore,
) {
    let runner = runner(&store, |state, _| Ok(state.add(VISITS, 1)?));
    let outcomes = run_all(&runner).await;
    let refused: Vec<_> = outcomes
        .iter()
        .filter(|outcome| !outcome.is_completed())
        .map(|outcome| format!("{:?}", outcome.status))
        .collect();
    assert!(
        refused.is_empty(),
        "{} refused: {:?}",
        refused.len(),
        refused.first()
    );
    assert_eq!(app_state(&store).await["visits"], json!(TURNS));
}

async fn a_refuse_key_under_the_same_load_refuses_turns_naming_the_key(store: SharedSessionStore) {
    // Read, then write: the turns overlap, so most find the key changed at commit.
    let runner = runner(&store, |state, session| {
        let _seen = state.get(LAST_SEEN)?;
        Ok(state.set(LAST_SEEN, format!("s-{session}"))?)
    });
    let outcomes = run_all(&runner).await;
    let mut refused = 0;
    for outcome in &outcomes {
        match &outcome.status {
            TurnStatus::Completed => {}
            TurnStatus::Failed(error) => {
                assert_eq!(error.code(), adk::events::ErrorCode::StaleState, "{error}");
                assert!(error.message().contains("app:last_seen"), "{error}");
                refused += 1;
            }
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert!(refused > 0, "no turn was refused: the load did not overlap");
    assert!(refused < TURNS, "every turn was refused");
    // The last commit that went through holds the key.
    assert!(app_state(&store).await["last_seen"].is_string());
}

async fn last_writer_wins_union_max_and_a_user_merge_refuse_no_turn_and_keep_every_write(
    store: SharedSessionStore,
) {
    let runner = runner(&store, |state, session| {
        state.set(LAST_WRITER, format!("s-{session}"))?;
        state.merge(SESSIONS, BTreeSet::from([format!("s-{session}")]))?;
        state.merge(HIGHEST, u32::try_from(session)?)?;
        state.merge(LONGEST, "x".repeat(session % 50))?;
        Ok(())
    });
    let outcomes = run_all(&runner).await;
    assert!(outcomes.iter().all(TurnOutcome::is_completed));
    let app = app_state(&store).await;
    let written: BTreeSet<String> = (0..TURNS).map(|session| format!("s-{session}")).collect();
    assert!(written.contains(app["last_writer"].as_str().expect("a string")));
    assert_eq!(app["sessions"], json!(written));
    assert_eq!(app["highest"], json!(TURNS - 1));
    assert_eq!(app["longest"], json!("x".repeat(49)));
}

async fn a_refused_turn_run_again_on_fresh_state_lands_every_increment(store: SharedSessionStore) {
    // A read-modify-write of a `refuse` key: wrong under contention unless refused and re-run.
    const COUNT: StateKey<u64> = adk::state_key!("app:count" => u64);
    let runner = runner(&store, |state, _| {
        let seen = state.get(COUNT)?.unwrap_or(0);
        Ok(state.set(COUNT, seen + 1)?)
    });
    let turns = 16;
    let outcomes: Vec<TurnOutcome> = futures_util::stream::iter(0..turns)
        .map(|session| {
            let runner = &runner;
            async move {
                runner
                    .run_retrying_stale(raw(session), 1_000)
                    .await
                    .expect("valid input")
            }
        })
        .buffer_unordered(turns)
        .collect()
        .await;
    assert!(outcomes.iter().all(TurnOutcome::is_completed));
    assert_eq!(app_state(&store).await["count"], json!(turns));
}

async fn a_tool_handlers_merges_from_concurrent_turns_all_land(store: SharedSessionStore) {
    const CALLS: StateKey<u64, Add> = adk::state_key!("app:calls" => u64, on_conflict = add);
    let count = Tool::builder("count")
        .description("Counts its calls.")
        .handler(
            |_args: serde_json::Value, invocation: adk::primitives::ToolInvocation| async move {
                invocation.merge_state(CALLS, 1)?;
                Ok("counted".to_owned())
            },
        )
        .build()
        .expect("a valid tool");
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .tool(count)
        .executor(adk::dispatch::executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.call_tool("count", "call-1", json!({})).await?;
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                ctx.call_tool("count", "call-2", json!({})).await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcomes = run_all(&runner).await;
    assert!(outcomes.iter().all(TurnOutcome::is_completed));
    assert_eq!(app_state(&store).await["calls"], json!(2 * TURNS));
}

/// A run refused as stale stored the user's message before `turn_input`; the runs after it admit
/// that message (its id too) without storing it again, so the transcript holds the question once
/// and every run's model sees it once. The first run is beaten deterministically: its executor
/// has a second runner commit the key between its load and its commit.
async fn a_retried_turn_stores_the_user_message_once_and_every_run_sees_it_once(
    store: SharedSessionStore,
) {
    const COUNT: StateKey<u64> = adk::state_key!("app:count" => u64);
    let storage = adk_integration_tests::RecordingStorage::new();
    let rival = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(adk::dispatch::executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.state_mut().set(COUNT, 100)?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let rival = Arc::new(rival);
    let runs = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen_by_runs = Arc::clone(&runs);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(store.clone())
        .executor(adk::dispatch::executor_fn(
            move |ctx: &mut DispatchContext| {
                let rival = Arc::clone(&rival);
                let runs = Arc::clone(&seen_by_runs);
                Box::pin(async move {
                    let questions: Vec<String> = ctx
                        .messages
                        .iter()
                        .filter(|message| message.role() == adk::primitives::Role::User)
                        .map(|message| message.id().to_owned())
                        .collect();
                    let first_run = {
                        let mut runs = runs.lock().expect("not poisoned");
                        runs.push(questions);
                        runs.len() == 1
                    };
                    let seen = ctx.state().get(COUNT)?.unwrap_or(0);
                    if first_run {
                        let beaten = rival
                            .run(RawTurnContext::new("rival", "You are a test.").app_name("shop"))
                            .await?;
                        assert!(beaten.is_completed(), "{:?}", beaten.status);
                    }
                    ctx.state_mut().set(COUNT, seen + 1)?;
                    ctx.ack()?;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .build();
    let outcome = runner
        .run_retrying_stale(raw(7), 3)
        .await
        .expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(app_state(&store).await["count"], json!(101));
    let runs = runs.lock().expect("not poisoned").clone();
    assert_eq!(
        runs.len(),
        2,
        "the first run was refused, the second committed"
    );
    let stored_questions: Vec<Message> = storage
        .messages()
        .into_iter()
        .filter(|message| message.role() == adk::primitives::Role::User)
        .collect();
    assert_eq!(stored_questions.len(), 1, "{stored_questions:?}");
    let id = stored_questions[0].id().to_owned();
    assert_eq!(runs, vec![vec![id.clone()], vec![id]]);
}

adk_integration_tests::on_every_session_store!("contention":
    a_tool_handlers_merges_from_concurrent_turns_all_land,
    a_shared_app_counter_under_256_concurrent_turns_ends_exact_with_no_turn_refused,
    a_refuse_key_under_the_same_load_refuses_turns_naming_the_key,
    last_writer_wins_union_max_and_a_user_merge_refuse_no_turn_and_keep_every_write,
    a_refused_turn_run_again_on_fresh_state_lands_every_increment,
    a_retried_turn_stores_the_user_message_once_and_every_run_sees_it_once,
);

#[test]
fn a_turn_reads_its_own_merges_applied_to_what_it_loaded() {
    let mut state = adk::state::State::new();
    state.add(VISITS, 2).expect("adds");
    state.add(VISITS, 3).expect("adds");
    assert_eq!(state.get(VISITS).expect("reads"), Some(5));
    let commit = state.to_commit(&adk::ids::ThreadId::default());
    match &commit.app[0].change {
        adk::state::StateChange::Merge(merge) => {
            assert_eq!(merge.rule(), "add");
            assert_eq!(merge.operands(), [json!(2), json!(3)]);
        }
        other => panic!("expected a merge, got {other:?}"),
    }
}

#[test]
fn a_counter_that_would_overflow_is_refused_with_the_key_named() {
    const SMALL: StateKey<u8, Add> = adk::state_key!("app:small" => u8, on_conflict = add);
    let mut state = adk::state::State::new();
    state.add(SMALL, 200).expect("adds");
    let error = state.add(SMALL, 100).expect_err("overflows");
    assert!(error.to_string().contains("app:small"), "{error}");
    assert_eq!(state.get(SMALL).expect("reads"), Some(200));
}
