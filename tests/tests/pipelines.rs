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

/// Abort: never an error, `turnEnd` always fires.
#[path = "pipelines/abort.rs"]
mod abort;
/// Ack and nack from dispatch middleware: the pipeline finishes, then the loop ends.
#[path = "pipelines/acks.rs"]
mod acks;
/// Errors and panics: reported under the pipeline's code, never thrown past `run`.
#[path = "pipelines/failures.rs"]
mod failures;
/// The onion: pre-steps in registration order, post-steps in reverse.
#[path = "pipelines/onion.rs"]
mod onion;
/// Short-circuits: a middleware that returns without running `next`.
#[path = "pipelines/short_circuits.rs"]
mod short_circuits;

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
