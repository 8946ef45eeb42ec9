//! The `tool_execution` pipeline: middleware around every tool call, in registration order, that
//! may refuse a call (the model reads why), rewrite its arguments (checked against the schema),
//! answer in the handler's place, observe the result, or open a gate; and a tool handler that
//! opens a gate itself.

use std::sync::{Arc, Mutex};

use adk::context::{Aborted, DispatchContext, RawTurnContext, ToolCallOutcome};
use adk::dispatch::{ScriptedModel, Step, ToolExecutionError, executor_fn};
use adk::events::{ErrorCode, Event};
use adk::gate::GateRequest;
use adk::pipeline::{BoxError, Next, from_fn};
use adk::primitives::{Tool, ToolInvocation, ToolOutput};
use adk::runner::TurnRunnerBuilder;
use adk::storage::NoopStorage;
use adk::{ToolContext, TurnRunner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;
type Outcome = Result<ToolOutput, ToolExecutionError>;

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Refund {
    /// In euros.
    amount: u32,
}

/// A typed `refund` tool whose handler logs the amount it refunded.
fn refund_tool(log: &Log) -> Tool {
    let log = Arc::clone(log);
    Tool::typed::<Refund>("refund")
        .description("Refunds an amount.")
        .at_most_once()
        .handler(move |args: Refund, _invocation| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push(format!("handler {}", args.amount));
                Ok(format!("refunded {}", args.amount))
            }
        })
        .build()
        .unwrap()
}

/// Runs one turn whose executor calls `tool` with `args` once (through `ctx.call_tool`) and
/// acks; returns what the call gave and the events.
async fn call_once(builder: TurnRunnerBuilder, tool: &str, args: Value) -> (Outcome, Vec<Event>) {
    let slot: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let tool = tool.to_owned();
    let runner = builder
        .storage(NoopStorage::new())
        .observe(move |event| seen.lock().unwrap().push(event.clone()))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let filled = Arc::clone(&filled);
            let call = ctx.call_tool(&tool, "call-1", args.clone());
            Box::pin(async move {
                *filled.lock().unwrap() = Some(call.await);
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("c", "p"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert!(outcome.is_completed());
    let result = slot
        .lock()
        .unwrap()
        .take()
        .expect("the executor ran the call");
    let events = events.lock().unwrap().clone();
    (result, events)
}

fn text(outcome: &Outcome) -> &str {
    match outcome {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

/// Writes `name-pre` / `name-post` around the rest of the tool pipeline, and what `next` said.
fn trace(
    name: &'static str,
    log: &Log,
) -> impl adk::pipeline::Middleware<adk::pipeline::ToolExecution> {
    let log = Arc::clone(log);
    from_fn(move |ctx: &mut ToolContext, next| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            log.lock().unwrap().push(format!("{name}-pre"));
            let downstream = next.run(ctx).await;
            log.lock()
                .unwrap()
                .push(format!("{name}-post {downstream:?}"));
            Ok::<(), BoxError>(())
        })
    })
}

#[tokio::test]
async fn tool_middleware_run_in_registration_order_around_the_handler() {
    let log = Log::default();
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(trace("a", &log))
        .tool_execution(trace("b", &log));
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 5})).await;
    assert_eq!(text(&outcome), "refunded 5");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "a-pre",
            "b-pre",
            "handler 5",
            "b-post Completed",
            "a-post Completed"
        ]
    );
}

#[adk::middleware(pipeline = tool_execution)]
async fn refuse_large_refunds(
    ctx: &mut ToolContext,
    next: Next<'_, ToolContext>,
) -> Result<(), BoxError> {
    if ctx.tool_name() == "refund" && ctx.args_as::<Refund>()?.amount > 100 {
        ctx.refuse("refunds over 100 EUR need a human");
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

#[tokio::test]
async fn a_refused_call_skips_the_handler_and_the_rest_and_says_why() {
    let log = Log::default();
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(trace("outer", &log))
        .tool_execution(refuse_large_refunds)
        .tool_execution(trace("inner", &log));
    let (outcome, events) = call_once(builder, "refund", json!({"amount": 250})).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolRefused);
    assert_eq!(
        error.to_string(),
        "tool \"refund\" was not run: refunds over 100 EUR need a human"
    );
    // Neither the handler nor the middleware after the refusal ran; the one before saw the
    // rest skipped.
    assert_eq!(*log.lock().unwrap(), ["outer-pre", "outer-post Aborted"]);
    let ends: Vec<bool> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionEnd { is_error, .. } => Some(*is_error),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [true]);
}

