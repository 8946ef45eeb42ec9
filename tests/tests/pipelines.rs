//! The four pipelines as a specification: the onion order of pre- and post-steps, what a
//! short-circuit, an error, a panic and an abort do in each pipeline, and which events a turn
//! emits for each (asserted as exact sequences of names and error codes).
//!
//! Most tests use one staging: middleware `a`, `b`, `c` registered in that order on the pipeline
//! under test, an executor that logs `executor`, and a marker `out` on `turn_output` (unless
//! `turn_output` is the pipeline under test). `b` is the middleware whose behaviour the test is
//! about. The shared log then shows exactly which bodies ran and in which order.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use adk::TurnRunner;
use adk::context::{AbortReason, Aborted, DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::events::{DispatchStatus, ErrorCode, TurnError};
use adk::pipeline::{
    BoxError, BoxFuture, DispatchInput, DispatchOutput, Downstream, Middleware, Next, Panicked,
    Pipeline, TurnInput, TurnOutput, from_fn,
};
use adk::runner::{TurnOutcome, TurnRunnerBuilder, TurnStatus};
use adk::storage::NoopStorage;
use adk_integration_tests::{EventRecorder, Log, ScriptedExecutor, ScriptedFailure, Step};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Staging

/// One of the four pipelines, as a value, so one test body can be run against each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    TurnInput,
    DispatchInput,
    DispatchOutput,
    TurnOutput,
}

/// Middleware that fits every pipeline.
trait AnyPipeline:
    Middleware<TurnInput>
    + Middleware<DispatchInput>
    + Middleware<DispatchOutput>
    + Middleware<TurnOutput>
{
}

impl<M> AnyPipeline for M where
    M: Middleware<TurnInput>
        + Middleware<DispatchInput>
        + Middleware<DispatchOutput>
        + Middleware<TurnOutput>
{
}

fn register<S, X>(
    builder: TurnRunnerBuilder<S, X>,
    place: Place,
    middleware: impl AnyPipeline,
) -> TurnRunnerBuilder<S, X> {
    match place {
        Place::TurnInput => builder.turn_input(middleware),
        Place::DispatchInput => builder.dispatch_input(middleware),
        Place::DispatchOutput => builder.dispatch_output(middleware),
        Place::TurnOutput => builder.turn_output(middleware),
    }
}

struct Staged {
    runner: TurnRunner,
    log: Log,
    events: EventRecorder,
    executor: ScriptedExecutor,
}

/// `a`, `middle`, `c` on `place`; an executor that logs `executor` and acknowledges (after one
/// unsignalled iteration when `place` is `dispatch_output`, so that pipeline runs); `out` on
/// `turn_output` unless that is `place`.
fn staged(place: Place, log: &Log, middle: impl AnyPipeline) -> Staged {
    let events = EventRecorder::new();
    let script = if place == Place::DispatchOutput {
        vec![Step::Continue, Step::Ack]
    } else {
        vec![Step::Ack]
    };
    let executor = ScriptedExecutor::new(script).logging_to(log.clone());
    let mut builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener());
    builder = register(builder, place, log.marker("a"));
    builder = register(builder, place, middle);
    builder = register(builder, place, log.marker("c"));
    if place != Place::TurnOutput {
        builder = builder.turn_output(log.marker("out"));
    }
    Staged {
        runner: builder.build(),
        log: log.clone(),
        events,
        executor,
    }
}

fn raw() -> RawTurnContext {
    RawTurnContext::new("conversation-1", "You are a test.")
}

async fn run(runner: &TurnRunner, raw: RawTurnContext) -> TurnOutcome {
    // A broken abort would leave a turn waiting for a cancellation that never reaches it; fail
    // loudly instead of hanging the test run.
    within_deadline(runner.run(raw))
        .await
        .expect("the raw turn context is valid")
}

async fn within_deadline<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("the turn never finished")
}

