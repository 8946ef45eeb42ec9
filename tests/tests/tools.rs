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

// ---------------------------------------------------------------------------------------------
// Storage through the invocation

#[tokio::test]
async fn a_handler_stores_media_bytes_through_its_invocation() {
    let storage = Arc::new(NoopStorage::new());
    let chart = Tool::builder("chart")
        .description("Draws a chart.")
        .handler(|_, invocation: ToolInvocation| async move {
            let reader = invocation
                .store_media_bytes("chart-1", vec![0x89, b'P', b'N', b'G'])
                .await
                .map_err(ToolError::new)?;
            let media = Media::tool_generated(MediaKind::Image, "image/png", "chart.png", reader)
                .map_err(ToolError::new)?;
            Ok(media)
        })
        .build()
        .unwrap();
    let slot: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let partition: Arc<Mutex<Option<StorageContext>>> = Arc::default();
    let seen = Arc::clone(&partition);
    run_turn(
        vec![chart],
        SharedStorage::from_arc(Arc::clone(&storage)),
        move |ctx| {
            let filled = Arc::clone(&filled);
            let seen = Arc::clone(&seen);
            Box::pin(async move {
                *seen.lock().unwrap() = Some(ctx.storage_context().clone());
                let outcome = ctx.call_tool("chart", "call-1", json!({})).await;
                *filled.lock().unwrap() = Some(outcome);
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    let output = slot.lock().unwrap().take().unwrap().unwrap();
    let ToolOutput::Media(media) = output else {
        panic!("expected media");
    };
    assert_eq!(media.len(), 1);
    assert_eq!(
        &media[0].reader().read_all().await.unwrap()[..],
        &[0x89, b'P', b'N', b'G']
    );
    // Kept under the turn's partition, where a fresh read by id finds it.
    let partition = partition.lock().unwrap().take().unwrap();
    let stored = storage
        .read_media_bytes(&partition, "chart-1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        &stored.read_all().await.unwrap()[..],
        &[0x89, b'P', b'N', b'G']
    );
}

// ---------------------------------------------------------------------------------------------
// Ephemeral tools are pruned on ack

fn ephemeral(name: &str) -> Tool {
    Tool::builder(name)
        .description("demo")
        .ephemeral(true)
        .handler(|_, _| async { Ok("ok") })
        .build()
        .unwrap()
}

fn tool_names(tools: &ToolRegistry) -> Vec<String> {
    tools
        .all()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect()
}

#[tokio::test]
async fn ephemeral_tools_are_pruned_when_the_dispatch_is_acked() {
    let seen = Arc::new(Mutex::new(Vec::<(Vec<String>, bool)>::new()));
    let recorder = Arc::clone(&seen);
    run_turn(
        vec![plain("kept"), ephemeral("scratch")],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let recorder = Arc::clone(&recorder);
            Box::pin(async move {
                ctx.tools.register(ephemeral("forged")).unwrap();
                ctx.tools.hide(["scratch"]);
                let before = recorder.lock().unwrap().len();
                assert_eq!(before, 0);
                recorder
                    .lock()
                    .unwrap()
                    .push((tool_names(&ctx.tools), ctx.tools.is_hidden("scratch")));
                let after_ack = Arc::clone(&recorder);
                ctx.on_ack(move |ctx| {
                    after_ack
                        .lock()
                        .unwrap()
                        .push((tool_names(&ctx.tools), ctx.tools.is_hidden("scratch")));
                });
                ctx.ack()?;
                Ok(())
            })
        },
    )
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                vec!["kept".to_owned(), "scratch".to_owned(), "forged".to_owned()],
                true
            ),
            (vec!["kept".to_owned()], false),
        ]
    );
}

#[tokio::test]
async fn ephemeral_tools_survive_a_nack() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorder = Arc::clone(&seen);
    run_turn(
        vec![plain("kept"), ephemeral("scratch")],
        SharedStorage::new(NoopStorage::new()),
        move |ctx| {
            let recorder = Arc::clone(&recorder);
            Box::pin(async move {
                ctx.nack("the model refused")?;
                *recorder.lock().unwrap() = tool_names(&ctx.tools);
                Ok(())
            })
        },
    )
    .await;
    assert_eq!(*seen.lock().unwrap(), ["kept", "scratch"]);
}

// ---------------------------------------------------------------------------------------------
// ToolRegistry operations (spec 5.10) beyond the unit tests in `primitives/tool.rs`

fn described(name: &str, description: &str, on_collision: CollisionPolicy) -> Tool {
    Tool::builder(name)
        .description(description)
        .on_collision(on_collision)
        .handler(|_, _| async { Ok("ok") })
        .build()
        .unwrap()
}

fn names_of(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(Tool::name).collect()
}

#[test]
fn get_and_contains_find_tools_by_exact_name() {
    let registry = ToolRegistry::from_tools([plain("search")]).unwrap();
    assert_eq!(registry.get("search").unwrap().name(), "search");
    assert!(registry.contains("search"));
    assert!(!registry.contains("Search"));
    assert!(registry.get("sear").is_none());
    assert!(!registry.is_empty());
    assert!(ToolRegistry::new().is_empty());
}

#[test]
fn register_overwriting_appends_a_new_name_and_keeps_the_hidden_flag_of_a_replaced_one() {
    let mut registry = ToolRegistry::from_tools([plain("a"), plain("b")]).unwrap();
    assert!(registry.register_overwriting(plain("c")).is_none());
    assert_eq!(names_of(registry.all()), ["a", "b", "c"]);
    registry.hide(["a"]);
    registry.register_overwriting(described("a", "v2", CollisionPolicy::Fail));
    assert_eq!(names_of(registry.all()), ["a", "b", "c"]);
    assert_eq!(names_of(&registry.hidden()), ["a"]);
    assert_eq!(registry.get("a").unwrap().description(), "v2");
}

