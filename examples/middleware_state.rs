//! Typed middleware state, all three kinds in one agent, and a fork.
//!
//! - `ModelCalls` is transient: a per-turn circuit breaker that starts at zero every turn.
//! - `RememberedPermissions` is persistent and session-scoped: "always allow search" said in
//!   one thread holds in every thread of the session.
//! - `PlanProgress` is persistent and thread-scoped: each conversation path counts its own
//!   steps, and a fork starts from a copy that then goes its own way.
//!
//! Messages live in SQLite storage (so a fork can copy them per thread); states live in the
//! in-memory session store, committed with the session state at the end of every turn.
//!
//! ```sh
//! cargo run --example middleware_state
//! ```

use std::collections::BTreeSet;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::middleware_state::MiddlewareState;
use adk::pipeline::{BoxError, Next};
use adk::primitives::Message;
use adk::sqlite::SqliteStorage;
use adk::state::{Fork, InMemorySessionStore, SessionKey};
use serde::{Deserialize, Serialize};

/// Model calls in this turn: transient, so a new turn starts with a closed breaker.
#[derive(MiddlewareState, Default, Clone)]
pub struct ModelCalls {
    count: u32,
}

/// Tools the user allowed once and for all: shared by every thread of the session.
#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, scope = session, key = "example.permissions")]
pub struct RememberedPermissions {
    always_allowed: BTreeSet<String>,
}

/// How far the plan got along this conversation path (thread scope is the default).
#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, key = "example.plan_progress")]
pub struct PlanProgress {
    steps_done: u32,
}

const MAX_MODEL_CALLS: u32 = 3;

/// Opens the breaker after `MAX_MODEL_CALLS` model calls in one turn.
#[adk::middleware(pipeline = dispatch_input)]
async fn circuit_breaker(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    ctx.update_middleware_state::<ModelCalls>(|calls| calls.count += 1)?;
    if ctx
        .middleware_state::<ModelCalls>()
        .is_some_and(|calls| calls.count > MAX_MODEL_CALLS)
    {
        ctx.abort("circuit breaker: too many model calls this turn");
    }
    let _ = next.run(ctx).await;
    Ok(())
}

/// Remembers "always allow TOOL" for the whole session.
#[adk::middleware(pipeline = turn_input)]
async fn remember_permissions(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let text = ctx
        .user_message()
        .and_then(|message| message.content())
        .map(|content| content.render());
    if let Some(tool) = text
        .as_deref()
        .and_then(|text| text.strip_prefix("always allow "))
    {
        let tool = tool.trim().to_owned();
        ctx.update_middleware_state::<RememberedPermissions>(|permissions| {
            permissions.always_allowed.insert(tool);
        })?;
    }
    let _ = next.run(ctx).await;
    Ok(())
}

/// Counts a plan step for every answered turn.
#[adk::middleware(pipeline = turn_output)]
async fn track_plan(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    ctx.update_middleware_state::<PlanProgress>(|plan| plan.steps_done += 1)?;
    let _ = next.run(ctx).await;
    Ok(())
}

/// A model that reports what the states say.
fn reporting_model(
    ctx: &mut DispatchContext,
) -> adk::pipeline::BoxFuture<'_, Result<(), BoxError>> {
    Box::pin(async move {
        let states = ctx.middleware_states();
        let step = states
            .get::<PlanProgress>()
            .map_or(0, |plan| plan.steps_done)
            + 1;
        let allowed: Vec<String> = states
            .get::<RememberedPermissions>()
            .map(|permissions| permissions.always_allowed.iter().cloned().collect())
            .unwrap_or_default();
        let calls = states.get::<ModelCalls>().map_or(0, |calls| calls.count);
        let answer = format!(
            "[{}] step {step}; always allowed: {allowed:?}; model calls this turn: {calls}",
            ctx.storage_context().thread_id()
        );
        let id = format!("{}-answer", ctx.turn_id());
        ctx.store_message(Message::assistant(id, answer)?).await?;
        ctx.ack()?;
        Ok(())
    })
}

fn turn(thread: &str, number: u32, text: &str) -> Result<RawTurnContext, BoxError> {
    Ok(RawTurnContext::new("trip", "You plan trips.")
        .thread_id(thread)
        .user_message(Message::user(format!("{thread}-{number}"), text)?))
}

/// Runs the story and returns the answers, one line per turn.
pub async fn run() -> Result<Vec<String>, BoxError> {
    let storage = SqliteStorage::in_memory().await?;
    let runner = TurnRunner::builder()
        .storage(storage)
        .session_store(InMemorySessionStore::new())
        .turn_input(remember_permissions)
        .dispatch_input(circuit_breaker)
        .executor(executor_fn(reporting_model))
        .turn_output(track_plan)
        .build();

    let mut answers = Vec::new();
    let mut say = async |raw: RawTurnContext| -> Result<(), BoxError> {
        let outcome = runner.run(raw).await?.into_result()?;
        let answer = outcome
            .reply()
            .and_then(|reply| reply.content())
            .map(|content| content.render())
            .unwrap_or_default();
        println!("{answer}");
        answers.push(answer);
        Ok(())
    };
    say(turn("main", 1, "always allow search")?).await?;
    say(turn("main", 2, "book the flight")?).await?;

    // Fork after the first user message: `alt` gets that message and a copy of main's plan.
    let session = SessionKey::new("default", "default", "trip");
    let forked = runner
        .fork(Fork::new(session, "main", "alt").at_message("main-1"))
        .await?;
    println!(
        "[forked main into alt: {} message(s), {} thread state(s) copied]",
        forked.messages_copied, forked.records_copied
    );

    say(turn("alt", 1, "always allow maps")?).await?;
    say(turn("main", 3, "book the hotel")?).await?;
    Ok(answers)
}

fn main() -> Result<(), BoxError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())?;
    Ok(())
}
