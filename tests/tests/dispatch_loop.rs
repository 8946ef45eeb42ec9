//! The dispatch loop's rules one by one (spec 3.5–3.7 and 3.10), each asserted as an exact event
//! sequence with a scripted executor: which iterations complete, what ack and nack do wherever
//! they happen, abort of the dispatch versus abort of the turn, the write queue (flushed into
//! the turn on completed iterations and on ack, discarded otherwise, checked against both the
//! adapter and the turn), double signals, `on_ack` handlers, the iteration bound, checksum
//! counts, and the executor helpers.
//!
//! What `pipelines.rs` and `turn_runner.rs` already pin (onion order, middleware failures, the
//! caller's token, an ack in `dispatch_input`, a nack in `dispatch_output`) is not repeated here.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use adk::TurnRunner;
use adk::context::{AbortReason, DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::{Executor, ReportError, ToolCallUpdate, executor_fn};
use adk::events::{
    DispatchStatus, ErrorCode, Event, GenerationStats, LogLevel, StreamedContent, ToolCallContent,
    TurnError,
};
use adk::pipeline::{BoxError, BoxFuture, from_fn};
use adk::primitives::{Memory, Message, ToolCall, tool_call_checksum};
use adk::runner::{TurnOutcome, TurnRunnerBuilder, TurnStatus};
use adk::storage::SharedStorage;
use adk_integration_tests::{EventRecorder, Log, RecordingStorage, ScriptedExecutor, Step};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Staging

/// The error this file's executors nack with, so a test can prove the very value comes back.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    policy: &'static str,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "refused under policy {}", self.policy)
    }
}

impl std::error::Error for Refusal {}

/// A runner with `executor`, storage recorded by `storage`, every event recorded by `events`,
/// and a marker `out` on `turn_output` writing to `log`.
fn runner_with(
    executor: impl Executor,
    storage: &RecordingStorage,
    events: &EventRecorder,
    log: &Log,
) -> TurnRunnerBuilder<SharedStorage, Arc<dyn Executor>> {
    TurnRunner::builder()
        .storage(storage.clone())
        .executor(executor)
        .observe(events.listener())
        .turn_output(log.marker("out"))
}

fn raw() -> RawTurnContext {
    RawTurnContext::new("conversation-1", "You are a test.")
}

async fn run(runner: &TurnRunner) -> TurnOutcome {
    within_deadline(runner.run(raw()))
        .await
        .expect("the raw turn context is valid")
}

/// A broken loop rule tends to spin or hang; fail loudly instead.
async fn within_deadline<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("the turn never finished")
}

fn message(id: &str, text: &str) -> Message {
    Message::assistant(id, text).expect("the message is valid")
}

fn text_of(message: &Message) -> String {
    message
        .content()
        .map(|content| content.render())
        .unwrap_or_default()
}

/// `id=text` for every message, in order.
fn described<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    messages
        .into_iter()
        .map(|message| format!("{}={}", message.id(), text_of(message)))
        .collect()
}

fn message_ids<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    messages
        .into_iter()
        .map(|message| message.id().to_owned())
        .collect()
}

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

/// `iterationStart 0`, `iterationEnd 0`, … for every iteration event, in order.
fn iterations(events: &EventRecorder) -> Vec<String> {
    events
        .events()
        .iter()
        .filter_map(|event| match event {
            Event::IterationStart { iteration, .. } | Event::IterationEnd { iteration, .. } => {
                Some(format!("{} {iteration}", event.name()))
            }
            _ => None,
        })
        .collect()
}