#[test]
fn a_refused_registration_leaves_the_registry_unchanged() {
    let mut registry =
        ToolRegistry::from_tools([described("a", "first", CollisionPolicy::Fail)]).unwrap();
    let error = registry
        .register(described("a", "second", CollisionPolicy::Replace))
        .unwrap_err();
    assert_eq!(error.code(), "E_TOOL_ALREADY_REGISTERED");
    assert_eq!(registry.get("a").unwrap().description(), "first");
    assert_eq!(registry.len(), 1);
}

#[test]
fn visible_and_hidden_partition_the_tools_in_insertion_order() {
    let mut registry =
        ToolRegistry::from_tools([plain("d"), plain("c"), plain("b"), plain("a")]).unwrap();
    registry.hide(["a", "c", "never-registered"]);
    assert_eq!(names_of(&registry.visible()), ["d", "b"]);
    assert_eq!(names_of(&registry.hidden()), ["c", "a"]);
    assert!(registry.is_hidden("never-registered"));
    registry.unhide(["c", "never-registered"]);
    assert_eq!(names_of(&registry.visible()), ["d", "c", "b"]);
    assert!(!registry.is_hidden("never-registered"));
    registry.set_hidden(Vec::<String>::new());
    assert_eq!(registry.visible().len(), 4);
}

#[test]
fn pruning_keeps_the_order_of_the_remaining_tools_and_their_hidden_flags() {
    let mut registry =
        ToolRegistry::from_tools([ephemeral("x"), plain("a"), ephemeral("y"), plain("b")]).unwrap();
    registry.hide(["b", "y"]);
    let pruned = registry.prune_ephemeral();
    assert_eq!(names_of(&pruned), ["x", "y"]);
    assert_eq!(names_of(registry.all()), ["a", "b"]);
    assert_eq!(names_of(&registry.hidden()), ["b"]);
    assert!(registry.prune_ephemeral().is_empty());
}

#[test]
fn merge_runs_left_to_right_so_the_last_replacing_tool_wins() {
    let first = ToolRegistry::from_tools([described("a", "1", CollisionPolicy::Fail)]).unwrap();
    let second = ToolRegistry::from_tools([described("a", "2", CollisionPolicy::Replace)]).unwrap();
    let third =
        ToolRegistry::from_tools([plain("z"), described("a", "3", CollisionPolicy::Replace)])
            .unwrap();
    let merged = ToolRegistry::merge([&first, &second, &third], CollisionPolicy::Fail).unwrap();
    assert_eq!(names_of(merged.all()), ["a", "z"]);
    assert_eq!(merged.get("a").unwrap().description(), "3");
}

#[test]
fn the_merge_policy_decides_only_for_an_incoming_tool_that_defers() {
    let base = ToolRegistry::from_tools([described("a", "base", CollisionPolicy::Keep)]).unwrap();
    let deferring =
        ToolRegistry::from_tools([described("a", "incoming", CollisionPolicy::Fail)]).unwrap();
    // The existing tool's own policy plays no part: only the incoming tool's does.
    let replaced = ToolRegistry::merge([&base, &deferring], CollisionPolicy::Replace).unwrap();
    assert_eq!(replaced.get("a").unwrap().description(), "incoming");
    let kept = ToolRegistry::merge([&base, &deferring], CollisionPolicy::Keep).unwrap();
    assert_eq!(kept.get("a").unwrap().description(), "base");
    let refused = ToolRegistry::merge([&base, &deferring], CollisionPolicy::Fail).unwrap_err();
    assert_eq!(refused.name(), "a");
    assert!(refused.to_string().contains("CollisionPolicy::Replace"));

    let keeper =
        ToolRegistry::from_tools([described("a", "keeper", CollisionPolicy::Keep)]).unwrap();
    let not_replaced =
        ToolRegistry::merge([&deferring, &keeper], CollisionPolicy::Replace).unwrap();
    assert_eq!(not_replaced.get("a").unwrap().description(), "incoming");
    let replacer =
        ToolRegistry::from_tools([described("a", "replacer", CollisionPolicy::Replace)]).unwrap();
    let replaced_anyway =
        ToolRegistry::merge([&deferring, &replacer], CollisionPolicy::Keep).unwrap();
    assert_eq!(replaced_anyway.get("a").unwrap().description(), "replacer");
}

#[test]
fn a_kept_tool_keeps_its_own_hidden_flag_and_a_replacing_tool_brings_its_own() {
    let mut left = ToolRegistry::from_tools([plain("kept"), plain("replaced")]).unwrap();
    left.hide(["kept", "replaced"]);
    let right = ToolRegistry::from_tools([
        described("kept", "new", CollisionPolicy::Keep),
        described("replaced", "new", CollisionPolicy::Replace),
    ])
    .unwrap();
    let merged = ToolRegistry::merge([&left, &right], CollisionPolicy::Fail).unwrap();
    assert!(merged.is_hidden("kept"));
    assert_eq!(merged.get("kept").unwrap().description(), "demo");
    assert!(!merged.is_hidden("replaced"));
    assert_eq!(merged.get("replaced").unwrap().description(), "new");
    assert_eq!(names_of(&left.hidden()), ["kept", "replaced"]);
}

#[test]
fn tools_invocations_and_execution_errors_cross_threads() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Tool>();
    assert_send_sync::<ToolInvocation>();
    assert_send_sync::<ToolExecutionError>();
}
