//! Approval before a tool call: `adk::approval::Approval` holds the calls it picks (per tool, or
//! by a predicate over the typed arguments) behind a gate carrying the call, and the answer
//! approves, denies (the model reads why) or edits the arguments.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use adk::TurnRunner;
use adk::approval::{Approval, Decision};
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ToolExecutionError, executor_fn};
use adk::events::{ErrorCode, Event};
use adk::gate::GateHandle;
use adk::pipeline::BoxError;
use adk::primitives::{Tool, ToolOutput};
use adk::storage::NoopStorage;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Refund {
    /// In euros.
    amount: u32,
}

type Log = Arc<Mutex<Vec<String>>>;

fn refund_tool(log: &Log) -> Tool {
    let log = Arc::clone(log);
    Tool::typed::<Refund>("refund")
        .description("Refunds an amount.")
        .at_most_once()
        .handler(move |args: Refund, _| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push(format!("refund {}", args.amount));
                Ok(format!("refunded {}", args.amount))
            }
        })
        .build()
        .unwrap()
}

fn lookup_tool(log: &Log) -> Tool {
    let log = Arc::clone(log);
    Tool::builder("lookup")
        .description("Looks an order up.")
        .handler(move |_: Value, _| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push("lookup".to_owned());
                Ok("order 7: shipped")
            }
        })
        .build()
        .unwrap()
}