/// The `dispatchEnd` event's status, iteration count (iterations begun) and error.
fn dispatch_end(events: &EventRecorder) -> (DispatchStatus, u32, Option<TurnError>) {
    events
        .events()
        .into_iter()
        .find_map(|event| match event {
            Event::DispatchEnd {
                status,
                iterations,
                error,
                ..
            } => Some((status, iterations, error)),
            _ => None,
        })
        .expect("the dispatch ended")
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
// Which iterations complete: an executor ack versus an ack from dispatch_output

#[tokio::test]
async fn an_executor_ack_in_iteration_zero_ends_no_iteration_counts_one_and_skips_dispatch_output()
{
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = runner_with(executor.clone(), &RecordingStorage::new(), &events, &log)
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert_eq!(iterations(&events), ["iterationStart 0"]);
    let (status, completed, error) = dispatch_end(&events);
    assert_eq!((status, completed), (DispatchStatus::Ack, 1));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(log.joined(), "executor out-pre out-post");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn an_ack_from_dispatch_output_finishes_that_pipeline_and_completes_the_iteration() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::new([Step::Continue]).logging_to(log.clone());
    let acker = log.clone();
    let runner = runner_with(executor.clone(), &RecordingStorage::new(), &events, &log)
        .dispatch_output(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = acker.clone();
            Box::pin(async move {
                log.push("ack");
                ctx.ack()?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("c"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ACKED,
            TURN_END
        ]
    );
    assert_eq!(iterations(&events), ["iterationStart 0", "iterationEnd 0"]);
    assert_eq!(dispatch_end(&events).1, 1);
    assert_eq!(log.joined(), "executor ack c-pre c-post out-pre out-post");
    assert_eq!(
        executor.runs(),
        1,
        "the ack ends the loop: no second iteration"
    );
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn three_iterations_ending_in_an_executor_ack_run_dispatch_output_only_for_the_first_two() {
    let log = Log::new();
    let events = EventRecorder::new();
    let script = ScriptedExecutor::new([Step::Continue, Step::Continue, Step::Ack]);
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        let script = script.clone();
        Box::pin(async move {
            log.push(format!("executor@{}", ctx.iteration()));
            script.execute(ctx).await
        })
    });
    let output_seen = log.clone();
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log)
        .dispatch_output(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = output_seen.clone();
            Box::pin(async move {
                log.push(format!("output@{}", ctx.iteration()));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let _ = run(&runner).await;

    assert_eq!(
        iterations(&events),
        [
            "iterationStart 0",
            "iterationEnd 0",
            "iterationStart 1",
            "iterationEnd 1",
            "iterationStart 2"
        ]
    );
    assert_eq!(dispatch_end(&events).1, 3);
    assert_eq!(
        log.joined(),
        "executor@0 output@0 executor@1 output@1 executor@2 out-pre out-post"
    );
}

// ---------------------------------------------------------------------------------------------
// Signals inside dispatch_input

#[tokio::test]
async fn a_nack_inside_dispatch_input_lets_the_remaining_input_middleware_run_and_skips_the_executor()
 {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let nacker = log.clone();
    let checker = log.clone();
    let runner = runner_with(executor.clone(), &RecordingStorage::new(), &events, &log)
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = nacker.clone();
            Box::pin(async move {
                log.push("nack");
                ctx.nack(Refusal { policy: "pii" })?;
                let _ = next.run(ctx).await;
                log.push("nack-post");
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = checker.clone();
            Box::pin(async move {
                log.push(format!("c signalled={}", ctx.is_signalled()));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

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
    assert_eq!(log.joined(), "nack c signalled=true nack-post");
    assert_eq!(executor.runs(), 0);
    assert_eq!(dispatch_end(&events).1, 1);
    assert_eq!(
        *cause_of::<Refusal>(failed_with(&outcome)),
        Refusal { policy: "pii" }
    );
}

// ---------------------------------------------------------------------------------------------
// Nack propagation: the nack's own error reaches every report

#[tokio::test]
async fn a_nack_carries_its_own_error_to_dispatch_end_the_error_event_and_the_turn_status() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            ctx.nack(Refusal { policy: "medical" })?;
            let pending = ctx.nack_error().map(|error| error.code());
            log.push(format!(
                "signalled={} acked={} nack_error={pending:?}",
                ctx.is_signalled(),
                ctx.is_acked()
            ));
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log)
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

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
        log.joined(),
        "signalled=true acked=false nack_error=Some(Nacked)",
        "turn_output is skipped after a nack"
    );
    let expected = Refusal { policy: "medical" };
    let (status, completed, ended_with) = dispatch_end(&events);
    assert_eq!((status, completed), (DispatchStatus::Nack, 1));
    let ended_with = ended_with.expect("dispatchEnd carries the nack's error");
    assert_eq!(ended_with.code(), ErrorCode::Nacked);
    assert_eq!(*cause_of::<Refusal>(&ended_with), expected);
    let reported = &events.errors()[0];
    assert_eq!(reported.code(), ErrorCode::Nacked);
    assert_eq!(*cause_of::<Refusal>(reported), expected);
    assert!(
        format!("{reported:#}").contains("refused under policy medical"),
        "{reported:#}"
    );
    let failed = failed_with(&outcome);
    assert_eq!(failed.code(), ErrorCode::Nacked);
    assert_eq!(failed.code().as_str(), "E_LLM_EXECUTION_NACKED");
    assert_eq!(*cause_of::<Refusal>(failed), expected);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

// ---------------------------------------------------------------------------------------------
// Abort of the dispatch versus abort of the turn

#[tokio::test]
async fn aborting_the_dispatch_from_the_executor_discards_its_writes_turn_output_runs_and_the_outcome_says_why()
 {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            let id = format!("m{}", ctx.iteration());
            ctx.store_message(message(&id, "draft")).await?;
            if ctx.iteration() == 1 {
                ctx.abort("budget spent");
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log)
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(dispatch_end(&events).1, 2);
    assert_eq!(
        log.joined(),
        "dispatch_output-pre dispatch_output-post out-pre out-post",
        "the aborted iteration skips dispatch_output; the turn goes on to turn_output"
    );
    assert!(
        matches!(&outcome.status, TurnStatus::DispatchAborted(AbortReason::Requested(reason)) if reason == "budget spent"),
        "{:?}",
        outcome.status
    );
    assert!(!outcome.is_completed());
    assert!(outcome.reply().is_none());
    assert!(!outcome.context.is_aborted());
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    // Persisted at once and never rolled back; only the completed iteration reached the turn.
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn cancelling_the_dispatchs_own_token_in_dispatch_input_skips_the_rest_and_aborts_only_the_dispatch()
 {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let executed = Arc::new(Mutex::new(false));
    let executor_ran = Arc::clone(&executed);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        *executor_ran.lock().unwrap_or_else(PoisonError::into_inner) = true;
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log)
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                // The dispatch's token is made here, on first use, and cancelled by its holder.
                ctx.cancellation().cancel();
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(log.marker("skipped"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(log.entries(), ["out-pre", "out-post"]);
    assert!(!*executed.lock().unwrap_or_else(PoisonError::into_inner));
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(
        matches!(
            &outcome.status,
            TurnStatus::DispatchAborted(AbortReason::Cancelled)
        ),
        "{:?}",
        outcome.status
    );
    assert!(!outcome.context.is_aborted());
}

#[tokio::test]
async fn a_dispatch_token_asked_for_after_the_dispatch_was_aborted_is_already_cancelled() {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let seen = Arc::new(Mutex::new(None));
    let saw = Arc::clone(&seen);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let saw = Arc::clone(&saw);
        Box::pin(async move {
            ctx.abort("enough");
            *saw.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(ctx.cancellation().is_cancelled());
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(
        *seen.lock().unwrap_or_else(PoisonError::into_inner),
        Some(true)
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(!outcome.context.cancellation().is_cancelled());
}

#[tokio::test]
async fn cancelling_the_turns_token_mid_dispatch_aborts_the_dispatch_and_skips_turn_output() {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let turn_token: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let keeper = Arc::clone(&turn_token);
    let canceller = Arc::clone(&turn_token);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let token = canceller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::pin(async move {
            let id = format!("m{}", ctx.iteration());
            ctx.store_message(message(&id, "draft")).await?;
            if ctx.iteration() == 1 {
                token.expect("turn_input kept the token").cancel();
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log)
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            *keeper.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(ctx.cancellation().clone());
            Box::pin(async move {
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(
        log.joined(),
        "dispatch_output-pre dispatch_output-post",
        "turn_output is skipped when the turn itself is aborted"
    );
    assert!(outcome.context.is_aborted());
    assert!(
        matches!(outcome.status, TurnStatus::Aborted(AbortReason::Cancelled)),
        "{:?}",
        outcome.status
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

// ---------------------------------------------------------------------------------------------
// The write queue

/// How the second iteration (after a first that stored `m0` and completed) ends, having stored
/// `m1`.
#[derive(Clone, Copy, Debug)]
enum SecondIteration {
    Nack,
    Fail,
}

/// Runs a dispatch whose executor stores `m{iteration}` and then, in iteration 1, plays `ending`;
/// returns the outcome, the storage, and what the executor saw in its own collection.
async fn two_iterations_ending_in(
    ending: SecondIteration,
) -> (TurnOutcome, RecordingStorage, Vec<String>) {
    let storage = RecordingStorage::new();
    let seen = Log::new();
    let log = seen.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = log.clone();
        Box::pin(async move {
            let id = format!("m{}", ctx.iteration());
            ctx.store_message(message(&id, "draft")).await?;
            log.push(message_ids(&ctx.messages).join(","));
            match (ctx.iteration(), ending) {
                (0, _) => Ok(()),
                (_, SecondIteration::Nack) => Ok(ctx.nack(Refusal { policy: "tone" })?),
                (_, SecondIteration::Fail) => Err(Refusal { policy: "crash" }.into()),
            }
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    (run(&runner).await, storage, seen.entries())
}

#[tokio::test]
async fn a_nack_discards_the_iterations_writes_but_keeps_those_of_completed_iterations() {
    let (outcome, storage, seen) = two_iterations_ending_in(SecondIteration::Nack).await;

    assert_eq!(failed_with(&outcome).code(), ErrorCode::Nacked);
    assert_eq!(
        seen,
        ["m0", "m0,m1"],
        "the dispatch sees its writes at once"
    );
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn an_executor_error_discards_the_iterations_writes_but_keeps_those_of_completed_iterations()
{
    let (outcome, storage, seen) = two_iterations_ending_in(SecondIteration::Fail).await;

    assert_eq!(failed_with(&outcome).code(), ErrorCode::ExecutorError);
    assert_eq!(seen, ["m0", "m0,m1"]);
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn a_nack_from_dispatch_output_still_flushes_the_iterations_writes() {
    let storage = RecordingStorage::new();
    let events = EventRecorder::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.store_message(message("m0", "an answer")).await?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &Log::new())
        .dispatch_output(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                ctx.nack(Refusal { policy: "review" })?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner).await;

    // The iteration completed (its output pipeline ran to the end), so what it wrote stands;
    // the nack only ends the loop.
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
    assert_eq!(storage.message_ids(), ["m0"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn writes_made_before_an_ack_in_dispatch_input_reach_the_turn() {
    let storage = RecordingStorage::new();
    let executor = ScriptedExecutor::acking();
    let runner = runner_with(
        executor.clone(),
        &storage,
        &EventRecorder::new(),
        &Log::new(),
    )
    .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
        Box::pin(async move {
            ctx.store_message(message("canned", "a cached answer"))
                .await?;
            ctx.ack()?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    }))
    .build();
    let outcome = run(&runner).await;

    assert_eq!(executor.runs(), 0);
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(storage.message_ids(), ["canned"]);
    assert_eq!(message_ids(&outcome.context.messages), ["canned"]);
}

#[tokio::test]
async fn a_nack_in_dispatch_input_drops_the_iterations_writes_from_the_turn_but_not_storage() {
    let storage = RecordingStorage::new();
    let executor = ScriptedExecutor::acking();
    let runner = runner_with(
        executor.clone(),
        &storage,
        &EventRecorder::new(),
        &Log::new(),
    )
    .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
        Box::pin(async move {
            ctx.store_message(message("draft", "not sent")).await?;
            ctx.nack(Refusal { policy: "quota" })?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    }))
    .build();
    let outcome = run(&runner).await;

    assert_eq!(executor.runs(), 0);
    assert_eq!(failed_with(&outcome).code(), ErrorCode::Nacked);
    assert_eq!(storage.message_ids(), ["draft"]);
    assert!(message_ids(&outcome.context.messages).is_empty());
}

#[tokio::test]
async fn a_second_failure_in_one_dispatch_pipeline_walk_reaches_the_event_bus_after_the_first() {
    let events = EventRecorder::new();
    let runner = runner_with(
        ScriptedExecutor::acking(),
        &RecordingStorage::new(),
        &events,
        &Log::new(),
    )
    // The outer middleware fails in its post-step, after the inner one failed.
    .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
        Box::pin(async move {
            let _ = next.run(ctx).await;
            Err::<(), BoxError>(Refusal { policy: "outer" }.into())
        })
    }))
    .dispatch_input(from_fn(|_ctx: &mut DispatchContext, _next| {
        Box::pin(async move { Err::<(), BoxError>(Refusal { policy: "inner" }.into()) })
    }))
    .build();
    let outcome = run(&runner).await;

    let reported: Vec<String> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Error { error, .. } => Some(format!("{error:#}")),
            _ => None,
        })
        .collect();
    assert_eq!(reported.len(), 2, "{reported:#?}");
    assert!(reported[0].contains("policy inner"), "{reported:#?}");
    assert!(reported[1].contains("policy outer"), "{reported:#?}");
    assert!(
        reported
            .iter()
            .all(|line| line.starts_with("E_DISPATCH_PIPELINE_ERROR")),
        "{reported:#?}"
    );
    // The first failure stays the turn's error.
    assert!(
        format!("{:#}", failed_with(&outcome)).contains("policy inner"),
        "{:?}",
        outcome.status
    );
}

#[tokio::test]
async fn writes_of_every_iteration_reach_the_turn_exactly_once_and_in_order_on_ack() {
    let storage = RecordingStorage::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            let iteration = ctx.iteration();
            ctx.store_message(message(&format!("m{iteration}"), "text"))
                .await?;
            match iteration {
                0 => {
                    ctx.store_memory(Memory::new("memory-0", "likes tea", 0.9, 0.5)?)
                        .await?;
                }
                1 => {
                    let call = ToolCall::new("call-1", "forecast", json!({"city": "Oslo"}))?;
                    ctx.store_tool_call(call).await?;
                }
                _ => ctx.ack()?,
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    let outcome = run(&runner).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        storage.calls(),
        [
            "store_message m0",
            "store_memory memory-0",
            "store_message m1",
            "store_tool_call call-1",
            "store_message m2"
        ]
    );
    assert_eq!(storage.message_ids(), ["m0", "m1", "m2"]);
    let turn = &outcome.context;
    assert_eq!(message_ids(&turn.messages), ["m0", "m1", "m2"]);
    let memories: Vec<&str> = turn.memories.iter().map(Memory::id).collect();
    assert_eq!(memories, ["memory-0"]);
    let calls: Vec<&str> = turn.tool_calls.iter().map(ToolCall::id).collect();
    assert_eq!(calls, ["call-1"]);
}

#[tokio::test]
async fn a_mutate_in_a_later_iteration_replaces_the_flushed_record_where_it_stands() {
    let storage = RecordingStorage::new();
    let seen = Log::new();
    let log = seen.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = log.clone();
        Box::pin(async move {
            if ctx.iteration() == 0 {
                for id in ["a", "b", "c"] {
                    ctx.store_message(message(id, "first")).await?;
                }
                return Ok(());
            }
            ctx.mutate_message(message("b", "second")).await?;
            log.push(described(&ctx.messages).join(" "));
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    let outcome = run(&runner).await;

    let expected = ["a=first", "b=second", "c=first"];
    assert_eq!(seen.entries(), [expected.join(" ")], "in the dispatch");
    assert_eq!(
        described(&outcome.context.messages),
        expected,
        "in the turn"
    );
    assert_eq!(described(&storage.messages()), expected, "in the adapter");
}

#[tokio::test]
async fn a_delete_in_a_later_iteration_removes_the_flushed_record_from_the_turn() {
    let storage = RecordingStorage::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            match ctx.iteration() {
                0 => {
                    ctx.store_message(message("a", "keep?")).await?;
                    ctx.store_message(message("b", "keep")).await?;
                }
                1 => ctx.delete_message("a").await?,
                _ => ctx.ack()?,
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    let outcome = run(&runner).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(message_ids(&outcome.context.messages), ["b"]);
    assert_eq!(storage.message_ids(), ["b"]);
    assert_eq!(
        storage.calls(),
        ["store_message a", "store_message b", "delete_message a"]
    );
}

// ---------------------------------------------------------------------------------------------
// Double signal

#[tokio::test]
async fn a_second_signal_after_an_ack_is_refused_and_the_ack_stands() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            let handler_log = log.clone();
            ctx.on_ack(move |_| handler_log.push("on_ack"));
            ctx.ack()?;
            let again = ctx.ack().map_err(|error| error.code());
            let nack = ctx
                .nack(Refusal { policy: "late" })
                .map_err(|error| error.code());
            log.push(format!("{again:?} {nack:?} acked={}", ctx.is_acked()));
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(
        log.entries(),
        [
            "on_ack",
            "Err(AlreadySignalled) Err(AlreadySignalled) acked=true",
            "out-pre",
            "out-post"
        ]
    );
    assert_eq!(
        ErrorCode::AlreadySignalled.as_str(),
        "E_LLM_EXECUTION_ALREADY_SIGNALLED"
    );
    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn a_second_signal_after_a_nack_is_refused_and_the_first_nack_stands() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            ctx.nack(Refusal { policy: "first" })?;
            let ack = ctx.ack().map_err(|error| error.code());
            let again = ctx
                .nack(Refusal { policy: "second" })
                .map_err(|error| error.code());
            log.push(format!("{ack:?} {again:?}"));
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(log.joined(), "Err(AlreadySignalled) Err(AlreadySignalled)");
    let ended_with = dispatch_end(&events).2.expect("the nack's error");
    assert_eq!(
        *cause_of::<Refusal>(&ended_with),
        Refusal { policy: "first" }
    );
    assert_eq!(
        *cause_of::<Refusal>(failed_with(&outcome)),
        Refusal { policy: "first" }
    );
}

// ---------------------------------------------------------------------------------------------
// on_ack handlers

/// Runs a turn whose executor plays `script` (with a log to write to) and returns the log.
async fn logged_by<F>(script: F) -> Vec<String>
where
    F: for<'a> Fn(&'a mut DispatchContext, Log) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    let log = Log::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| script(ctx, seen.clone()));
    let runner = TurnRunner::builder()
        .storage(RecordingStorage::new())
        .executor(executor)
        .build();
    let _ = run(&runner).await;
    log.entries()
}

#[tokio::test]
async fn on_ack_handlers_run_in_registration_order_and_an_unsubscribed_one_does_not_run() {
    let logged = logged_by(|ctx: &mut DispatchContext, log: Log| {
        Box::pin(async move {
            for name in ["first", "second", "third"] {
                let handler_log = log.clone();
                let subscription = ctx.on_ack(move |_| handler_log.push(name));
                if name == "second" {
                    log.push(format!(
                        "unsubscribe second: {}",
                        subscription.unsubscribe()
                    ));
                }
            }
            let late = log.clone();
            let fourth = ctx.on_ack(move |_| late.push("fourth"));
            ctx.ack()?;
            log.push(format!(
                "unsubscribe after it ran: {}",
                fourth.unsubscribe()
            ));
            Ok(())
        })
    })
    .await;

    assert_eq!(
        logged,
        [
            "unsubscribe second: true",
            "first",
            "third",
            "fourth",
            "unsubscribe after it ran: false"
        ]
    );
}

#[tokio::test]
async fn on_ack_handlers_do_not_run_on_nack() {
    let logged = logged_by(|ctx: &mut DispatchContext, log: Log| {
        Box::pin(async move {
            let handler_log = log.clone();
            let subscription = ctx.on_ack(move |_| handler_log.push("handler"));
            ctx.nack(Refusal { policy: "none" })?;
            log.push(format!(
                "still registered after the nack: {}",
                subscription.unsubscribe()
            ));
            Ok(())
        })
    })
    .await;

    assert_eq!(logged, ["still registered after the nack: true"]);
}

#[tokio::test]
async fn a_panicking_on_ack_handler_does_not_stop_the_others_or_the_turn() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            let before = log.clone();
            ctx.on_ack(move |_| before.push("before"));
            ctx.on_ack(|_| panic!("an on_ack handler broke"));
            let after = log.clone();
            ctx.on_ack(move |ctx| after.push(format!("after, acked={}", ctx.is_acked())));
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(log.joined(), "before after, acked=true out-pre out-post");
    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

// ---------------------------------------------------------------------------------------------
// The iteration bound

#[tokio::test]
async fn a_silent_executor_is_nacked_after_exactly_max_iterations_completed_iterations() {
    let log = Log::new();
    let events = EventRecorder::new();
    let silent = ScriptedExecutor::new([Step::Continue; 10]).logging_to(log.clone());
    let runner = runner_with(silent.clone(), &RecordingStorage::new(), &events, &log)
        .max_iterations(3)
        .build();
    let outcome = run(&runner).await;

    let code = ErrorCode::IterationLimitExceeded;
    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            ITERATION_END,
            NACKED,
            error(code),
            TURN_END
        ]
    );
    assert_eq!(silent.runs(), 3);
    assert_eq!(log.joined(), "executor executor executor");
    let (status, completed, ended_with) = dispatch_end(&events);
    assert_eq!((status, completed), (DispatchStatus::Nack, 3));
    let ended_with = ended_with.expect("dispatchEnd carries the bound's error");
    assert_eq!(
        ended_with.code().as_str(),
        "E_DISPATCH_ITERATION_LIMIT_EXCEEDED"
    );
    assert!(
        ended_with.message().contains("3 iterations"),
        "{}",
        ended_with.message()
    );
    assert_eq!(failed_with(&outcome).code(), code);
}

// ---------------------------------------------------------------------------------------------
// Checksum counts

#[tokio::test]
async fn tool_call_count_counts_identical_calls_whatever_their_key_order() {
    let logged = logged_by(|ctx: &mut DispatchContext, log: Log| {
        Box::pin(async move {
            let first = ToolCall::new("c1", "forecast", json!({"city": "Oslo", "days": 2}))?;
            let reordered = ToolCall::new("c2", "forecast", json!({"days": 2, "city": "Oslo"}))?;
            let other = ToolCall::new("c3", "forecast", json!({"city": "Bergen", "days": 2}))?;
            let checksum = first.checksum().to_owned();
            let other_checksum = other.checksum().to_owned();
            let counts = |ctx: &DispatchContext| {
                format!(
                    "{} {} {}",
                    ctx.tool_call_count(&checksum),
                    ctx.tool_call_count(&other_checksum),
                    ctx.tool_call_count("no such checksum")
                )
            };
            match ctx.iteration() {
                0 => {
                    log.push(format!("before: {}", counts(ctx)));
                    for call in [first, reordered, other] {
                        ctx.store_tool_call(call).await?;
                    }
                    log.push(format!("stored: {}", counts(ctx)));
                }
                _ => {
                    log.push(format!("next iteration: {}", counts(ctx)));
                    ctx.delete_tool_call("c2").await?;
                    log.push(format!("after a delete: {}", counts(ctx)));
                    let moved =
                        ToolCall::new("c1", "forecast", json!({"days": 2, "city": "Bergen"}))?;
                    ctx.mutate_tool_call(moved).await?;
                    log.push(format!("after a mutate: {}", counts(ctx)));
                    ctx.ack()?;
                }
            }
            Ok(())
        })
    })
    .await;

    assert_eq!(
        logged,
        [
            "before: 0 0 0",
            "stored: 2 1 0",
            "next iteration: 2 1 0",
            "after a delete: 1 1 0",
            "after a mutate: 0 2 0"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Executor helpers (spec 3.10)

/// Runs a turn whose executor plays `script`, recording every event; returns the events and
/// the outcome.
async fn recorded_by<F>(script: F) -> (EventRecorder, TurnOutcome)
where
    F: for<'a> Fn(&'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(RecordingStorage::new())
        .executor(executor_fn(script))
        .observe(events.listener())
        .build();
    let outcome = run(&runner).await;
    (events, outcome)
}

fn streamed(events: &EventRecorder, thoughts: bool) -> Vec<StreamedContent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Message(content) if !thoughts => Some(content),
            Event::Thought(content) if thoughts => Some(content),
            _ => None,
        })
        .collect()
}

/// `id full|delta|complete` for each chunk, `+done` when `completed_at` is set.
fn chunks(contents: &[StreamedContent]) -> Vec<String> {
    contents
        .iter()
        .map(|content| {
            format!(
                "{} {}|{}|{}{}",
                content.id,
                content.full,
                content.delta,
                content.is_complete,
                if content.completed_at.is_some() {
                    "+done"
                } else {
                    ""
                }
            )
        })
        .collect()
}

#[tokio::test]
async fn report_message_accumulates_per_id_and_refuses_chunks_after_completion() {
    let refusals: Arc<Mutex<Vec<Result<StreamedContent, ReportError>>>> = Arc::default();
    let kept = Arc::clone(&refusals);
    let (events, outcome) = recorded_by(move |ctx: &mut DispatchContext| {
        let kept = Arc::clone(&kept);
        Box::pin(async move {
            if ctx.iteration() == 0 {
                ctx.report_message("m1", "Hel", false)?;
                ctx.report_message("m2", "Hi", false)?;
                ctx.report_message("m1", "lo", true)?;
                let late = ctx.report_message("m1", "!", false);
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(late);
                ctx.report_message("m2", " there", true)?;
                return Ok(());
            }
            // A stream's state lives as long as the dispatch, across iterations.
            let reopened = ctx.report_message("m2", "again", false);
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(reopened);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let contents = streamed(&events, false);
    assert_eq!(
        chunks(&contents),
        [
            "m1 Hel|Hel|false",
            "m2 Hi|Hi|false",
            "m1 Hello|lo|true+done",
            "m2 Hi there| there|true+done"
        ]
    );
    assert_eq!(
        contents[2].created_at, contents[0].created_at,
        "created_at is the first chunk's"
    );
    let refusals = refusals.lock().unwrap_or_else(PoisonError::into_inner);
    assert_eq!(
        *refusals,
        [
            Err(ReportError::StreamComplete { id: "m1".into() }),
            Err(ReportError::StreamComplete { id: "m2".into() })
        ]
    );
    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "message",
            "message",
            "message",
            "message",
            "iterationEnd",
            "iterationStart",
            "dispatchEnd",
            "turnEnd"
        ],
        "a refused chunk emits nothing"
    );
}

#[tokio::test]
async fn a_refused_chunk_returned_with_question_mark_ends_the_dispatch_as_an_executor_error() {
    let (events, outcome) = recorded_by(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.report_message("m1", "done.", true)?;
            ctx.report_message("m1", " and more", false)?;
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ("message", ""),
            NACKED,
            error(ErrorCode::ExecutorError),
            TURN_END
        ]
    );
    let failed = failed_with(&outcome);
    assert_eq!(failed.code().as_str(), "E_LLM_EXECUTION_EXECUTOR_ERROR");
    assert!(
        format!("{failed:#}").contains("already complete"),
        "{failed:#}"
    );
    assert_eq!(
        *cause_of::<ReportError>(failed),
        ReportError::StreamComplete { id: "m1".into() }
    );
}

#[tokio::test]
async fn report_thought_accumulates_apart_from_messages_with_the_same_id() {
    let refused: Arc<Mutex<Option<ReportError>>> = Arc::default();
    let kept = Arc::clone(&refused);
    let (events, _) = recorded_by(move |ctx: &mut DispatchContext| {
        let kept = Arc::clone(&kept);
        Box::pin(async move {
            ctx.report_thought("x", "let me ", false)?;
            ctx.report_thought("x", "think", true)?;
            // The same id in the message stream is another stream.
            ctx.report_message("x", "answer", true)?;
            *kept.lock().unwrap_or_else(PoisonError::into_inner) =
                ctx.report_thought("x", "more", false).err();
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        chunks(&streamed(&events, true)),
        ["x let me |let me |false", "x let me think|think|true+done"]
    );
    assert_eq!(
        chunks(&streamed(&events, false)),
        ["x answer|answer|true+done"]
    );
    assert_eq!(
        *refused.lock().unwrap_or_else(PoisonError::into_inner),
        Some(ReportError::StreamComplete { id: "x".into() })
    );
}

#[tokio::test]
async fn report_tool_call_merges_updates_and_computes_the_checksum_once_tool_and_args_are_known() {
    let refused: Arc<Mutex<Option<ReportError>>> = Arc::default();
    let kept = Arc::clone(&refused);
    let (events, _) = recorded_by(move |ctx: &mut DispatchContext| {
        let kept = Arc::clone(&kept);
        Box::pin(async move {
            ctx.report_tool_call(
                "t1",
                ToolCallUpdate::new().args(json!({"days": 2, "city": "Oslo"})),
            )?;
            ctx.report_tool_call("t1", ToolCallUpdate::new().tool("forecast"))?;
            ctx.report_tool_call(
                "t1",
                ToolCallUpdate::new().results(json!("sunny")).complete(),
            )?;
            *kept.lock().unwrap_or_else(PoisonError::into_inner) = ctx
                .report_tool_call("t1", ToolCallUpdate::new().error())
                .err();
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    let updates: Vec<ToolCallContent> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolCall(content) => Some(content),
            _ => None,
        })
        .collect();
    let summary: Vec<_> = updates
        .iter()
        .map(|update| {
            (
                update.tool.as_str(),
                &update.args,
                update.checksum.as_str(),
                update.is_complete,
                update.results.as_ref(),
                update.completed_at.is_some(),
            )
        })
        .collect();
    let args = json!({"city": "Oslo", "days": 2});
    let Value::Object(map) = &args else {
        unreachable!("the arguments are an object")
    };
    let checksum = tool_call_checksum("forecast", map);
    let sunny = json!("sunny");
    assert_eq!(
        summary,
        [
            ("", &args, "", false, None, false),
            ("forecast", &args, checksum.as_str(), false, None, false),
            (
                "forecast",
                &args,
                checksum.as_str(),
                true,
                Some(&sunny),
                true
            )
        ]
    );
    assert!(
        updates
            .iter()
            .all(|update| update.id == "t1" && !update.is_error)
    );
    let stored = ToolCall::new("t1", "forecast", json!({"days": 2, "city": "Oslo"}))
        .expect("the call is valid");
    assert_eq!(
        stored.checksum(),
        checksum,
        "the reported checksum is the one the stored call carries"
    );
    assert_eq!(
        *refused.lock().unwrap_or_else(PoisonError::into_inner),
        Some(ReportError::ToolCallComplete { id: "t1".into() })
    );
}

#[tokio::test]
async fn log_emits_structured_records_tagged_with_the_dispatch_and_iteration() {
    let (events, _) = recorded_by(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            if ctx.iteration() == 0 {
                ctx.log(
                    LogLevel::Warn,
                    "retry",
                    "the model timed out",
                    Some(json!({"attempt": 2})),
                );
                ctx.log(LogLevel::Debug, "prompt", "prompt built", None);
                return Ok(());
            }
            ctx.log(LogLevel::Info, "answer", "answered", None);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "log",
            "log",
            "iterationEnd",
            "iterationStart",
            "log",
            "dispatchEnd",
            "turnEnd"
        ]
    );
    let recorded = events.events();
    let dispatch_id = recorded
        .iter()
        .find_map(|event| match event {
            Event::DispatchStart { dispatch_id, .. } => Some(dispatch_id.clone()),
            _ => None,
        })
        .expect("the dispatch started");
    let records: Vec<_> = recorded
        .iter()
        .filter_map(|event| match event {
            Event::Log(record) => Some(record),
            _ => None,
        })
        .collect();
    assert!(
        records
            .iter()
            .all(|record| record.dispatch_id == dispatch_id)
    );
    let summary: Vec<_> = records
        .iter()
        .map(|record| {
            (
                record.iteration,
                record.level.as_str(),
                record.kind.as_str(),
                record.message.as_str(),
                record.payload.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                0,
                "warn",
                "retry",
                "the model timed out",
                Some(json!({"attempt": 2}))
            ),
            (0, "debug", "prompt", "prompt built", None),
            (1, "info", "answer", "answered", None)
        ]
    );
}

#[tokio::test]
async fn report_generation_stats_emits_generation_stats_inside_the_dispatch() {
    let mut stats = GenerationStats::new();
    stats.prompt_tokens = Some(12);
    stats.completion_tokens = Some(30);
    stats.total_tokens = Some(42);
    stats.finish_reason = Some("stop".to_owned());
    stats.model = Some("test-model".to_owned());
    let reported = stats.clone();
    let (events, _) = recorded_by(move |ctx: &mut DispatchContext| {
        let stats = reported.clone();
        Box::pin(async move {
            ctx.report_generation_stats(stats);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "generationStats",
            "dispatchEnd",
            "turnEnd"
        ]
    );
    let emitted = events.events().into_iter().find_map(|event| match event {
        Event::GenerationStats {
            iteration, stats, ..
        } => Some((iteration, stats)),
        _ => None,
    });
    assert_eq!(emitted, Some((0, stats)));
}
