//! Wiring, not silence (issue 32 item 5), at build time: `#[middleware]` records the state
//! writes it finds in its fn's body, and a runner built without `.session_store(..)` whose
//! middleware write a key outside `temp:` or persistent middleware state is refused by
//! `try_build` (and `build` panics), naming each middleware, key or type and the fix. State that
//! lives one turn needs no store; a runner with a store, and a program whose other runner has
//! none, build. A write the build cannot see (through a helper fn) still fails the first turn
//! (`tests/tests/state_without_store.rs`).

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, ToolContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
use adk::middleware_state::MiddlewareState;
use adk::pipeline::{BoxError, Next, StateWrite};
use adk::runner::{BuildError, TurnStatus, UnkeptWrite};
use adk::state::contention::Add;
use adk::state::{InMemorySessionStore, StateKey};
use adk::storage::NoopStorage;
use serde::{Deserialize, Serialize};
use serde_json::json;

const THEME: StateKey<String> = adk::state_key!("user:theme" => String);
const VISITS: StateKey<u64, Add> = adk::state_key!("app:visits" => u64, on_conflict = add);
const SCRATCH: StateKey<u32> = adk::state_key!("temp:scratch" => u32);

/// Persistent, session-scoped.
#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, scope = session, key = "tests.build.allowed")]
struct Allowed {
    tools: Vec<String>,
}

/// Persistent, thread-scoped (the default scope).
#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, key = "tests.build.failures")]
struct Failures {
    count: u32,
}

/// Transient: this turn's retries.
#[derive(MiddlewareState, Default, Clone)]
struct Retries {
    count: u32,
}