#[tokio::test]
async fn the_model_reads_the_refusal_as_the_calls_result() {
    let log = Log::default();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(refund_tool(&log))
        .tool_execution(refuse_large_refunds)
        .executor(ScriptedModel::steps([
            Step::call("refund", json!({"amount": 250})),
            Step::reply("I cannot refund that much without a human."),
        ]))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("c", "p").user_message("Refund 250 EUR"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let call = outcome.context.tool_calls.first().unwrap();
    assert!(call.is_error());
    let stored = format!("{:?}", call.results());
    assert!(
        stored.contains("refunds over 100 EUR need a human"),
        "the stored result is {stored}"
    );
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn rewritten_arguments_are_checked_against_the_schema_and_reach_the_handler() {
    let log = Log::default();
    let verdicts = Log::default();
    let seen = Arc::clone(&verdicts);
    let cap = from_fn(move |ctx: &mut ToolContext, next| {
        let seen = Arc::clone(&seen);
        Box::pin(async move {
            // Not an object with an integer `amount`: refused, the arguments stay.
            let refused = ctx.set_args(json!({"amount": "lots"})).unwrap_err();
            seen.lock()
                .unwrap()
                .push(refused.violations().len().to_string());
            let mut refund: Refund = ctx.args_as()?;
            refund.amount = refund.amount.min(100);
            ctx.set_args_from(&refund)?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    });
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(cap);
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 250})).await;
    assert_eq!(text(&outcome), "refunded 100");
    assert_eq!(*verdicts.lock().unwrap(), ["1"]);
}

#[tokio::test]
async fn a_middleware_answers_in_place_of_the_tool_and_another_observes_the_result() {
    let log = Log::default();
    let observed = Log::default();
    let seen = Arc::clone(&observed);
    let observe = from_fn(move |ctx: &mut ToolContext, next| {
        let seen = Arc::clone(&seen);
        Box::pin(async move {
            let _ = next.run(ctx).await;
            let entry = match ctx.outcome() {
                Some(ToolCallOutcome::Output(ToolOutput::Text(text))) => {
                    format!("{text} (handler ran: {})", ctx.handler_ran())
                }
                other => format!("{other:?}"),
            };
            seen.lock().unwrap().push(entry);
            Ok::<(), BoxError>(())
        })
    });
    let cache = from_fn(|ctx: &mut ToolContext, next| {
        Box::pin(async move {
            if ctx.args()["amount"] == 7 {
                ctx.respond("refunded 7 (from the cache)");
                return Ok::<(), BoxError>(());
            }
            let _ = next.run(ctx).await;
            Ok(())
        })
    });
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(observe)
        .tool_execution(cache);
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 7})).await;
    assert_eq!(text(&outcome), "refunded 7 (from the cache)");
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
    assert_eq!(
        *observed.lock().unwrap(),
        ["refunded 7 (from the cache) (handler ran: false)"]
    );
}

#[tokio::test]
async fn a_post_step_may_replace_the_handlers_output() {
    let log = Log::default();
    let redact = from_fn(|ctx: &mut ToolContext, next| {
        Box::pin(async move {
            let _ = next.run(ctx).await;
            if let Some(ToolCallOutcome::Output(ToolOutput::Text(text))) = ctx.outcome() {
                let redacted = text.replace(char::is_numeric, "#");
                ctx.respond(redacted);
            }
            Ok::<(), BoxError>(())
        })
    });
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(redact);
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 42})).await;
    assert_eq!(text(&outcome), "refunded ##");
    assert_eq!(*log.lock().unwrap(), ["handler 42"]);
}

#[tokio::test]
async fn a_failing_tool_middleware_fails_the_call_with_e_tool_pipeline_error() {
    let log = Log::default();
    let failing = from_fn(|_ctx: &mut ToolContext, _next| {
        Box::pin(async move { Err::<(), BoxError>("the audit log is down".into()) })
    });
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(trace("outer", &log))
        .tool_execution(failing);
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 1})).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolPipelineError);
    assert!(matches!(error, ToolExecutionError::Pipeline { .. }));
    let cause = std::error::Error::source(&error).unwrap().to_string();
    assert!(cause.contains("`tool_execution`"), "{cause}");
    assert_eq!(*log.lock().unwrap(), ["outer-pre", "outer-post Failed"]);
}

