//! `#[middleware]` at run time: the generated middleware runs the user's body unchanged, in
//! registration order, with the error boxed for the pipeline.

use std::sync::Mutex;

use adk::context::{Aborted, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, Downstream, Next, Stack, TurnInput};
use adk::primitives::ToolRegistry;
use adk::runner::TurnStatus;
use adk::storage::{NoopStorage, SharedStorage};
use adk::{DispatchContext, TurnContext, TurnRunner};

/// A turn context for running a stack directly, without a runner.
fn turn_context() -> TurnContext {
    TurnContext::new(
        RawTurnContext::new("conversation-1", "Be brief."),
        SharedStorage::new(NoopStorage::new()),
        ToolRegistry::new(),
    )
    .expect("a conversation id and a system prompt are all a turn context needs")
}

/// Each test records into its own log, so tests running in parallel do not mix entries.
fn record(log: &Mutex<Vec<String>>, entry: impl Into<String>) {
    log.lock()
        .expect("a test panicked while holding the log")
        .push(entry.into());
}

fn entries(log: &Mutex<Vec<String>>) -> Vec<String> {
    log.lock()
        .expect("a test panicked while holding the log")
        .clone()
}

static ORDER: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[adk::middleware(pipeline = turn_input)]
async fn outer(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    record(&ORDER, "outer pre");
    let outcome = next.run(ctx).await;
    record(&ORDER, format!("outer post {outcome:?}"));
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn inner(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    record(&ORDER, "inner pre");
    let outcome = next.run(ctx).await;
    record(&ORDER, format!("inner post {outcome:?}"));
    Ok(())
}

#[tokio::test]
async fn pre_steps_run_in_registration_order_and_post_steps_in_reverse() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(outer);
    stack.push(inner);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Completed);
    assert_eq!(
        entries(&ORDER),
        [
            "outer pre",
            "inner pre",
            "inner post Completed",
            "outer post Completed"
        ]
    );
}

static FAILURE: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[derive(Debug)]
struct HistoryUnavailable;

impl std::fmt::Display for HistoryUnavailable {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("the history store is unreachable")
    }
}

impl std::error::Error for HistoryUnavailable {}

fn fetch_history() -> Result<(), HistoryUnavailable> {
    Err(HistoryUnavailable)
}

#[adk::middleware(pipeline = turn_input)]
async fn watches_downstream(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let outcome = next.run(ctx).await;
    record(&FAILURE, format!("saw {outcome:?}"));
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn fails_with_its_own_error(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), HistoryUnavailable> {
    fetch_history()?;
    record(&FAILURE, "unreachable after `?`");
    let _ = next.run(ctx).await;
    Ok(())
}

#[tokio::test]
async fn a_custom_error_returned_with_question_mark_fails_the_run_and_upstream_sees_it() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(watches_downstream);
    stack.push(fails_with_its_own_error);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Failed);
    assert_eq!(entries(&FAILURE), ["saw Failed"]);
}

#[adk::middleware(pipeline = turn_input)]
async fn refuses(_ctx: &mut TurnContext, _next: Next<'_, TurnContext>) -> Result<(), Aborted> {
    Err(Aborted::new("the user withdrew consent"))
}

#[tokio::test]
async fn returning_the_abort_error_aborts_the_turn_without_a_failure() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(refuses);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Aborted);
    assert!(ctx.is_aborted());
}

#[tokio::test]
async fn macro_middleware_registered_on_the_runner_aborts_the_turn() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(refuses)
        .build();

    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "Be brief."))
        .await
        .expect("the raw turn context is valid");

    assert!(
        matches!(outcome.status, TurnStatus::Aborted(_)),
        "{:?}",
        outcome.status
    );
    assert_eq!(outcome.dispatch, None);
}

static ITERATIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[adk::middleware(pipeline = [dispatch_input, dispatch_output])]
async fn count_iterations(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    let pipeline = next.pipeline();
    let _ = next.run(ctx).await;
    record(&ITERATIONS, pipeline);
    Ok(())
}

#[tokio::test]
async fn one_function_listed_for_two_pipelines_runs_in_both_through_the_runner() {
    // The executor acknowledges on the second iteration, so the first one runs both pipelines.
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                if ctx.iteration() > 0 {
                    ctx.ack()?;
                }
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(count_iterations)
        .dispatch_output(count_iterations)
        .build();

    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "Be brief."))
        .await
        .expect("the raw turn context is valid");

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let seen = entries(&ITERATIONS);
    assert!(
        seen.iter().any(|pipeline| pipeline == "dispatch_input"),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|pipeline| pipeline == "dispatch_output"),
        "{seen:?}"
    );
}