/// How the test answers each gate: with this value, or not at all.
#[derive(Clone)]
enum Answer {
    With(Value),
    /// `gate.reject` with this message.
    Reject(&'static str),
    /// `gate.abort()`.
    Abort,
    Never,
}

struct Run {
    outcome: Result<ToolOutput, ToolExecutionError>,
    /// Each opened gate's payload.
    gates: Vec<Value>,
}

/// One turn whose executor calls `tool` with `args` and acks; every gate is answered with
/// `answer`.
async fn call(approval: Approval, tool: &str, args: Value, answer: Answer) -> (Run, Log) {
    let log = Log::default();
    let slot = Arc::new(Mutex::new(None));
    let filled = Arc::clone(&slot);
    let gates = Arc::new(Mutex::new(Vec::new()));
    let opened = Arc::clone(&gates);
    let tool = tool.to_owned();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(refund_tool(&log))
        .tool(lookup_tool(&log))
        .tool_execution(approval)
        .observe(move |event| {
            if let Event::TurnGateOpen { gate } = event {
                opened.lock().unwrap().push(gate.payload().clone());
                match &answer {
                    Answer::With(value) => gate.resolve(value.clone()).unwrap(),
                    Answer::Reject(message) => assert!(gate.reject(*message)),
                    Answer::Abort => assert!(gate.abort()),
                    Answer::Never => {}
                }
            }
        })
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
    let outcome = runner.run(RawTurnContext::new("c", "p")).await.unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let run = Run {
        outcome: slot.lock().unwrap().take().unwrap(),
        gates: gates.lock().unwrap().clone(),
    };
    (run, log)
}

fn decision(decision: Decision) -> Answer {
    Answer::With(serde_json::to_value(decision).unwrap())
}

fn output(run: &Run) -> &str {
    match &run.outcome {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn an_approved_call_runs_after_a_gate_that_carries_the_call() {
    let (run, log) = call(
        Approval::tools(["refund"]),
        "refund",
        json!({"amount": 30}),
        decision(Decision::Approve),
    )
    .await;
    assert_eq!(output(&run), "refunded 30");
    assert_eq!(*log.lock().unwrap(), ["refund 30"]);
    assert_eq!(
        run.gates,
        [json!({"tool": "refund", "call_id": "call-1", "args": {"amount": 30}})]
    );
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_reads_the_reason() {
    let (run, log) = call(
        Approval::tools(["refund"]),
        "refund",
        json!({"amount": 30}),
        decision(Decision::deny("ask the finance team")),
    )
    .await;
    let error = run.outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolRefused);
    assert_eq!(
        error.to_string(),
        "tool \"refund\" was not run: a reviewer denied the call: ask the finance team"
    );
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn an_edited_call_runs_with_the_reviewers_arguments() {
    let (run, log) = call(
        Approval::tools(["refund"]),
        "refund",
        json!({"amount": 300}),
        decision(Decision::edit(json!({"amount": 100}))),
    )
    .await;
    assert_eq!(output(&run), "refunded 100");
    assert_eq!(*log.lock().unwrap(), ["refund 100"]);
}

#[tokio::test]
async fn an_edit_that_breaks_the_schema_refuses_the_call_with_the_violations() {
    let (run, log) = call(
        Approval::tools(["refund"]),
        "refund",
        json!({"amount": 300}),
        decision(Decision::edit(json!({"amount": "a hundred"}))),
    )
    .await;
    let error = run.outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolRefused);
    assert!(
        error.to_string().contains("do not match the tool's schema"),
        "{error}"
    );
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn tools_that_are_not_listed_run_without_a_gate() {
    let (run, log) = call(
        Approval::tools(["refund"]),
        "lookup",
        json!({}),
        Answer::Never,
    )
    .await;
    assert_eq!(output(&run), "order 7: shipped");
    assert!(run.gates.is_empty());
    assert_eq!(*log.lock().unwrap(), ["lookup"]);
}

#[tokio::test]
async fn a_predicate_over_the_typed_arguments_picks_which_calls_wait() {
    let large = || Approval::when("refund", |refund: &Refund| refund.amount > 100);
    let (small, _) = call(large(), "refund", json!({"amount": 20}), Answer::Never).await;
    assert_eq!(output(&small), "refunded 20");
    assert!(small.gates.is_empty(), "a small refund waited");

    let (big, _) = call(
        large(),
        "refund",
        json!({"amount": 500}),
        decision(Decision::deny("too much")),
    )
    .await;
    assert_eq!(big.gates.len(), 1);
    assert_eq!(big.outcome.unwrap_err().code(), ErrorCode::ToolRefused);

    // The predicate is for one tool: another tool's calls pass.
    let (other, _) = call(large(), "lookup", json!({}), Answer::Never).await;
    assert!(other.gates.is_empty());
    assert!(other.outcome.is_ok());
}

#[tokio::test]
async fn arguments_the_predicate_cannot_read_wait_for_approval() {
    // `lookup`'s arguments are no `Refund`: the check cannot be made, so the call waits.
    let approval = Approval::when("lookup", |refund: &Refund| refund.amount > 100);
    let (run, _) = call(
        approval,
        "lookup",
        json!({"order": 7}),
        decision(Decision::Approve),
    )
    .await;
    assert_eq!(run.gates.len(), 1);
    assert!(run.outcome.is_ok());
}

#[tokio::test]
async fn a_call_nobody_approves_in_time_is_refused() {
    let approval = Approval::tools(["refund"]).timeout(Duration::from_millis(10));
    let (run, log) = call(approval, "refund", json!({"amount": 1}), Answer::Never).await;
    let error = run.outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolRefused);
    assert!(
        error.to_string().contains("nobody approved the call"),
        "{error}"
    );
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn a_rejected_approval_gate_denies_the_call_and_the_model_reads_the_rejection() {
    let approval = Approval::tools(["refund"]);
    let answer = Answer::Reject("the review queue is closed");
    let (run, log) = call(approval, "refund", json!({"amount": 1}), answer).await;
    let error = run.outcome.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ToolRefused);
    assert_eq!(
        error.to_string(),
        "tool \"refund\" was not run: a reviewer denied the call: the approval was rejected: \
         the review queue is closed"
    );
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn an_aborted_approval_gate_fails_the_call_under_the_gates_code_and_the_handler_does_not_run()
{
    let approval = Approval::tools(["refund"]);
    let (run, log) = call(approval, "refund", json!({"amount": 1}), Answer::Abort).await;
    let error = run.outcome.unwrap_err();
    assert!(
        matches!(error, ToolExecutionError::Pipeline { .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), ErrorCode::TurnGateAborted);
    assert!(log.lock().unwrap().is_empty(), "the handler ran");
}

#[tokio::test]
async fn an_answer_that_is_not_a_decision_is_refused_and_the_gate_stays_open() {
    let log = Log::default();
    let answered = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&answered);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(refund_tool(&log))
        .tool_execution(Approval::tools(["refund"]))
        .observe(move |event| {
            if let Event::TurnGateOpen { gate } = event {
                let gate: &GateHandle = gate;
                // `true` is no `Decision`: refused, the gate stays open for the real answer.
                seen.lock().unwrap().push(gate.resolve(true).is_err());
                gate.resolve(Decision::Approve).unwrap();
            }
        })
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            let call = ctx.call_tool("refund", "call-1", json!({"amount": 2}));
            Box::pin(async move {
                assert!(call.await.is_ok());
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner.run(RawTurnContext::new("c", "p")).await.unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(*answered.lock().unwrap(), [true]);
    assert_eq!(*log.lock().unwrap(), ["refund 2"]);
}