#[adk::middleware(pipeline = turn_input)]
async fn allow_search(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    ctx.update_middleware_state::<Allowed>(|allowed| allowed.tools.push("search".to_owned()))?;
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn remember_theme(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    ctx.state_mut().set(THEME, "dark".to_owned())?;
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_output)]
async fn count_step(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    ctx.state_mut().set_value("step", json!(2))?;
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = dispatch_output)]
async fn count_visit(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    ctx.state_mut().add(VISITS, 1)?;
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = dispatch_output)]
async fn count_failure(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    ctx.update_middleware_state(|failures: &mut Failures| failures.count += 1)?;
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = tool_execution)]
async fn note_tool(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
    let name = ctx.tool_name().to_owned();
    ctx.invocation()
        .set_state_value("user:last_tool", json!(name))?;
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn scratch_only(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    ctx.state_mut().set(SCRATCH, 1)?;
    ctx.state_mut().set_value("temp:note", json!("x"))?;
    ctx.update_middleware_state::<Retries>(|retries| retries.count += 1)?;
    // Reading persistent state writes nothing: without a store it is simply unset.
    let _ = ctx.middleware_state::<Allowed>();
    let _ = ctx.state().get(THEME)?;
    let _ = next.run(ctx).await;
    Ok(())
}

/// A bit set whose `set` takes a constant: a call the scan sees, which the compiler says is no
/// state write.
struct Bits(u64);

impl Bits {
    fn set(&mut self, bit: u32, on: bool) {
        if on {
            self.0 |= 1 << bit;
        }
    }
}

const HIGH: u32 = 7;

/// A map whose `set` takes a `&str` constant: not a state write either.
struct Labels(Vec<(&'static str, String)>);

impl Labels {
    fn set(&mut self, name: &'static str, value: String) {
        self.0.push((name, value));
    }
}

const USER_LABEL: &str = "user:label";

#[adk::middleware(pipeline = turn_input)]
async fn sets_bits(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let mut bits = Bits(0);
    bits.set(HIGH, true);
    let mut labels = Labels(Vec::new());
    labels.set(USER_LABEL, "x".to_owned());
    ctx.state_mut().set(SCRATCH, u32::try_from(bits.0)?)?;
    let _ = next.run(ctx).await;
    Ok(())
}

fn write_theme(ctx: &mut TurnContext) -> Result<(), BoxError> {
    ctx.state_mut().set(THEME, "light".to_owned())?;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn theme_through_a_helper(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    write_theme(ctx)?;
    let _ = next.run(ctx).await;
    Ok(())
}

mod keys {
    pub const MOOD: adk::state::StateKey<String> = adk::state_key!("user:mood" => String);
}

/// Every name here is declared in the body, where the build's record (written outside the
/// body) could not see it or would see another item: the build skips them, the turn refuses.
#[adk::middleware(pipeline = turn_input)]
async fn local_names(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    use keys::MOOD;
    const LOCAL: StateKey<u32> = adk::state_key!("user:local" => u32);
    #[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
    #[middleware_state(persistent, key = "tests.build.local")]
    struct Local {
        count: u32,
    }
    ctx.state_mut().set(MOOD, "calm".to_owned())?;
    ctx.state_mut().set(LOCAL, 1)?;
    ctx.update_middleware_state::<Local>(|local| local.count += 1)?;
    let _ = next.run(ctx).await;
    Ok(())
}

fn acking() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    })
}

fn raw() -> RawTurnContext {
    RawTurnContext::new("s1", "You are a test.")
        .app_name("app")
        .user_id("ada")
}

/// The writes a refused build reports, and its message naming each of `named` and the fix.
#[track_caller]
fn refused_naming(result: Result<TurnRunner, BuildError>, named: &[&str]) -> Vec<UnkeptWrite> {
    let Err(error) = result else {
        panic!("a runner that would lose its state after every turn was built");
    };
    let message = error.to_string();
    for fragment in named.iter().chain(&[
        "the runner has no session store",
        "add `.session_store(..)` to the builder",
        "`temp:` keys and transient middleware state",
    ]) {
        assert!(message.contains(fragment), "`{fragment}` in: {message}");
    }
    match error {
        BuildError::StateWithoutStore { writes } => writes,
        other => panic!("refused for another reason: {other:?}"),
    }
}

#[test]
fn persistent_middleware_state_without_a_session_store_is_refused_when_the_runner_is_built() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(allow_search)
        .executor(acking())
        .try_build();
    let writes = refused_naming(
        result,
        &[
            "middleware #1 `allow_search` of the `turn_input` pipeline updates the persistent \
             middleware state `state_without_store_build::Allowed` (key `tests.build.allowed`)",
        ],
    );
    assert_eq!(
        writes,
        [UnkeptWrite {
            pipeline: "turn_input",
            position: 0,
            middleware: "allow_search",
            write: StateWrite::MiddlewareState {
                type_name: "state_without_store_build::Allowed",
                key: "tests.build.allowed",
                persistent: true,
            },
        }]
    );
}

#[test]
fn a_user_key_without_a_session_store_is_refused_when_the_runner_is_built() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(remember_theme)
        .executor(acking())
        .try_build();
    refused_naming(
        result,
        &[
            "middleware #1 `remember_theme` of the `turn_input` pipeline writes the user state key `user:theme`",
        ],
    );
}

#[test]
fn a_session_key_without_a_session_store_is_refused_when_the_runner_is_built() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_output(count_step)
        .executor(acking())
        .try_build();
    refused_naming(
        result,
        &[
            "middleware #1 `count_step` of the `turn_output` pipeline writes the session state key `step`",
        ],
    );
}

#[test]
fn an_app_key_without_a_session_store_is_refused_when_the_runner_is_built() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .dispatch_output(count_visit)
        .executor(acking())
        .try_build();
    refused_naming(
        result,
        &[
            "middleware #1 `count_visit` of the `dispatch_output` pipeline writes the app state key `app:visits`",
        ],
    );
}

