//! Tools: arguments checked against the schema before the handler runs, execution events around
//! it, failures and panics as typed errors, typed arguments, lookup among the tools a dispatch
//! offers, the registry's operations, and a handler reaching storage through its invocation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ToolExecutionError, executor_fn};
use adk::events::{ErrorCode, Event};
use adk::pipeline::{BoxError, BoxFuture};
use adk::primitives::{
    CollisionPolicy, HandlerFailed, Media, MediaKind, Tool, ToolCall, ToolError, ToolInvocation,
    ToolOutput, ToolRegistry, tool_call_checksum,
};
use adk::runner::TurnStatus;
use adk::storage::{NoopStorage, SharedStorage, StorageAdapter, StorageContext};
use serde::Deserialize;
use serde_json::{Value, json};

/// Storage through the invocation: a tool handler stores bytes through its invocation's storage context.
#[path = "tools/invocation_storage.rs"]
mod invocation_storage;
/// Ephemeral tools are pruned when the dispatch is acknowledged, and survive a nack.
#[path = "tools/pruned_on_ack.rs"]
mod pruned_on_ack;
/// ToolRegistry operations (spec 5.10) beyond the unit tests in primitives/tool.rs.
#[path = "tools/registry.rs"]
mod registry;

// The registry tests build ephemeral tools too.
use pruned_on_ack::ephemeral;

// ---------------------------------------------------------------------------------------------
// Harness: one turn whose executor runs `script` once and acks; every event is recorded.

type Outcome = Result<ToolOutput, ToolExecutionError>;

struct Run {
    events: Vec<Event>,
    outcome: adk::TurnOutcome,
}

impl Run {
    fn names(&self) -> Vec<&'static str> {
        self.events.iter().map(Event::name).collect()
    }

    fn execution_events(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|event| {
                matches!(
                    event,
                    Event::ToolExecutionStart { .. } | Event::ToolExecutionEnd { .. }
                )
            })
            .collect()
    }
}

async fn run_turn<Script>(tools: Vec<Tool>, storage: SharedStorage, script: Script) -> Run
where
    Script: for<'a> Fn(&'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    let events = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&events);
    let runner = TurnRunner::builder()
        .shared_storage(storage)
        .tools(tools)
        .observe(move |event| recorded.lock().unwrap().push(event.clone()))
        .executor(executor_fn(script))
        .build();
    let outcome = runner
        .run(RawTurnContext::new(
            "conversation-1",
            "You forecast weather.",
        ))
        .await
        .unwrap();
    let events = events.lock().unwrap().clone();
    Run { events, outcome }
}

/// Runs one turn whose executor executes `call` and acks; returns the run and what the tool
/// call produced.
async fn execute_once(tools: Vec<Tool>, call: ToolCall) -> (Run, Outcome) {
    let slot: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let run = run_turn(tools, SharedStorage::new(NoopStorage::new()), move |ctx| {
        let filled = Arc::clone(&filled);
        let call = call.clone();
        Box::pin(async move {
            let outcome = ctx.execute_tool(&call).await;
            *filled.lock().unwrap() = Some(outcome);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;
    let outcome = slot.lock().unwrap().take().expect("the executor ran");
    (run, outcome)
}

fn forecast(calls: Arc<AtomicUsize>) -> Tool {
    Tool::builder("forecast")
        .description("Weather forecast for a city.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7}
            },
            "required": ["city"]
        }))
        .handler(move |args, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("{}: sunny", args["city"].as_str().unwrap_or("?"))) }
        })
        .build()
        .unwrap()
}

fn plain(name: &str) -> Tool {
    Tool::builder(name)
        .description("demo")
        .handler(|_, _| async { Ok("ok") })
        .build()
        .unwrap()
}

fn call(tool: &str, args: Value) -> ToolCall {
    ToolCall::new("call-1", tool, args).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Argument validation

#[tokio::test]
async fn arguments_missing_a_required_field_are_refused_before_the_handler_and_without_events() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (run, outcome) = execute_once(
        vec![forecast(Arc::clone(&calls))],
        call("forecast", json!({"days": 2})),
    )
    .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidToolArgs);
    assert_eq!(error.code().as_str(), "E_INVALID_TOOL_ARGS");
    let ToolExecutionError::InvalidArgs(invalid) = &error else {
        panic!("expected InvalidArgs, got {error:?}");
    };
    assert_eq!(invalid.tool(), "forecast");
    assert_eq!(invalid.violations().len(), 1);
    assert_eq!(invalid.violations()[0].pointer(), "");
    assert_eq!(invalid.violations()[0].schema_pointer(), "/required");
    assert!(
        error
            .to_string()
            .contains("\"city\" is a required property")
    );
    assert_eq!(invalid.args(), &json!({"days": 2}));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(run.execution_events().is_empty());
}

