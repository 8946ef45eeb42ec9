//! A human approval gate: the turn waits until someone outside it answers.
//!
//! A `turn_input` middleware opens a gate with `ctx.wait_for::<bool>(..)` before the question
//! reaches the model. The runtime announces it as `Event::TurnGateOpen`, whose handle a listener
//! hands to the main task; the main task asks on stdin (or takes `--approve` / `--deny`) and
//! resolves the gate. Approved, the model answers; denied, the middleware aborts the turn.
//!
//! ```sh
//! cargo run --example gate_approval            # asks on stdin
//! cargo run --example gate_approval -- --deny  # answers from the flag (`--quick` approves)
//! ```

use std::time::Duration;

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::dispatch::ScriptedModel;
use adk::events::Event;
use adk::gate::{GateHandle, GateRequest};
use adk::pipeline::{BoxError, Next};
use adk::primitives::Message;
use adk::runner::TurnStatus;
use adk::storage::NoopStorage;

/// The question the turn asks.
pub const QUESTION: &str = "Hello, may I ask something?";

/// How the gate is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Resolve it with `true`.
    Approve,
    /// Resolve it with `false`.
    Deny,
    /// Ask on stdin.
    Ask,
}

impl Decision {
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

/// Holds the question until a human approves sending it to the model.
#[adk::middleware(pipeline = turn_input)]
pub async fn require_approval(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let request = GateRequest::new("approve-question", "a human approves every question")
        .payload(serde_json::json!({ "question": QUESTION }))
        .timeout(Duration::from_secs(300));
    let approved: bool = ctx.wait_for(request).await?;
    if !approved {
        ctx.abort("the reviewer declined the question");
        return Ok(());
    }
    ctx.store_message(Message::user("question-1", QUESTION)?)
        .await?;
    let _ = next.run(ctx).await;
    Ok(())
}

async fn answer(gate: GateHandle, decision: Decision) -> Result<(), BoxError> {
    println!(
        "gate `{}` is open: {} ({})",
        gate.id(),
        gate.reason(),
        gate.payload()
    );
    let approved = match decision {
        Decision::Approve => true,
        Decision::Deny => false,
        Decision::Ask => {
            println!("approve? [y/N]");
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await??;
            matches!(line.trim(), "y" | "Y" | "yes")
        }
    };
    println!(
        "answering the gate: {}",
        if approved { "approved" } else { "denied" }
    );
    gate.resolve(approved)?;
    Ok(())
}

/// Runs one gated turn, answering the gate as `decision` says; returns how the turn ended.
pub async fn run(decision: Decision) -> Result<String, BoxError> {
    let (gates, mut opened) = tokio::sync::mpsc::unbounded_channel();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .turn_input(require_approval)
        .observe(move |event| {
            if let Event::TurnGateOpen { gate } = event {
                // The receiver lives until the turn ends, so a send cannot fail here.
                let _ = gates.send(gate.clone());
            }
        })
        .build();

    let turn = tokio::spawn(async move {
        runner
            .run(RawTurnContext::new("gate-example", "You are polite."))
            .await
    });
    let gate = opened
        .recv()
        .await
        .ok_or("the turn ended without opening its gate")?;
    answer(gate, decision).await?;
    let outcome = turn.await??;

    let summary = match &outcome.status {
        TurnStatus::Completed => {
            let reply = outcome
                .context
                .messages
                .get("question-1-reply")
                .and_then(Message::content)
                .map(|content| content.render())
                .unwrap_or_default();
            format!("answered: {reply}")
        }
        TurnStatus::Aborted(reason) => format!("aborted: {reason}"),
        TurnStatus::DispatchAborted(reason) => format!("no answer: {reason}"),
        TurnStatus::Failed(error) => format!("failed: {}", error.message()),
    };
    println!("{summary}");
    Ok(summary)
}

fn main() -> Result<(), BoxError> {
    let decision = Decision::from_args();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(decision))?;
    Ok(())
}