#[tokio::test]
async fn a_tool_middleware_that_forgets_next_short_circuits_the_call() {
    let log = Log::default();
    let forgets =
        from_fn(|_ctx: &mut ToolContext, _next| Box::pin(async move { Ok::<(), BoxError>(()) }));
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(forgets);
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 1})).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::PipelineShortCircuited);
    assert!(error.to_string().contains("ctx.refuse(reason)"), "{error}");
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn returning_the_abort_error_from_a_tool_middleware_refuses_that_call_only() {
    let log = Log::default();
    let aborts = from_fn(|_ctx: &mut ToolContext, _next| {
        Box::pin(async move { Err::<(), BoxError>(Aborted::new("not today").into()) })
    });
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(aborts);
    let (outcome, _) = call_once(builder, "refund", json!({"amount": 1})).await;
    let error = outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolRefused);
    assert!(error.to_string().ends_with("not today"), "{error}");
}

/// Approves the call when a gate opened for it is resolved with `true`.
#[adk::middleware(pipeline = tool_execution)]
async fn ask_first(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
    let request = GateRequest::new(format!("approve-{}", ctx.call_id()), "approve this call")
        .payload(json!({"tool": ctx.tool_name(), "args": ctx.args()}));
    if !ctx.wait_for::<bool>(request).await? {
        ctx.refuse("the reviewer said no");
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

#[tokio::test]
async fn a_tool_middleware_opens_a_gate_on_the_runners_bus() {
    for (answer, expected) in [
        (true, Ok("refunded 3")),
        (false, Err(ErrorCode::ToolRefused)),
    ] {
        let log = Log::default();
        let payloads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&payloads);
        let builder = TurnRunner::builder()
            .tool(refund_tool(&log))
            .tool_execution(ask_first)
            .observe(move |event| {
                if let Event::TurnGateOpen { gate } = event {
                    seen.lock().unwrap().push(gate.payload().clone());
                    gate.resolve(answer).unwrap();
                }
            });
        let (outcome, _) = call_once(builder, "refund", json!({"amount": 3})).await;
        match expected {
            Ok(expected) => assert_eq!(text(&outcome), expected),
            Err(code) => assert_eq!(outcome.unwrap_err().code(), code),
        }
        assert_eq!(
            *payloads.lock().unwrap(),
            [json!({"tool": "refund", "args": {"amount": 3}})]
        );
    }
}

#[tokio::test]
async fn a_tool_handler_opens_a_gate_through_its_invocation() {
    let confirm = Tool::builder("transfer")
        .description("Moves money.")
        .handler(|_args: Value, invocation: ToolInvocation| async move {
            let request = GateRequest::new("confirm-transfer", "a human confirms transfers");
            let confirmed: bool = invocation.wait_for(request).await?;
            Ok(if confirmed { "transferred" } else { "declined" })
        })
        .build()
        .unwrap();
    let closed = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&closed);
    // No tool middleware: the handler's gate goes through the bus all the same.
    let builder = TurnRunner::builder()
        .tool(confirm)
        .observe(move |event| match event {
            Event::TurnGateOpen { gate } => gate.resolve(true).unwrap(),
            Event::TurnGateClosed {
                gate_id, result, ..
            } => {
                seen.lock()
                    .unwrap()
                    .push((gate_id.clone(), result.as_str()));
            }
            _ => {}
        });
    let (outcome, _) = call_once(builder, "transfer", json!({})).await;
    assert_eq!(text(&outcome), "transferred");
    assert_eq!(
        *closed.lock().unwrap(),
        [("confirm-transfer".to_owned(), "resolved")]
    );
}

#[tokio::test]
async fn a_handlers_gate_outside_a_dispatch_has_no_listener_and_times_out() {
    let invocation = ToolInvocation::new("transfer", "call-1");
    let request =
        GateRequest::new("confirm", "nobody listens").timeout(std::time::Duration::from_millis(5));
    let answer = invocation.wait_for::<bool>(request).await;
    assert!(matches!(answer, Err(adk::gate::GateError::TimedOut { .. })));
}

#[tokio::test]
async fn without_tool_middleware_a_post_step_sees_completed_and_the_handler_runs_once() {
    // The pipeline's own bookkeeping: one middleware that passes through gives exactly what
    // no middleware gives.
    let log = Log::default();
    let builder = TurnRunner::builder().tool(refund_tool(&log));
    let (plain, _) = call_once(builder, "refund", json!({"amount": 9})).await;
    let builder = TurnRunner::builder()
        .tool(refund_tool(&log))
        .tool_execution(trace("only", &log));
    let (wrapped, _) = call_once(builder, "refund", json!({"amount": 9})).await;
    assert_eq!(text(&plain), text(&wrapped));
    assert_eq!(
        *log.lock().unwrap(),
        ["handler 9", "only-pre", "handler 9", "only-post Completed"]
    );
}
