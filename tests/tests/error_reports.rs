//! How failures read, as a specification: a failed turn's error says its cause once, in each
//! format; a failure is logged once, not once by adk and again by the caller who reports it;
//! the tool error the model reads names the tool without internal ids and lists every allowed
//! value of an `enum` (bounded).

use std::error::Error as _;
use std::sync::{Arc, Mutex};

use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
use adk::pipeline::from_fn;
use adk::prelude::*;
use adk::primitives::{ENUM_LISTING_CHARS, ENUM_VALUES_LISTED, ToolCall, ToolError};
use serde_json::json;

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

/// The log of a turn `runner` runs under `filter`, and the turn's error.
fn logged_failure(runner: &TurnRunner, filter: &str) -> (String, TurnError) {
    adk_integration_tests::captured_log(filter, || {
        let outcome = runtime()
            .block_on(runner.run(RawTurnContext::new("c", "p").user_message("hi")))
            .unwrap();
        outcome.into_result().unwrap_err()
    })
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

/// What the model reads when a tool call fails: the executor reports the error's text.
fn model_facing_error(tool: Tool, args: serde_json::Value) -> String {
    let seen: Arc<Mutex<Option<String>>> = Arc::default();
    let filled = Arc::clone(&seen);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let filled = Arc::clone(&filled);
        let args = args.clone();
        Box::pin(async move {
            let call = ToolCall::new("01a212aa/dispatch/call-0", "calculator", args)?;
            let error = ctx.execute_tool(&call).await.unwrap_err();
            *filled.lock().unwrap() = Some(error.to_string());
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor)
        .tool(tool)
        .build();
    let outcome = runtime()
        .block_on(runner.run(RawTurnContext::new("c", "p").user_message("hi")))
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    seen.lock().unwrap().take().expect("the executor ran")
}

fn calculator_with_units(units: &[String]) -> Tool {
    Tool::builder("calculator")
        .description("Converts.")
        .input_schema(json!({
            "type": "object",
            "properties": {"unit": {"enum": units}},
            "required": ["unit"],
        }))
        .handler(|_, _| async { Ok("done") })
        .build()
        .unwrap()
}

#[test]
fn the_tool_error_the_model_reads_names_the_tool_without_the_call_id() {
    let failing = Tool::builder("calculator")
        .description("Adds.")
        .handler(|_, _| async {
            Err::<String, _>(ToolError::new(std::io::Error::other("division by zero")))
        })
        .build()
        .unwrap();
    let text = model_facing_error(failing, json!({}));
    assert!(text.contains("\"calculator\""), "{text}");
    assert!(text.contains("division by zero"), "{text}");
    assert!(!text.contains("01a212aa"), "{text}");
    assert!(!text.contains("call-0"), "{text}");
}

#[test]
fn an_enum_violation_lists_every_allowed_value() {
    let units: Vec<String> = ["km", "mi", "m", "ft", "yd", "nmi"]
        .map(String::from)
        .to_vec();
    let text = model_facing_error(calculator_with_units(&units), json!({"unit": "kelvin"}));
    assert!(
        text.contains(r#""kelvin" is not one of "km", "mi", "m", "ft", "yd" or "nmi""#),
        "{text}"
    );
    assert!(!text.contains("candidates"), "{text}");
}

#[test]
fn an_enum_violation_with_too_many_values_lists_a_bounded_number_and_says_how_many_more() {
    let units: Vec<String> = (0..ENUM_VALUES_LISTED + 5)
        .map(|unit| format!("u{unit}"))
        .collect();
    let text = model_facing_error(calculator_with_units(&units), json!({"unit": "kelvin"}));
    let listed = format!(r#""u{}""#, ENUM_VALUES_LISTED - 1);
    assert!(text.contains(&listed), "{text}");
    assert!(
        !text.contains(&format!(r#""u{ENUM_VALUES_LISTED}""#)),
        "{text}"
    );
    assert!(text.contains("and 5 more"), "{text}");

    let long: Vec<String> = (0..ENUM_VALUES_LISTED)
        .map(|unit| format!("{unit}{}", "x".repeat(60)))
        .collect();
    let text = model_facing_error(calculator_with_units(&long), json!({"unit": "kelvin"}));
    let violation = text
        .split("is not one of ")
        .nth(1)
        .expect("the enum violation");
    let values = violation.split(" and ").next().unwrap();
    assert!(values.len() <= ENUM_LISTING_CHARS, "{}", values.len());
    assert!(text.contains(" more"), "{text}");
}