#[test]
fn the_report_lists_every_write_of_every_middleware_in_pipeline_order() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_output(count_step)
        .turn_input(scratch_only)
        .turn_input(remember_theme)
        .dispatch_output(count_visit)
        .dispatch_output(count_failure)
        .tool_execution(note_tool)
        .executor(acking())
        .try_build();
    let writes = refused_naming(
        result,
        &[
            "`state_without_store_build::Failures`",
            "middleware #1 `note_tool` of the `tool_execution` pipeline writes the user state key `user:last_tool`",
        ],
    );
    let listed: Vec<(&str, usize, &str)> = writes
        .iter()
        .map(|write| (write.pipeline, write.position, write.middleware))
        .collect();
    assert_eq!(
        listed,
        [
            ("turn_input", 1, "remember_theme"),
            ("dispatch_output", 0, "count_visit"),
            ("dispatch_output", 1, "count_failure"),
            ("tool_execution", 0, "note_tool"),
            ("turn_output", 0, "count_step"),
        ]
    );
}

#[test]
#[should_panic(
    expected = "the runner has no session store, but its middleware write state only \
                           a store keeps, which would be lost after every turn:\n  - middleware \
                           #1 `remember_theme` of the `turn_input` pipeline writes the user state \
                           key `user:theme`\nadd `.session_store(..)` to the builder"
)]
fn build_panics_with_the_same_report() {
    let _runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(remember_theme)
        .executor(acking())
        .build();
}

#[tokio::test]
async fn temp_keys_and_transient_middleware_state_build_and_run_without_a_session_store() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(scratch_only)
        .turn_input(sets_bits)
        .executor(acking())
        .try_build()
        .expect("state that lives one turn needs no store");
    let outcome = runner.run(raw()).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn every_such_middleware_builds_and_runs_with_a_session_store() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(InMemorySessionStore::new())
        .turn_input(allow_search)
        .turn_input(remember_theme)
        .dispatch_output(count_visit)
        .dispatch_output(count_failure)
        .turn_output(count_step)
        .executor(acking())
        .try_build()
        .expect("a runner with a store keeps its state");
    let outcome = runner.run(raw()).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[test]
fn a_program_with_a_stateful_runner_and_a_stateless_one_builds_both() {
    let stateful = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(InMemorySessionStore::new())
        .turn_input(allow_search)
        .turn_input(remember_theme)
        .executor(acking())
        .try_build();
    assert!(stateful.is_ok(), "{:?}", stateful.err());
    let stateless = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(scratch_only)
        .executor(acking())
        .try_build();
    assert!(stateless.is_ok(), "{:?}", stateless.err());
}

#[tokio::test]
async fn a_write_through_a_helper_fn_is_left_to_the_first_turn() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(theme_through_a_helper)
        .executor(acking())
        .try_build()
        .expect("the build cannot see a write inside a helper fn");
    let outcome = runner.run(raw()).await.expect("valid input");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("the turn was not refused: {:?}", outcome.status);
    };
    assert_eq!(error.code(), ErrorCode::NoSessionStore, "{error}");
    assert!(error.message().contains("`user:theme`"), "{error}");
}

#[test]
fn the_token_budget_without_a_session_store_is_refused_when_the_runner_is_built() {
    let budget = adk::budget::TokenBudget::new().per_turn_total(500);
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .dispatch_input(budget)
        .dispatch_output(budget)
        .executor(acking())
        .try_build();
    let writes = refused_naming(
        result,
        &[
            "middleware #1 `TokenBudget` of the `dispatch_input` pipeline updates the \
             persistent middleware state `adk::budget::SessionUsage` (key \
             `adk.budget.session_usage`)",
        ],
    );
    assert_eq!(writes.len(), 2, "{writes:#?}");
}

#[tokio::test]
async fn names_the_body_declares_itself_are_left_to_the_first_turn() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(local_names)
        .executor(acking())
        .try_build()
        .expect("the build does not record names declared inside the body");
    let outcome = runner.run(raw()).await.expect("valid input");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("the turn was not refused: {:?}", outcome.status);
    };
    assert_eq!(error.code(), ErrorCode::NoSessionStore, "{error}");
    for fragment in ["`user:mood`", "`user:local`", "`tests.build.local`"] {
        assert!(
            error.message().contains(fragment),
            "`{fragment}` in: {error}"
        );
    }
}