/// What `b` does instead of behaving.
#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    /// Returns without running `next`.
    ShortCircuit,
    /// Returns an error before running `next`.
    Fail,
    /// Panics before running `next`.
    Panic,
    /// Returns the abort error before running `next`.
    ReturnAborted,
}

const B_FAILURE: &str = "b refused the context";
const B_PANIC: &str = "b lost its footing";
const B_ABORT: &str = "b withdrew";

#[derive(Clone)]
struct Misbehaving {
    how: Misbehaviour,
    log: Log,
}

impl<P: Pipeline> Middleware<P> for Misbehaving {
    fn handle<'a>(
        &'a self,
        _ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.log.push("b");
            match self.how {
                Misbehaviour::ShortCircuit => {
                    drop(next);
                    Ok(())
                }
                Misbehaviour::Fail => Err(ScriptedFailure(B_FAILURE).into()),
                Misbehaviour::Panic => panic!("{B_PANIC}"),
                Misbehaviour::ReturnAborted => Err(Aborted::new(B_ABORT).into()),
            }
        })
    }
}

fn misbehaving(place: Place, how: Misbehaviour) -> Staged {
    let log = Log::new();
    let middle = Misbehaving {
        how,
        log: log.clone(),
    };
    staged(place, &log, middle)
}

/// Event traces, written out so every test states its sequence in full.
const TURN_START: (&str, &str) = ("turnStart", "");
const TURN_END: (&str, &str) = ("turnEnd", "");
const DISPATCH_START: (&str, &str) = ("dispatchStart", "");
const ITERATION_START: (&str, &str) = ("iterationStart", "");
const ITERATION_END: (&str, &str) = ("iterationEnd", "");
const ACKED: (&str, &str) = ("dispatchEnd", "ack");
const NACKED: (&str, &str) = ("dispatchEnd", "nack");
const DISPATCH_ABORTED: (&str, &str) = ("dispatchEnd", "aborted");

fn error(code: ErrorCode) -> (&'static str, &'static str) {
    ("error", code.as_str())
}

fn failed_with(outcome: &TurnOutcome) -> &TurnError {
    match &outcome.status {
        TurnStatus::Failed(error) => error,
        other => panic!("expected the turn to fail, it ended {other:?}"),
    }
}

fn cause_of<T: std::error::Error + 'static>(error: &TurnError) -> &T {
    error
        .cause()
        .and_then(|cause| cause.downcast_ref::<T>())
        .unwrap_or_else(|| {
            panic!(
                "{error} should carry a {} as its cause",
                std::any::type_name::<T>()
            )
        })
}

// ---------------------------------------------------------------------------------------------
// The onion: pre-steps in registration order, post-steps in reverse

#[tokio::test]
async fn turn_input_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::TurnInput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        log.joined(),
        "a-pre b-pre c-pre c-post b-post a-post executor out-pre out-post"
    );
    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
}

#[tokio::test]
async fn dispatch_input_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::DispatchInput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        log.joined(),
        "a-pre b-pre c-pre c-post b-post a-post executor out-pre out-post"
    );
    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
}

#[tokio::test]
async fn dispatch_output_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::DispatchOutput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    // Iteration 0 runs the output pipeline; the executor acknowledges in iteration 1, which
    // skips that iteration's output pipeline.
    assert_eq!(
        log.joined(),
        "executor a-pre b-pre c-pre c-post b-post a-post executor out-pre out-post"
    );
    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            ACKED,
            TURN_END
        ]
    );
}

#[tokio::test]
async fn turn_output_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::TurnOutput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        log.joined(),
        "executor a-pre b-pre c-pre c-post b-post a-post"
    );
    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
}

#[tokio::test]
async fn middleware_run_in_registration_order_whatever_their_names() {
    let log = Log::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .turn_input(log.marker("zeta"))
        .turn_input(log.marker("alpha"))
        .turn_input(log.marker("mu"))
        .turn_input(log.marker("beta"))
        .build();
    let _ = run(&runner, raw()).await;

    assert_eq!(
        log.joined(),
        "zeta-pre alpha-pre mu-pre beta-pre beta-post mu-post alpha-post zeta-post"
    );
}

