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

/// Abort of the dispatch versus abort of the turn.
#[path = "dispatch_loop/abort.rs"]
mod abort;
/// The iteration bound and checksum counts.
#[path = "dispatch_loop/bounds.rs"]
mod bounds;
/// Executor helpers (spec 3.10).
#[path = "dispatch_loop/executor_helpers.rs"]
mod executor_helpers;
/// Which iterations complete (an executor ack versus an ack from dispatch_output), signals inside dispatch_input, and how a nack's own error reaches every report.
#[path = "dispatch_loop/iterations.rs"]
mod iterations;
/// Double signals and on_ack handlers.
#[path = "dispatch_loop/signals.rs"]
mod signals;
/// The write queue.
#[path = "dispatch_loop/write_queue.rs"]
mod write_queue;

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