#[adk::middleware(pipeline = turn_input)]
async fn never_continues(
    ctx: &mut TurnContext,
    _next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let _ = ctx;
    Ok(())
}

#[tokio::test]
async fn an_underscore_next_compiles_and_short_circuits_at_run_time() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(never_continues);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::ShortCircuited);
}

/// Runs the rest of the chain and records nothing, so tests using it share no log.
#[adk::middleware(pipeline = turn_input)]
async fn passes_through(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[tokio::test]
async fn a_short_circuit_names_the_middleware_by_its_fn_name_counted_from_one() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(passes_through);
    stack.push(never_continues);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    let by = run.short_circuited_by.expect("the walk short-circuited");
    assert_eq!((by.position, by.name), (1, "never_continues"));
    assert_eq!(by.to_string(), "middleware #2 `never_continues`");
}

#[tokio::test]
async fn the_runner_reports_a_short_circuit_and_a_failure_with_the_middleware_name() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(never_continues)
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "Be brief."))
        .await
        .expect("the raw turn context is valid");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("expected a failed turn: {:?}", outcome.status);
    };
    assert!(
        error
            .message()
            .contains("the `turn_input` pipeline short-circuited: middleware #1 `never_continues`"),
        "{}",
        error.message()
    );

    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(passes_through)
        .turn_input(fails_with_its_own_error)
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "Be brief."))
        .await
        .expect("the raw turn context is valid");
    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("expected a failed turn: {:?}", outcome.status);
    };
    assert!(
        error.message().starts_with(
            "middleware #2 `fails_with_its_own_error` of the `turn_input` pipeline failed"
        ),
        "{}",
        error.message()
    );
}

static DIRECT: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[adk::middleware(pipeline = turn_input)]
async fn loads_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    record(&DIRECT, "loads_history pre");
    let outcome = next.run(ctx).await;
    record(&DIRECT, format!("loads_history post {outcome:?}"));
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn wraps_loads_history(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    record(&DIRECT, "wrapper pre");
    // A middleware is called like the fn it was written as; its error arrives boxed.
    loads_history(ctx, next).await?;
    record(&DIRECT, "wrapper post");
    Ok(())
}

#[tokio::test]
async fn a_middleware_called_like_a_fn_runs_its_body_around_the_rest_of_the_pipeline() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(wraps_loads_history);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Completed);
    assert_eq!(
        entries(&DIRECT),
        [
            "wrapper pre",
            "loads_history pre",
            "loads_history post Completed",
            "wrapper post"
        ]
    );
}

static FROM_MACRO_RULES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Declares one recording middleware per name, as a crate might for a family of similar steps.
macro_rules! recording_middleware {
    ($($name:ident),*) => {$(
        #[adk::middleware(pipeline = turn_input)]
        async fn $name(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
            record(&FROM_MACRO_RULES, stringify!($name));
            let _ = next.run(ctx).await;
            Ok(())
        }
    )*};
}

recording_middleware!(first_step, second_step);

#[tokio::test]
async fn middleware_declared_inside_a_macro_rules_expansion_runs() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(first_step);
    stack.push(second_step);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Completed);
    assert_eq!(entries(&FROM_MACRO_RULES), ["first_step", "second_step"]);
}

static DIRECT_ERROR: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[adk::middleware(pipeline = turn_input)]
async fn counts_turns(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    record(&DIRECT_ERROR, "counts_turns pre");
    let outcome = next.run(ctx).await;
    record(&DIRECT_ERROR, format!("counts_turns post {outcome:?}"));
    Err(HistoryUnavailable.into())
}

#[adk::middleware(pipeline = turn_input)]
async fn runs_counts_turns_itself(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let result = counts_turns(ctx, next).await;
    record(&DIRECT_ERROR, format!("returned {result:?}"));
    Ok(())
}

#[tokio::test]
async fn a_middleware_called_like_its_fn_returns_its_error_to_the_caller_boxed() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(runs_counts_turns_itself);
    let mut ctx = turn_context();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Completed);
    assert_eq!(
        entries(&DIRECT_ERROR),
        [
            "counts_turns pre",
            "counts_turns post Completed",
            "returned Err(HistoryUnavailable)"
        ]
    );
}