#[tokio::test]
async fn arguments_of_the_wrong_type_are_refused_listing_every_violation_with_its_pointer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (run, outcome) = execute_once(
        vec![forecast(Arc::clone(&calls))],
        call("forecast", json!({"city": 59, "days": "three"})),
    )
    .await;
    let ToolExecutionError::InvalidArgs(invalid) = outcome.unwrap_err() else {
        panic!("expected InvalidArgs");
    };
    let pointers: Vec<&str> = invalid
        .violations()
        .iter()
        .map(|violation| violation.pointer())
        .collect();
    assert_eq!(pointers, ["/city", "/days"]);
    let text = invalid.to_string();
    assert!(text.contains("2 violations"), "{text}");
    assert!(
        text.contains("at /city: 59 is not of type \"string\""),
        "{text}"
    );
    assert!(
        text.contains("at /days: \"three\" is not of type \"integer\""),
        "{text}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(run.execution_events().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Execution events and failures

#[tokio::test]
async fn execution_events_bracket_the_handler_and_carry_the_checksum_as_call_id() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let handler_log = Arc::clone(&log);
    let tool = Tool::builder("forecast")
        .description("d")
        .handler(move |_, _| {
            handler_log.lock().unwrap().push("handler".to_owned());
            async { Ok("sunny") }
        })
        .build()
        .unwrap();
    let tool_call = call("forecast", json!({"days": 2, "city": "Oslo"}));
    let events = Arc::clone(&log);
    let executed = tool_call.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(tool)
        .observe(move |event| events.lock().unwrap().push(event.name().to_owned()))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let executed = executed.clone();
            Box::pin(async move {
                ctx.execute_tool(&executed).await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let _ = runner.run(RawTurnContext::new("c", "p")).await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "toolExecutionStart",
            "handler",
            "toolExecutionEnd",
            "dispatchEnd",
            "turnEnd"
        ]
    );

    let (run, outcome) = execute_once(
        vec![plain("forecast")],
        call("forecast", json!({"days": 2, "city": "Oslo"})),
    )
    .await;
    assert!(matches!(outcome, Ok(ToolOutput::Text(ref text)) if text == "ok"));
    let dispatch = run
        .events
        .iter()
        .find_map(|event| match event {
            Event::DispatchStart { dispatch_id, .. } => Some(dispatch_id.clone()),
            _ => None,
        })
        .unwrap();
    let [start, end] = run.execution_events()[..] else {
        panic!("expected two execution events");
    };
    let Event::ToolExecutionStart {
        turn_id,
        dispatch_id,
        tool_name,
        tool_call_id,
        checksum,
        args,
        ..
    } = start
    else {
        panic!("expected ToolExecutionStart first, got {start:?}");
    };
    assert_eq!(turn_id, run.outcome.context.turn_id());
    assert_eq!(dispatch_id, &dispatch);
    assert_eq!(tool_name, "forecast");
    assert_eq!(tool_call_id, tool_call.id());
    assert_eq!(checksum, tool_call.checksum());
    assert_eq!(checksum, &tool_call_checksum("forecast", tool_call.args()));
    assert_eq!(args, &json!({"days": 2, "city": "Oslo"}));
    let Event::ToolExecutionEnd {
        tool_call_id: end_tool_call_id,
        checksum: end_checksum,
        is_error,
        started_at,
        ended_at,
        ..
    } = end
    else {
        panic!("expected ToolExecutionEnd second, got {end:?}");
    };
    assert_eq!(end_tool_call_id, tool_call_id);
    assert_eq!(end_checksum, checksum);
    assert!(!is_error);
    assert!(ended_at >= started_at);
}

#[tokio::test]
async fn a_failing_handler_is_a_downstream_error_with_its_cause_and_ends_with_is_error() {
    let tool = Tool::builder("forecast")
        .description("d")
        .handler(|_, _| async {
            Err::<String, _>(ToolError::new(std::io::Error::other(
                "weather service down",
            )))
        })
        .build()
        .unwrap();
    let (run, outcome) = execute_once(vec![tool], call("forecast", json!({}))).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolDownstreamError);
    assert_eq!(error.tool(), "forecast");
    assert!(error.to_string().contains("weather service down"));
    let tool_error = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<HandlerFailed>())
        .expect("the handler's failure is the source");
    let cause = std::error::Error::source(tool_error)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .expect("the handler's own error is reachable");
    assert_eq!(cause.to_string(), "weather service down");
    assert_eq!(
        run.names()
            .into_iter()
            .filter(|name| name.starts_with("toolExecution"))
            .collect::<Vec<_>>(),
        ["toolExecutionStart", "toolExecutionEnd"]
    );
    assert!(matches!(
        run.execution_events()[1],
        Event::ToolExecutionEnd { is_error: true, .. }
    ));
}

