//! How failures read, as a specification: a failed turn's error says its cause once, in each
//! format; a failure is logged once, not once by adk and again by the caller who reports it.

use std::error::Error as _;
use std::io::Write;
use std::sync::{Arc, Mutex};

use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
use adk::pipeline::from_fn;
use adk::prelude::*;

const REASON: &str = "the turn spent its budget of 3 model calls";

fn nacking_runner() -> TurnRunner {
    let nacking = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.nack(REASON)?;
            Ok::<(), BoxError>(())
        })
    });
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(nacking)
        .build()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_turn_errors_display_says_its_cause_once() {
    let outcome = runtime()
        .block_on(nacking_runner().run(RawTurnContext::new("c", "p").user_message("hi")))
        .unwrap();
    let error = outcome.into_result().unwrap_err();

    // `{}`: the code and what failed; the cause is the source, not copied into the message.
    assert_eq!(
        error.to_string(),
        "E_LLM_EXECUTION_NACKED: the dispatch was nacked"
    );
    assert_eq!(
        error.source().map(ToString::to_string).as_deref(),
        Some(REASON)
    );
    // `{:#}`: one sentence with the cause, once.
    assert_eq!(
        format!("{error:#}"),
        format!("E_LLM_EXECUTION_NACKED: the dispatch was nacked: {REASON}")
    );
    // `{:?}`, what `main` returning the error prints: a report, not the struct, cause once.
    let debug = format!("{error:?}");
    assert_eq!(
        debug,
        format!("E_LLM_EXECUTION_NACKED: the dispatch was nacked\n\nCaused by:\n    {REASON}")
    );
    assert_eq!(debug.matches(REASON).count(), 1, "{debug}");
}

#[test]
fn an_executor_failure_reads_as_one_sentence_and_keeps_its_cause_downcastable() {
    let failing = executor_fn(|_ctx: &mut DispatchContext| {
        Box::pin(async { Err::<(), BoxError>(std::io::Error::other("the model is down").into()) })
    });
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(failing)
        .build();
    let outcome = runtime()
        .block_on(runner.run(RawTurnContext::new("c", "p").user_message("hi")))
        .unwrap();
    let error = outcome.into_result().unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "E_LLM_EXECUTION_EXECUTOR_ERROR: the executor failed: the model is down"
    );
    assert!(
        error
            .cause()
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .is_some(),
        "{error:#?}"
    );
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log of a turn `runner` runs under `filter`, and the turn's error.
fn logged_failure(runner: &TurnRunner, filter: &str) -> (String, TurnError) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .finish();
    let error = {
        let _guard = tracing_subscriber::util::SubscriberInitExt::set_default(subscriber);
        let outcome = runtime()
            .block_on(runner.run(RawTurnContext::new("c", "p").user_message("hi")))
            .unwrap();
        outcome.into_result().unwrap_err()
    };
    let bytes = captured.0.lock().unwrap().clone();
    (String::from_utf8(bytes).unwrap(), error)
}

#[test]
fn a_failed_turn_is_not_also_logged_as_a_warning_since_the_caller_receives_it() {
    let (log, error) = logged_failure(&nacking_runner(), "adk=warn");
    assert_eq!(error.code(), ErrorCode::Nacked);
    assert!(!log.contains(REASON), "logged as well as returned:\n{log}");
}

#[test]
fn a_failed_turn_is_logged_once_at_debug_with_its_cause_once() {
    let (log, _) = logged_failure(&nacking_runner(), "adk=debug");
    let lines: Vec<&str> = log.lines().filter(|line| line.contains(REASON)).collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert_eq!(lines[0].matches(REASON).count(), 1, "{}", lines[0]);
    assert_eq!(
        lines[0].matches("E_LLM_EXECUTION_NACKED").count(),
        1,
        "{}",
        lines[0]
    );
}

#[test]
fn an_error_after_the_turns_first_is_still_warned_about() {
    // The inner middleware fails (the turn's error); the outer one fails in its post-step too,
    // an error the caller does not receive from the outcome.
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                let _ = next.run(ctx).await;
                Err::<(), BoxError>("second failure".into())
            })
        }))
        .dispatch_input(from_fn(|_ctx: &mut DispatchContext, _next| {
            Box::pin(async move { Err::<(), BoxError>("first failure".into()) })
        }))
        .build();
    let (log, error) = logged_failure(&runner, "adk=warn");
    assert_eq!(error.code(), ErrorCode::DispatchPipelineError, "{error:#}");
    assert!(format!("{error:#}").contains("first failure"), "{error:#}");
    assert!(!log.contains("first failure"), "{log}");
    let warned: Vec<&str> = log.lines().filter(|line| line.contains("WARN")).collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(warned[0].contains("second failure"), "{}", warned[0]);
}
