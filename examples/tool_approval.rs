//! Approval before a tool call: the model asks for a refund, and the call waits for a human.
//!
//! `adk::approval::Approval::tools(["refund"])` is registered on the `tool_execution` pipeline.
//! When the (scripted) model calls `refund`, the middleware opens a gate carrying the call; a
//! listener hands the gate to the main task, which asks on stdin (or takes `--approve` /
//! `--deny`) and answers with a `Decision`. Approved, the refund runs and the model reports it;
//! denied, the handler never runs and the model reads the reviewer's reason as the call's
//! result. `lookup` is not listed, so it runs without asking.
//!
//! ```sh
//! cargo run --example tool_approval             # asks on stdin
//! cargo run --example tool_approval -- --deny   # answers from the flag (`--quick` approves)
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use adk::TurnRunner;
use adk::approval::{Approval, Decision};
use adk::context::RawTurnContext;
use adk::dispatch::{ScriptedModel, Step};
use adk::events::Event;
use adk::gate::GateHandle;
use adk::pipeline::BoxError;
use adk::primitives::{ToolCallResults, ToolInvocation};
use adk::storage::NoopStorage;
use serde::Deserialize;

/// How the approval gate is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `Decision::Approve`.
    Approve,
    /// `Decision::Deny` with a reason.
    Deny,
    /// Ask on stdin.
    Ask,
}

impl Answer {
    /// `--approve`, `--deny`, `--quick` (approves) or, with none of them, asking on stdin.
    pub fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let has = |flag: &str| args.iter().any(|arg| arg == flag);
        if has("--deny") {
            Self::Deny
        } else if has("--approve")
            || has("--quick")
            || std::env::var_os("ADK_EXAMPLE_QUICK").is_some()
        {
            Self::Approve
        } else {
            Self::Ask
        }
    }
}

/// The refund tool's arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Refund {
    /// The order to refund.
    pub order: u32,
    /// In euros.
    pub amount: u32,
}

/// What the refund tool did, so a run can tell whether it ran.
#[derive(Default)]
pub struct Ledger {
    refunded: AtomicU32,
}

async fn decide(gate: &GateHandle, answer: Answer) -> Result<Decision, BoxError> {
    println!("approval needed: {} {}", gate.reason(), gate.payload());
    let approved = match answer {
        Answer::Approve => true,
        Answer::Deny => false,
        Answer::Ask => {
            println!("approve? [y/N]");
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await??;
            matches!(line.trim(), "y" | "Y" | "yes")
        }
    };
    Ok(if approved {
        Decision::Approve
    } else {
        Decision::deny("refunds need a receipt; ask the customer for one")
    })
}

/// Runs one turn in which the model looks an order up and refunds it, the refund waiting for
/// `answer`. Returns what the model read as the refund's result and how much was refunded.
pub async fn run(answer: Answer) -> Result<(String, u32), BoxError> {
    let ledger = Arc::new(Ledger::default());
    let refunds = Arc::clone(&ledger);
    let refund = adk::primitives::Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .idempotent_by(|args: &Refund| format!("refund-{}", args.order))
        .handler(move |args: Refund, _: ToolInvocation| {
            let refunds = Arc::clone(&refunds);
            async move {
                refunds.refunded.fetch_add(args.amount, Ordering::SeqCst);
                Ok(format!(
                    "refunded {} EUR on order {}",
                    args.amount, args.order
                ))
            }
        })
        .build()?;
    let lookup = adk::primitives::Tool::builder("lookup")
        .description("Looks an order up.")
        .handler(|_: serde_json::Value, _| async move { Ok("order 42: 30 EUR, delivered") })
        .build()?;

    let (gates, mut opened) = tokio::sync::mpsc::unbounded_channel();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(lookup)
        .tool(refund)
        .tool_execution(Approval::tools(["refund"]).timeout(Duration::from_secs(300)))
        .observe(move |event| {
            if let Event::TurnGateOpen { gate } = event {
                // The receiver lives until the turn ends, so a send cannot fail here.
                let _ = gates.send(gate.clone());
            }
        })
        .executor(ScriptedModel::steps([
            Step::call("lookup", serde_json::json!({ "order": 42 })),
            Step::call("refund", serde_json::json!({ "order": 42, "amount": 30 })),
            Step::reply("I handled the refund request."),
        ]))
        .build();

    let turn = tokio::spawn(async move {
        runner
            .run(
                RawTurnContext::new("refund-example", "You handle refunds.")
                    .user_message("Refund order 42"),
            )
            .await
    });
    let gate = opened
        .recv()
        .await
        .ok_or("the turn ended without asking for approval")?;
    let decision = decide(&gate, answer).await?;
    println!("answering: {decision:?}");
    gate.resolve(decision)?;
    let outcome = turn.await??.into_result()?;

    let refund_call = outcome
        .context
        .tool_calls
        .iter()
        .find(|call| call.tool() == "refund")
        .ok_or("the model did not call refund")?;
    let read = match refund_call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        other => format!("{other:?}"),
    };
    let refunded = ledger.refunded.load(Ordering::SeqCst);
    println!("the model read: {read}");
    println!("refunded: {refunded} EUR");
    Ok((read, refunded))
}

fn main() -> Result<(), BoxError> {
    let answer = Answer::from_args();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(answer))?;
    Ok(())
}
