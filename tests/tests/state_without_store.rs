//! Wiring, not silence (issue 32 item 5): a runner built without `.session_store(..)` keeps no
//! state between turns, so state that is meant to outlive a turn is refused rather than silently
//! reset every turn. What the builder can see (an output key outside `temp:`) is refused when
//! the runner is built (and so are the writes `#[middleware]` finds in its fn's body:
//! `tests/tests/state_without_store_build.rs`); what only a turn shows (a `from_fn` middleware,
//! a tool or the caller writing a key outside `temp:` or persistent middleware state) fails that
//! turn with
//! `E_STATE_NO_SESSION_STORE`, naming the key or type and the fix. State that lives one turn
//! (`temp:` keys, transient middleware state) needs no store, and a program whose other runner
//! has a store is not refused.

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
use adk::middleware_state::MiddlewareState;
use adk::pipeline::{BoxError, Middleware, Next, TurnInput, from_fn};
use adk::primitives::{Tool, ToolInvocation};
use adk::runner::{BuildError, TurnOutcome, TurnStatus};
use adk::state::{InMemorySessionStore, StateKey};
use adk::storage::NoopStorage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

const THEME: StateKey<String> = adk::state_key!("user:theme" => String);
const SCRATCH: StateKey<u32> = adk::state_key!("temp:scratch" => u32);

/// Persistent, session-scoped: what the user allowed once and for all.
#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, scope = session, key = "tests.allowed")]
struct Allowed {
    tools: Vec<String>,
}

/// Transient: this turn's retries.
#[derive(MiddlewareState, Default, Clone)]
struct Retries {
    count: u32,
}

fn acking() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

fn step(body: fn(&mut TurnContext) -> Result<(), BoxError>) -> impl Middleware<TurnInput> {
    from_fn(move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
        Box::pin(async move {
            body(ctx)?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    })
}

async fn run(runner: &TurnRunner, raw: RawTurnContext) -> TurnOutcome {
    runner.run(raw).await.expect("valid input")
}

fn raw() -> RawTurnContext {
    RawTurnContext::new("s1", "You are a test.")
        .app_name("app")
        .user_id("ada")
}

/// The turn failed with `E_STATE_NO_SESSION_STORE`, its message naming each of `named` and the
/// fix.
#[track_caller]
fn assert_refused_naming(outcome: &TurnOutcome, named: &[&str]) {
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!(
            "the turn was not refused without a session store: {:?}",
            outcome.status
        );
    };
    assert_eq!(error.code(), ErrorCode::NoSessionStore, "{error}");
    let message = error.message();
    for fragment in named.iter().chain(&[".session_store(..)", "`temp:`"]) {
        assert!(message.contains(fragment), "`{fragment}` in: {message}");
    }
}

#[test]
fn an_output_key_outside_temp_without_a_session_store_is_refused_when_the_runner_is_built() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(acking())
        .output_key(adk::state_key!("last_reply" => String))
        .try_build();
    let Err(error) = result else {
        panic!("a runner that would lose its output key every turn was built");
    };
    assert!(
        matches!(&error, BuildError::NoSessionStore { what } if what == "`.output_key(\"last_reply\")`"),
        "{error:?}"
    );
    let message = error.to_string();
    for fragment in [
        "`.output_key(\"last_reply\")` keeps state between turns",
        "no session store",
        "add `.session_store(..)` to the builder",
    ] {
        assert!(message.contains(fragment), "`{fragment}` in: {message}");
    }
}

#[test]
#[should_panic(
    expected = "`.output_key(\"user:last_reply\")` keeps state between turns, but \
                           the runner has no session store"
)]
fn build_panics_with_the_same_report() {
    let _runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(acking())
        .output_key(adk::state_key!("user:last_reply" => String))
        .build();
}

#[test]
fn an_output_key_is_accepted_with_a_session_store_or_under_temp() {
    let with_store = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(acking())
        .session_store(InMemorySessionStore::new())
        .output_key(adk::state_key!("last_reply" => String))
        .try_build();
    assert!(with_store.is_ok(), "{:?}", with_store.err());
    let temp = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(acking())
        .output_key(adk::state_key!("temp:last_reply" => String))
        .try_build();
    assert!(temp.is_ok(), "{:?}", temp.err());
}

#[tokio::test]
async fn a_middleware_writing_a_user_key_without_a_session_store_fails_the_turn_naming_the_key() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            ctx.state_mut().set(THEME, "dark".to_owned())?;
            ctx.state_mut().set_value("step", json!(2))?;
            Ok(())
        }))
        .executor(acking())
        .build();
    let outcome = run(&runner, raw()).await;
    assert_refused_naming(&outcome, &["`step`", "`user:theme`", "no session store"]);
}

#[tokio::test]
async fn persistent_middleware_state_without_a_session_store_fails_the_turn_naming_the_type() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            ctx.update_middleware_state::<Allowed>(|allowed| {
                allowed.tools.push("search".to_owned());
            })?;
            Ok(())
        }))
        .executor(acking())
        .build();
    let outcome = run(&runner, raw()).await;
    assert_refused_naming(&outcome, &["Allowed", "`tests.allowed`"]);
}

#[tokio::test]
async fn a_tool_writing_session_state_without_a_session_store_fails_the_turn() {
    let remember = Tool::builder("remember")
        .description("Remembers a favorite.")
        .handler(|args: Value, invocation: ToolInvocation| async move {
            invocation.update_state([("user:favorite".to_owned(), args["favorite"].clone())])?;
            Ok("noted".to_owned())
        })
        .build()
        .expect("a valid tool");
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(remember)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
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
    let outcome = run(&runner, raw()).await;
    assert_refused_naming(&outcome, &["`user:favorite`"]);
}

#[tokio::test]
async fn a_state_delta_handed_with_the_run_without_a_session_store_fails_the_turn() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(acking())
        .build();
    let mut delta = Map::new();
    delta.insert("app:motd".to_owned(), json!("hello"));
    let outcome = run(&runner, raw().state_delta(delta)).await;
    assert_refused_naming(&outcome, &["`app:motd`"]);
}

#[tokio::test]
async fn temp_keys_and_transient_middleware_state_need_no_session_store() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            ctx.state_mut().set(SCRATCH, 1)?;
            ctx.update_middleware_state::<Retries>(|retries| retries.count += 1)?;
            // Reading persistent state loses nothing: without a store it is simply unset.
            assert!(ctx.middleware_state::<Allowed>().is_none());
            Ok(())
        }))
        .executor(acking())
        .output_key(adk::state_key!("temp:reply" => String))
        .build();
    for _ in 0..2 {
        let outcome = run(&runner, raw()).await;
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
}

#[tokio::test]
async fn a_program_with_a_stateful_runner_and_a_stateless_one_runs_both() {
    let stateful = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(InMemorySessionStore::new())
        .turn_input(step(|ctx| {
            ctx.state_mut().set(THEME, "dark".to_owned())?;
            ctx.update_middleware_state::<Allowed>(|allowed| allowed.tools.push("x".into()))?;
            Ok(())
        }))
        .executor(acking())
        .output_key(adk::state_key!("last_reply" => String))
        .build();
    let stateless = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(step(|ctx| {
            ctx.state_mut().set(SCRATCH, 7)?;
            Ok(())
        }))
        .executor(acking())
        .build();
    let stateful_outcome = run(&stateful, raw()).await;
    assert!(
        stateful_outcome.is_completed(),
        "{:?}",
        stateful_outcome.status
    );
    let stateless_outcome = run(&stateless, raw()).await;
    assert!(
        stateless_outcome.is_completed(),
        "{:?}",
        stateless_outcome.status
    );
}