#[tokio::test]
async fn every_post_step_sees_the_pipeline_completed_on_the_happy_path() {
    let log = Log::new();
    let staged = staged(Place::TurnInput, &log, log.marker("b"));
    let _ = run(&staged.runner, raw()).await;

    for name in ["a", "b", "c"] {
        assert_eq!(
            log.outcomes_seen_by(name),
            [Downstream::Completed],
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_later_middleware_sees_what_an_earlier_one_put_in_the_stash() {
    let log = Log::new();
    let reader = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.stash.set("test.retrieval.chunks", 3)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let log = reader.clone();
            Box::pin(async move {
                let chunks: Option<u32> = ctx.stash.get("test.retrieval.chunks")?;
                log.push(format!("chunks {chunks:?}"));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let _ = run(&runner, raw()).await;

    assert_eq!(log.entries(), ["chunks Some(3)"]);
}

#[tokio::test]
async fn dispatch_pipelines_run_once_per_iteration_around_the_executor() {
    let log = Log::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(
            ScriptedExecutor::new([Step::Continue, Step::Continue, Step::Ack])
                .logging_to(log.clone()),
        )
        .turn_input(log.marker("turn_input"))
        .dispatch_input(log.marker("dispatch_input"))
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let _ = run(&runner, raw()).await;

    let iteration = "dispatch_input-pre dispatch_input-post executor \
                     dispatch_output-pre dispatch_output-post";
    assert_eq!(
        log.joined(),
        format!(
            "turn_input-pre turn_input-post {iteration} {iteration} \
             dispatch_input-pre dispatch_input-post executor turn_output-pre turn_output-post"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Short-circuits: a middleware that returns without running `next`

fn assert_short_circuit_names(error: &TurnError, pipeline: &str) {
    assert_eq!(error.code(), ErrorCode::PipelineShortCircuited);
    assert!(
        error.message().contains(&format!("`{pipeline}`")),
        "the message should name `{pipeline}`: {}",
        error.message()
    );
}

#[tokio::test]
async fn a_short_circuit_in_turn_input_is_reported_and_skips_the_dispatch_and_turn_output() {
    let staged = misbehaving(Place::TurnInput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    assert_short_circuit_names(&staged.events.errors()[0], "turn_input");
    assert_short_circuit_names(failed_with(&outcome), "turn_input");
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(staged.executor.runs(), 0);
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn a_short_circuit_in_turn_output_is_reported_and_the_turn_still_ends() {
    let staged = misbehaving(Place::TurnOutput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ACKED,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    assert_short_circuit_names(&staged.events.errors()[0], "turn_output");
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Ack));
    assert_short_circuit_names(failed_with(&outcome), "turn_output");
}

#[tokio::test]
async fn a_short_circuit_in_dispatch_input_ends_the_dispatch_as_nack_with_that_error() {
    let staged = misbehaving(Place::DispatchInput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    let dispatch_error = staged
        .events
        .dispatch_end_error()
        .expect("a nacked dispatch carries its error");
    assert_short_circuit_names(&dispatch_error, "dispatch_input");
    assert_short_circuit_names(&staged.events.errors()[0], "dispatch_input");
    // The executor never ran and turn_output was skipped.
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

#[tokio::test]
async fn a_short_circuit_in_dispatch_output_ends_the_dispatch_as_nack_with_that_error() {
    let staged = misbehaving(Place::DispatchOutput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    let dispatch_error = staged
        .events
        .dispatch_end_error()
        .expect("a nacked dispatch carries its error");
    assert_short_circuit_names(&dispatch_error, "dispatch_output");
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

// ---------------------------------------------------------------------------------------------
// Errors and panics: reported under the pipeline's code, never thrown past `run`

/// Checks the parts every failing-middleware test shares: the reported error's code, its
/// cause, and that `a`'s post-step ran and saw `Failed`.
fn assert_failure_reported(staged: &Staged, error: &TurnError, code: ErrorCode, panicked: bool) {
    assert_eq!(error.code(), code, "{error}");
    if panicked {
        assert_eq!(cause_of::<Panicked>(error).message, B_PANIC);
        assert!(format!("{error:#}").contains(B_PANIC), "{error:#}");
    } else {
        assert_eq!(
            *cause_of::<ScriptedFailure>(error),
            ScriptedFailure(B_FAILURE)
        );
        assert!(format!("{error:#}").contains(B_FAILURE), "{error:#}");
    }
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Failed]);
}

async fn failing_turn_input(how: Misbehaviour) {
    let staged = misbehaving(Place::TurnInput, how);
    let outcome = run(&staged.runner, raw()).await;

    let code = ErrorCode::InputPipelineError;
    assert_eq!(staged.events.trace(), [TURN_START, error(code), TURN_END]);
    let panicked = matches!(how, Misbehaviour::Panic);
    assert_failure_reported(&staged, &staged.events.errors()[0], code, panicked);
    assert_failure_reported(&staged, failed_with(&outcome), code, panicked);
    // `c`, the dispatch and turn_output never ran; `a`'s post-step did.
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn an_error_in_turn_input_is_reported_as_an_input_pipeline_error_and_skips_the_dispatch() {
    failing_turn_input(Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_turn_input_is_reported_as_an_input_pipeline_error_and_skips_the_dispatch() {
    failing_turn_input(Misbehaviour::Panic).await;
}

async fn failing_turn_output(how: Misbehaviour) {
    let staged = misbehaving(Place::TurnOutput, how);
    let outcome = run(&staged.runner, raw()).await;

    let code = ErrorCode::OutputPipelineError;
    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ACKED,
            error(code),
            TURN_END
        ]
    );
    let panicked = matches!(how, Misbehaviour::Panic);
    assert_failure_reported(&staged, &staged.events.errors()[0], code, panicked);
    assert_failure_reported(&staged, failed_with(&outcome), code, panicked);
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Ack));
}

#[tokio::test]
async fn an_error_in_turn_output_is_reported_as_an_output_pipeline_error_and_the_turn_ends() {
    failing_turn_output(Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_turn_output_is_reported_as_an_output_pipeline_error_and_the_turn_ends() {
    failing_turn_output(Misbehaviour::Panic).await;
}

async fn failing_dispatch_pipeline(place: Place, how: Misbehaviour) {
    let staged = misbehaving(place, how);
    let outcome = run(&staged.runner, raw()).await;

    let code = ErrorCode::DispatchPipelineError;
    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(code),
            TURN_END
        ]
    );
    let panicked = matches!(how, Misbehaviour::Panic);
    let dispatch_error = staged
        .events
        .dispatch_end_error()
        .expect("a nacked dispatch carries its error");
    assert_failure_reported(&staged, &dispatch_error, code, panicked);
    assert_failure_reported(&staged, &staged.events.errors()[0], code, panicked);
    assert_failure_reported(&staged, failed_with(&outcome), code, panicked);
    // turn_output (`out`) is skipped after a failed dispatch.
    let expected = match place {
        Place::DispatchInput => "a-pre b a-post",
        _ => "executor a-pre b a-post",
    };
    assert_eq!(staged.log.joined(), expected);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

#[tokio::test]
async fn an_error_in_dispatch_input_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchInput, Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_dispatch_input_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchInput, Misbehaviour::Panic).await;
}

#[tokio::test]
async fn an_error_in_dispatch_output_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchOutput, Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_dispatch_output_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchOutput, Misbehaviour::Panic).await;
}

#[tokio::test]
async fn a_failing_post_step_is_reported_and_outer_post_steps_still_run() {
    let log = Log::new();
    let events = EventRecorder::new();
    let inner = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .observe(events.listener())
        .turn_input(log.marker("a"))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let log = inner.clone();
            Box::pin(async move {
                let _ = next.run(ctx).await;
                log.push("b-post fails");
                Err::<(), BoxError>(ScriptedFailure(B_FAILURE).into())
            })
        }))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [TURN_START, error(ErrorCode::InputPipelineError), TURN_END]
    );
    assert_eq!(log.joined(), "a-pre b-post fails a-post");
    assert_eq!(log.outcomes_seen_by("a"), [Downstream::Failed]);
    assert_eq!(outcome.dispatch, None);
}

async fn failing_executor(step: Step, cause_message: &str) -> (TurnOutcome, EventRecorder, Log) {
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([step]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    let code = ErrorCode::ExecutorError;
    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(code),
            TURN_END
        ]
    );
    let reported = &events.errors()[0];
    assert_eq!(reported.code(), code);
    assert!(
        format!("{reported:#}").contains(cause_message),
        "the report should include the cause's: {reported:#}"
    );
    assert_eq!(failed_with(&outcome).code(), code);
    assert_eq!(
        events.dispatch_end_error().map(|error| error.code()),
        Some(code)
    );
    // turn_output is skipped after a failed dispatch.
    assert_eq!(log.joined(), "executor");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
    (outcome, events, log)
}

#[tokio::test]
async fn an_executor_error_nacks_the_dispatch_with_its_cause_in_the_report_and_skips_output() {
    let (_, events, _) =
        failing_executor(Step::Fail("the model is down"), "the model is down").await;
    assert_eq!(
        *cause_of::<ScriptedFailure>(&events.errors()[0]),
        ScriptedFailure("the model is down")
    );
}

#[tokio::test]
async fn an_executor_panic_nacks_the_dispatch_and_never_escapes_run() {
    let (_, events, _) =
        failing_executor(Step::Panic("tokenizer overflow"), "tokenizer overflow").await;
    assert_eq!(
        cause_of::<Panicked>(&events.errors()[0]).message,
        "tokenizer overflow"
    );
}

#[tokio::test]
async fn turn_output_is_skipped_when_the_dispatch_is_nacked() {
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Nack("off topic")]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::Nacked),
            TURN_END
        ]
    );
    assert_eq!(
        *cause_of::<ScriptedFailure>(failed_with(&outcome)),
        ScriptedFailure("off topic")
    );
    assert_eq!(log.joined(), "executor");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