#[tokio::test]
async fn a_panicking_handler_is_contained_as_a_downstream_error_and_ends_with_is_error() {
    let tool = Tool::builder("forecast")
        .description("d")
        .handler(|_, _| async {
            if true {
                panic!("forecast model exploded");
            }
            Ok("unreachable")
        })
        .build()
        .unwrap();
    let (run, outcome) = execute_once(vec![tool], call("forecast", json!({}))).await;
    let error = outcome.unwrap_err();
    assert!(matches!(error, ToolExecutionError::Panicked { .. }));
    assert_eq!(error.code(), ErrorCode::ToolDownstreamError);
    assert!(error.to_string().contains("forecast model exploded"));
    assert!(matches!(
        run.execution_events()[..],
        [
            Event::ToolExecutionStart { .. },
            Event::ToolExecutionEnd { is_error: true, .. }
        ]
    ));
    assert!(
        run.outcome.is_completed(),
        "the turn went on after the panic"
    );
}

#[tokio::test]
async fn a_handler_panicking_before_it_returns_its_future_is_contained_too() {
    let tool = Tool::builder("forecast")
        .description("d")
        .handler(|_, _| -> std::future::Ready<Result<String, ToolError>> {
            panic!("panicked while building the future")
        })
        .build()
        .unwrap();
    let (run, outcome) = execute_once(vec![tool], call("forecast", json!({}))).await;
    assert_eq!(outcome.unwrap_err().code(), ErrorCode::ToolDownstreamError);
    assert_eq!(run.execution_events().len(), 2);
}

