//! `#[middleware]` at run time: the generated middleware runs the user's body unchanged, in
//! registration order, with the error boxed for the pipeline.

use std::sync::Mutex;

use adk::context::Aborted;
use adk::pipeline::{BoxError, DispatchInput, DispatchOutput, Downstream, Next, Stack, TurnInput};
use adk::{DispatchContext, TurnContext};

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
    let mut ctx = TurnContext::default();

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
    let mut ctx = TurnContext::default();

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
    let mut ctx = TurnContext::default();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::Aborted);
    assert!(ctx.is_aborted());
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
async fn one_function_listed_for_two_pipelines_runs_in_both() {
    let mut input = Stack::<DispatchInput>::new();
    let mut output = Stack::<DispatchOutput>::new();
    input.push(count_iterations);
    output.push(count_iterations);
    let mut ctx = DispatchContext::default();

    let input_run = input.run(&mut ctx).await;
    let output_run = output.run(&mut ctx).await;

    assert_eq!(input_run.outcome, Downstream::Completed);
    assert_eq!(output_run.outcome, Downstream::Completed);
    assert_eq!(entries(&ITERATIONS), ["dispatch_input", "dispatch_output"]);
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
    let mut ctx = TurnContext::default();

    let run = stack.run(&mut ctx).await;

    assert_eq!(run.outcome, Downstream::ShortCircuited);
}
