//! A durable approval across processes: the turn asks, the process exits, another process
//! answers, and a third resumes the turn where it stopped.
//!
//! The runner keeps its conversation in a SQLite file, which also keeps approvals. When the
//! (scripted) model calls `refund`, `Approval` stores the request (call id, tool, arguments,
//! prompt) and opens its gate; this process then exits without answering. `pending` lists the
//! waiting requests; `--approve`, `--deny` or stdin answers the first one over the store with
//! `adk::approval::Approvals` (no runner); `resume` continues the turn with `runner.resume`:
//! the refund runs (or not) as decided, without asking again and without calling the model for
//! the call, and the model reports the result.
//!
//! ```sh
//! cargo run --example durable_approval -- ask        # asks, then exits
//! cargo run --example durable_approval -- pending    # what is waiting
//! cargo run --example durable_approval -- --approve  # or --deny, or neither to answer on stdin
//! cargo run --example durable_approval -- resume     # the turn goes on
//! ```
//!
//! The database is `adk-durable-approval.db` in the system's temporary folder, or the path in
//! `ADK_DURABLE_APPROVAL_DB`.

use std::path::PathBuf;

use adk::TurnRunner;
use adk::approval::{Approval, Approvals, Decision};
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ScriptedModel, Step};
use adk::events::Event;
use adk::pipeline::BoxError;
use adk::primitives::{Message, Tool, ToolCallResults};
use adk::sqlite::SqliteStorage;
use adk::storage::StorageContext;
use serde::Deserialize;

/// The refund tool's arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Refund {
    /// In euros.
    pub amount: u32,
}

const CONVERSATION: &str = "durable-refunds";

fn database() -> PathBuf {
    std::env::var_os("ADK_DURABLE_APPROVAL_DB").map_or_else(
        || std::env::temp_dir().join("adk-durable-approval.db"),
        PathBuf::from,
    )
}

fn raw() -> RawTurnContext {
    RawTurnContext::new(CONVERSATION, "You handle refunds.")
}

/// The runner: `refund` waits for approval; the model calls it, then reports its result. Each
/// opened gate's payload goes to `gates`.
pub fn runner(
    storage: SqliteStorage,
    gates: tokio::sync::mpsc::UnboundedSender<String>,
) -> Result<TurnRunner, BoxError> {
    let refund = Tool::typed::<Refund>("refund")
        .description("Refunds an amount in euros.")
        .at_most_once()
        .handler(|args: Refund, _| async move { Ok(format!("refunded {} EUR", args.amount)) })
        .build()?;
    let model = ScriptedModel::from_fn(|ctx: &DispatchContext| {
        match ctx.tool_calls.iter().find(|call| call.is_complete()) {
            Some(call) => {
                let text = match call.results() {
                    Some(ToolCallResults::Text(text)) => text.render(),
                    _ => String::new(),
                };
                Step::reply(format!("The refund: {text}"))
            }
            None => Step::call("refund", serde_json::json!({ "amount": 250 })),
        }
    });
    Ok(TurnRunner::builder()
        .storage(storage)
        .tool(refund)
        .tool_execution(Approval::tools(["refund"]).wait_indefinitely())
        .observe(move |event| {
            if let Event::TurnGateOpen { gate } = event {
                // Nobody may listen any more (the turn was given up on): nothing to do then.
                let _ = gates.send(gate.payload().to_string());
            }
        })
        .executor(model)
        .build())
}

/// Runs the turn until its approval is stored and its gate open, then gives up on it, as a
/// process that exits does. Returns the gate's payload (the call).
pub async fn ask(storage: SqliteStorage) -> Result<String, BoxError> {
    let (gates, mut opened) = tokio::sync::mpsc::unbounded_channel();
    let runner = runner(storage, gates)?;
    let turn = tokio::spawn(async move {
        let question = Message::user("q-1", "Refund order 17: 250 EUR.")?;
        // Given up on while its gate waits: the outcome is never read.
        let _outcome = runner
            .run(raw().user_message(question))
            .await?
            .into_result()?;
        Ok::<(), BoxError>(())
    });
    let payload = opened
        .recv()
        .await
        .ok_or("the turn ended without asking for approval")?;
    turn.abort();
    Ok(payload)
}

/// The waiting requests, as `call_id tool args` lines.
pub async fn pending(storage: SqliteStorage) -> Result<Vec<String>, BoxError> {
    let approvals = Approvals::new(storage);
    Ok(approvals
        .pending(&StorageContext::new(CONVERSATION))
        .await?
        .into_iter()
        .map(|request| format!("{} {} {}", request.call_id, request.tool, request.args))
        .collect())
}

/// Answers the first waiting request with `decision`, over the store alone; returns its call id.
pub async fn answer(storage: SqliteStorage, decision: Decision) -> Result<String, BoxError> {
    let approvals = Approvals::new(storage);
    let conversation = StorageContext::new(CONVERSATION);
    let waiting = approvals.pending(&conversation).await?;
    let request = waiting
        .first()
        .ok_or("no approval is waiting; run `ask` first")?;
    approvals
        .answer(&conversation, &request.call_id, decision)
        .await?;
    Ok(request.call_id.clone())
}

/// Resumes the turn; returns the model's reply.
pub async fn resume(storage: SqliteStorage) -> Result<String, BoxError> {
    let (gates, _opened) = tokio::sync::mpsc::unbounded_channel();
    let runner = runner(storage, gates)?;
    let outcome = runner
        .resume(raw())
        .await?
        .into_outcome()
        .ok_or("nothing to resume; run `ask` first")?
        .into_result()?;
    Ok(outcome
        .reply()
        .and_then(Message::content)
        .map(|text| text.render())
        .unwrap_or_default())
}

async fn main_async() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let storage = SqliteStorage::open(database()).await?;
    match args.first().map(String::as_str) {
        Some("ask") => {
            let call = ask(storage).await?;
            println!("approval needed: {call}");
            println!(
                "stored in {}; exiting without an answer",
                database().display()
            );
        }
        Some("pending") => {
            for line in pending(storage).await? {
                println!("{line}");
            }
        }
        Some("resume") => println!("{}", resume(storage).await?),
        Some("--approve") => println!("approved {}", answer(storage, Decision::Approve).await?),
        Some("--deny") => {
            let decision = Decision::deny("refunds over 100 EUR go through finance");
            println!("denied {}", answer(storage, decision).await?);
        }
        _ => {
            println!("approve the waiting refund? [y/N]");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            let decision = if matches!(line.trim(), "y" | "Y" | "yes") {
                Decision::Approve
            } else {
                Decision::deny("the reviewer said no")
            };
            println!("answered {}", answer(storage, decision).await?);
        }
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(main_async())
}