#[tokio::test]
async fn a_tool_execution_error_returned_with_question_mark_fails_the_executor() {
    let tool = Tool::builder("forecast")
        .description("d")
        .handler(|_, _| async { Err::<String, _>(ToolError::new("no such city")) })
        .build()
        .unwrap();
    let tool_call = call("forecast", json!({}));
    let run = run_turn(
        vec![tool],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let tool_call = tool_call.clone();
            Box::pin(async move {
                ctx.execute_tool(&tool_call).await?;
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    let TurnStatus::Failed(error) = &run.outcome.status else {
        panic!("expected a failed turn, got {:?}", run.outcome.status);
    };
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    let source = error
        .cause()
        .and_then(|cause| cause.downcast_ref::<ToolExecutionError>())
        .expect("the tool execution error is the executor error's cause");
    assert_eq!(source.code(), ErrorCode::ToolDownstreamError);
}

#[tokio::test]
async fn the_invocation_carries_the_call_dispatch_iteration_and_checksum() {
    let seen = Arc::new(Mutex::new(None::<ToolInvocation>));
    let recorder = Arc::clone(&seen);
    let tool = Tool::builder("forecast")
        .description("d")
        .meta(json!({"unit": "C"}).as_object().cloned().unwrap())
        .handler(move |_, invocation| {
            *recorder.lock().unwrap() = Some(invocation);
            async { Ok("ok") }
        })
        .build()
        .unwrap();
    let tool_call = call("forecast", json!({"city": "Oslo"}));
    let dispatch = Arc::new(Mutex::new(String::new()));
    let dispatch_seen = Arc::clone(&dispatch);
    let executed = tool_call.clone();
    run_turn(
        vec![tool],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let executed = executed.clone();
            let dispatch_seen = Arc::clone(&dispatch_seen);
            Box::pin(async move {
                *dispatch_seen.lock().unwrap() = ctx.dispatch_id().to_owned();
                ctx.execute_tool(&executed).await?;
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    let invocation = seen.lock().unwrap().clone().unwrap();
    assert_eq!(invocation.tool_name(), "forecast");
    assert_eq!(invocation.call_id(), "call-1");
    assert_eq!(invocation.checksum(), Some(tool_call.checksum()));
    assert_eq!(
        invocation.dispatch_id(),
        Some(dispatch.lock().unwrap().as_str())
    );
    assert_eq!(invocation.iteration(), Some(0));
    assert_eq!(invocation.meta()["unit"], "C");
    assert_eq!(
        invocation.storage_context().conversation_id().as_str(),
        "conversation-1"
    );
}

#[tokio::test]
async fn call_tool_uses_the_checksum_of_name_and_raw_arguments_as_call_id() {
    let run = run_turn(
        vec![plain("forecast")],
        SharedStorage::new(NoopStorage::new()),
        |ctx| {
            Box::pin(async move {
                ctx.call_tool("forecast", "call-9", json!({"b": 1, "a": 2}))
                    .await?;
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    let expected = tool_call_checksum("forecast", json!({"a": 2, "b": 1}).as_object().unwrap());
    let call_ids: Vec<&str> = run
        .execution_events()
        .into_iter()
        .map(|event| match event {
            Event::ToolExecutionStart { checksum, .. }
            | Event::ToolExecutionEnd { checksum, .. } => checksum.as_str(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(call_ids, [expected.as_str(), expected.as_str()]);
}

#[tokio::test]
async fn concurrent_calls_run_while_the_executor_keeps_using_its_context() {
    let run = run_turn(
        vec![plain("a"), plain("b")],
        SharedStorage::new(NoopStorage::new()),
        |ctx| {
            Box::pin(async move {
                let first = ctx.call_tool("a", "call-a", json!({}));
                let second = ctx.call_tool("b", "call-b", json!({}));
                ctx.store_tool_call(ToolCall::new("call-a", "a", json!({}))?)
                    .await?;
                let (first, second) = futures_util::future::join(first, second).await;
                first?;
                second?;
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(run.execution_events().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// Typed arguments

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    /// The city to forecast.
    city: String,
    /// How many days ahead, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

fn typed_forecast() -> Tool {
    Tool::typed::<ForecastArgs>("forecast")
        .description("Weather forecast for a city.")
        .read_only()
        .handler(|args: ForecastArgs, _invocation| async move {
            Ok(format!("{}: sunny for {} days", args.city, args.days))
        })
        .build()
        .unwrap()
}

#[test]
fn a_typed_tool_derives_its_schema_from_its_argument_struct() {
    let tool = typed_forecast();
    let schema = tool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["city", "days"]));
    assert_eq!(schema["properties"]["city"]["type"], "string");
    assert_eq!(
        schema["properties"]["city"]["description"],
        "The city to forecast."
    );
    assert_eq!(schema["properties"]["days"]["maximum"], 7);
    assert_eq!(tool.describe()["input_schema"], *schema);
}

#[tokio::test]
async fn a_typed_tool_receives_its_struct() {
    let (_, outcome) = execute_once(
        vec![typed_forecast()],
        call("forecast", json!({"city": "Oslo", "days": 3})),
    )
    .await;
    assert!(matches!(outcome, Ok(ToolOutput::Text(ref text)) if text == "Oslo: sunny for 3 days"));
}

#[tokio::test]
async fn a_typed_tool_refuses_arguments_of_the_wrong_shape_without_events() {
    let (run, outcome) = execute_once(
        vec![typed_forecast()],
        call("forecast", json!({"city": ["Oslo"], "days": 9})),
    )
    .await;
    let ToolExecutionError::InvalidArgs(invalid) = outcome.unwrap_err() else {
        panic!("expected InvalidArgs");
    };
    let pointers: Vec<&str> = invalid
        .violations()
        .iter()
        .map(|violation| violation.pointer())
        .collect();
    assert_eq!(pointers, ["/city", "/days"]);
    assert!(run.execution_events().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Lookup among the tools a dispatch offers

#[tokio::test]
async fn an_unknown_tool_is_refused_naming_it_and_the_visible_tools() {
    let (run, outcome) = execute_once(
        vec![plain("search"), plain("forecast")],
        call("forcast", json!({"city": "Oslo"})),
    )
    .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::UnknownTool);
    assert_eq!(error.tool(), "forcast");
    let ToolExecutionError::UnknownTool {
        available, args, ..
    } = &error
    else {
        panic!("expected UnknownTool, got {error:?}");
    };
    assert_eq!(available, &["search", "forecast"]);
    assert_eq!(args, &json!({"city": "Oslo"}));
    let text = error.to_string();
    assert!(
        text.contains("\"forcast\"") && text.contains("\"search\", \"forecast\""),
        "{text}"
    );
    assert!(run.execution_events().is_empty());
}

#[tokio::test]
async fn a_hidden_tool_is_refused_and_left_out_of_the_visible_tools() {
    let slot: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let run = run_turn(
        vec![plain("search"), plain("delete_account")],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let filled = Arc::clone(&filled);
            Box::pin(async move {
                ctx.tools.hide(["delete_account"]);
                let outcome = ctx.call_tool("delete_account", "c", json!({})).await;
                *filled.lock().unwrap() = Some(outcome);
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    let error = slot.lock().unwrap().take().unwrap().unwrap_err();
    assert_eq!(error.code(), ErrorCode::UnknownTool);
    let ToolExecutionError::HiddenTool {
        name, available, ..
    } = &error
    else {
        panic!("expected HiddenTool, got {error:?}");
    };
    assert_eq!(name, "delete_account");
    assert_eq!(available, &["search"]);
    assert!(error.to_string().contains("unhide"));
    assert!(run.execution_events().is_empty());
}