// ---------------------------------------------------------------------------------------------
// Abort: never an error, `turnEnd` always fires

fn aborted_by(outcome: &TurnOutcome) -> &AbortReason {
    match &outcome.status {
        TurnStatus::Aborted(reason) => reason,
        other => panic!("expected the turn to be aborted, it ended {other:?}"),
    }
}

/// `a`, then `b` built from `body`, then `c` on turn_input; `out` on turn_output; an acking
/// executor logging `executor`.
fn abort_stage<F>(body: F) -> Staged
where
    F: for<'a> Fn(
            &'a mut TurnContext,
            Next<'a, TurnContext>,
            Log,
        ) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let inner = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .turn_input(log.marker("a"))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            body(ctx, next, inner.clone())
        }))
        .turn_input(log.marker("c"))
        .turn_output(log.marker("out"))
        .build();
    Staged {
        runner,
        log,
        events,
        executor,
    }
}

#[tokio::test]
async fn aborting_before_next_skips_the_remaining_middleware_and_the_dispatch_without_an_error() {
    let staged = abort_stage(|ctx, next, log| {
        Box::pin(async move {
            log.push("b-pre");
            ctx.abort("the policy refused");
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-pre b-post Aborted a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("the policy refused".into())
    );
    assert_eq!(staged.executor.runs(), 0);
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn aborting_without_running_next_is_not_reported_as_a_short_circuit() {
    let staged = abort_stage(|ctx, next, log| {
        Box::pin(async move {
            log.push("b");
            ctx.abort("not today");
            drop(next);
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("not today".into())
    );
}

#[tokio::test]
async fn aborting_after_next_in_turn_input_still_skips_the_dispatch() {
    let staged = abort_stage(|ctx, next, log| {
        Box::pin(async move {
            let seen = next.run(ctx).await;
            ctx.abort("changed my mind");
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    // The rest of turn_input had already run, so `b` and `a` saw it complete; the abort still
    // stops the turn before the dispatch.
    assert_eq!(
        staged.log.joined(),
        "a-pre c-pre c-post b-post Completed a-post"
    );
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("changed my mind".into())
    );
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn returning_aborted_from_turn_input_aborts_the_turn_without_an_error() {
    let staged = misbehaving(Place::TurnInput, Misbehaviour::ReturnAborted);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested(B_ABORT.into())
    );
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn returning_aborted_from_turn_output_aborts_the_turn_without_an_error() {
    let staged = misbehaving(Place::TurnOutput, Misbehaviour::ReturnAborted);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested(B_ABORT.into())
    );
}

async fn dispatch_aborted_from(place: Place) {
    let staged = misbehaving(place, Misbehaviour::ReturnAborted);
    let outcome = run(&staged.runner, raw()).await;

    // Only the dispatch is aborted: it ends as aborted and the turn goes on to turn_output. An
    // abort in dispatch_output comes after the executor: that iteration still completes.
    let (iteration, expected) = match place {
        Place::DispatchInput => (vec![ITERATION_START], "a-pre b a-post out-pre out-post"),
        _ => (
            vec![ITERATION_START, ITERATION_END],
            "executor a-pre b a-post out-pre out-post",
        ),
    };
    let trace = [
        vec![TURN_START, DISPATCH_START],
        iteration,
        vec![DISPATCH_ABORTED, TURN_END],
    ];
    assert_eq!(staged.events.trace(), trace.concat());
    assert_eq!(staged.log.joined(), expected);
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
}

#[tokio::test]
async fn returning_aborted_from_dispatch_input_aborts_only_the_dispatch() {
    dispatch_aborted_from(Place::DispatchInput).await;
}

#[tokio::test]
async fn returning_aborted_from_dispatch_output_aborts_only_the_dispatch() {
    dispatch_aborted_from(Place::DispatchOutput).await;
}

#[tokio::test]
async fn aborting_the_dispatch_context_aborts_only_the_dispatch() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                ctx.abort("budget spent");
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(executor.runs(), 0);
    assert_eq!(log.joined(), "out-pre out-post");
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
    assert!(!outcome.context.is_aborted());
}

#[tokio::test]
async fn returning_aborted_from_the_executor_aborts_only_the_dispatch() {
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Abort("user left")]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(log.joined(), "executor out-pre out-post");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
}

#[tokio::test]
async fn a_pre_cancelled_token_emits_only_turn_start_and_turn_end_and_runs_nothing() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .turn_input(log.marker("turn_input"))
        .dispatch_input(log.marker("dispatch_input"))
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let token = CancellationToken::new();
    token.cancel();
    let outcome = run(&runner, raw().cancellation(token)).await;

    assert_eq!(events.trace(), [TURN_START, TURN_END]);
    assert_eq!(log.entries(), Vec::<String>::new());
    assert_eq!(executor.runs(), 0);
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn the_returned_context_sees_the_callers_token_cancelled_after_the_turn() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let token = CancellationToken::new();
    let outcome = run(&runner, raw().cancellation(token.clone())).await;
    assert!(outcome.is_completed());
    assert!(!outcome.context.is_aborted());

    // The runner only watches the token while it walks the turn; afterwards the context reads
    // the token itself.
    token.cancel();
    assert!(outcome.context.is_aborted());
    assert_eq!(outcome.context.abort_reason(), Some(AbortReason::Cancelled));
}

#[tokio::test]
async fn cancelling_the_callers_token_from_middleware_skips_the_remaining_middleware() {
    let token = CancellationToken::new();
    let callers = token.clone();
    let staged = abort_stage(move |ctx, next, log| {
        let callers = callers.clone();
        Box::pin(async move {
            log.push("b-pre");
            callers.cancel();
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw().cancellation(token)).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-pre b-post Aborted a-post");
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn cancelling_the_callers_token_from_another_task_during_turn_input_skips_the_dispatch() {
    let started = Arc::new(Notify::new());
    let waiting = Arc::clone(&started);
    let staged = abort_stage(move |ctx, next, log| {
        let waiting = Arc::clone(&waiting);
        Box::pin(async move {
            waiting.notify_one();
            ctx.cancellation().cancelled().await;
            log.push("b-woken");
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let token = CancellationToken::new();
    let callers = token.clone();
    let canceller = tokio::spawn(async move {
        started.notified().await;
        callers.cancel();
    });
    let outcome = run(&staged.runner, raw().cancellation(token)).await;
    canceller.await.expect("the cancelling task finished");

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-woken b-post Aborted a-post");
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn cancelling_the_callers_token_mid_dispatch_ends_it_as_aborted_and_skips_turn_output() {
    let log = Log::new();
    let events = EventRecorder::new();
    let started = Arc::new(Notify::new());
    let waiting = Arc::clone(&started);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let waiting = Arc::clone(&waiting);
            Box::pin(async move {
                waiting.notify_one();
                ctx.cancellation().cancelled().await;
                Ok::<(), BoxError>(())
            })
        }))
        .observe(events.listener())
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let token = CancellationToken::new();
    let callers = token.clone();
    let canceller = tokio::spawn(async move {
        started.notified().await;
        callers.cancel();
    });
    let outcome = run(&runner, raw().cancellation(token)).await;
    canceller.await.expect("the cancelling task finished");

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(log.entries(), Vec::<String>::new());
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
}

#[tokio::test]
async fn aborting_the_turn_leaves_the_callers_token_alone() {
    let staged = abort_stage(|ctx, next, _log| {
        Box::pin(async move {
            ctx.abort("done here");
            let _ = next.run(ctx).await;
            Ok(())
        })
    });
    let token = CancellationToken::new();
    let outcome = run(&staged.runner, raw().cancellation(token.clone())).await;

    assert!(outcome.context.is_aborted());
    assert!(outcome.context.cancellation().is_cancelled());
    assert!(
        !token.is_cancelled(),
        "the turn's token is a child of the caller's: aborting the turn must not cancel it"
    );
}

// ---------------------------------------------------------------------------------------------
// Ack and nack from dispatch middleware: the pipeline finishes, then the loop ends

#[tokio::test]
async fn acking_in_dispatch_input_lets_the_pipeline_finish_and_skips_the_executor() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let acker = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = acker.clone();
            Box::pin(async move {
                log.push("ack");
                ctx.ack()?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(log.marker("c"))
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert_eq!(log.joined(), "ack c-pre c-post out-pre out-post");
    assert_eq!(executor.runs(), 0);
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn nacking_in_dispatch_output_completes_the_iteration_then_ends_the_dispatch() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::new([Step::Continue]).logging_to(log.clone());
    let nacker = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .dispatch_output(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = nacker.clone();
            Box::pin(async move {
                log.push("nack");
                ctx.nack(ScriptedFailure("the answer leaks a secret"))?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("c"))
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            NACKED,
            error(ErrorCode::Nacked),
            TURN_END
        ]
    );
    assert_eq!(log.joined(), "executor nack c-pre c-post");
    assert_eq!(
        *cause_of::<ScriptedFailure>(failed_with(&outcome)),
        ScriptedFailure("the answer leaks a secret")
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}
