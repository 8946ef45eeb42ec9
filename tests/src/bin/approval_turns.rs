//! One durable approval across processes, for `tests/tests/durable_approvals.rs`:
//!
//! - `approval_turns ask`: runs a turn whose model calls `refund` (250 EUR), which needs
//!   approval; prints `pending` once the request is stored and the gate open, then waits until
//!   it is killed;
//! - `approval_turns answer approve | deny REASON | edit JSON`: answers the conversation's
//!   waiting request over the store, with no runner, and prints `answered CALL_ID`;
//! - `approval_turns resume`: resumes the turn, and prints `refunded AMOUNT` when the tool runs,
//!   then `model-calls N` and `reply TEXT`.
//!
//! The store is named by `ADK_APPROVAL_STORE`: `sqlite:PATH`, or `postgres:SCHEMA` (the
//! database from `ADK_TEST_POSTGRES_URL`).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::TurnRunner;
use adk::approval::{Approval, Approvals, Decision};
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ScriptedModel, Step};
use adk::events::Event;
use adk::postgres::{PostgresOptions, PostgresStorage};
use adk::primitives::{Message, Tool, ToolCallResults};
use adk::sqlite::SqliteStorage;
use adk::storage::{SharedStorage, StorageContext};

type Failure = Box<dyn std::error::Error>;

/// One line on stdout, flushed at once: the test reads it while this process runs.
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    amount: u32,
}

async fn storage() -> Result<SharedStorage, Failure> {
    let store = std::env::var("ADK_APPROVAL_STORE")?;
    if let Some(path) = store.strip_prefix("sqlite:") {
        return Ok(SharedStorage::new(SqliteStorage::open(path).await?));
    }
    if let Some(schema) = store.strip_prefix("postgres:") {
        let url = std::env::var("ADK_TEST_POSTGRES_URL")?;
        let options = PostgresOptions::from_url(&url)?.schema(schema)?;
        return Ok(SharedStorage::new(
            PostgresStorage::connect_with(options).await?,
        ));
    }
    Err(format!("ADK_APPROVAL_STORE={store:?} names no store").into())
}

fn raw() -> RawTurnContext {
    RawTurnContext::new("refunds-1", "You refund orders.")
}

/// The model: calls `refund` until a call has a result, then reports it.
fn model(calls: Arc<AtomicUsize>) -> ScriptedModel {
    ScriptedModel::from_fn(move |ctx: &DispatchContext| {
        calls.fetch_add(1, Ordering::SeqCst);
        match ctx.tool_calls.iter().find(|call| call.is_complete()) {
            Some(call) => {
                let text = match call.results() {
                    Some(ToolCallResults::Text(text)) => text.render(),
                    _ => String::new(),
                };
                let verb = if call.is_error() { "failed" } else { "says" };
                Step::reply(format!("The refund tool {verb}: {text}"))
            }
            None => Step::call("refund", serde_json::json!({ "amount": 250 })),
        }
    })
}

fn runner(
    storage: SharedStorage,
    calls: Arc<AtomicUsize>,
    announce: bool,
) -> Result<TurnRunner, Failure> {
    let refund = Tool::typed::<Refund>("refund")
        .description("Refunds an amount in euros.")
        .at_most_once()
        .handler(|args: Refund, _| async move {
            say(&format!("refunded {}", args.amount));
            Ok(format!("refunded {} EUR", args.amount))
        })
        .build()?;
    let builder = TurnRunner::builder()
        .storage(storage)
        .tool(refund)
        .tool_execution(Approval::tools(["refund"]).wait_indefinitely())
        .executor(model(calls));
    Ok(if announce {
        builder
            .observe(|event| {
                if let Event::TurnGateOpen { .. } = event {
                    // The request is stored before the gate opens.
                    say("pending");
                }
            })
            .build()
    } else {
        builder.build()
    })
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let storage = storage().await?;
    let calls = Arc::new(AtomicUsize::new(0));
    match arguments.first().map(String::as_str) {
        Some("ask") => {
            let runner = runner(storage, calls, true)?;
            let question = Message::user("q-1", "Refund order 17, 250 EUR.")?;
            let outcome = runner.run(raw().user_message(question)).await?;
            Err(format!(
                "the turn ended although nobody answered: {:?}",
                outcome.status
            )
            .into())
        }
        Some("answer") => {
            let approvals = Approvals::shared(storage);
            let conversation = StorageContext::new("refunds-1");
            let pending = approvals.pending(&conversation).await?;
            let request = pending.first().ok_or("no approval is waiting")?;
            let decision = match (arguments.get(1).map(String::as_str), arguments.get(2)) {
                (Some("approve"), _) => Decision::Approve,
                (Some("deny"), Some(reason)) => Decision::deny(reason.as_str()),
                (Some("edit"), Some(json)) => Decision::edit(serde_json::from_str(json)?),
                _ => return Err("usage: answer approve | deny REASON | edit JSON".into()),
            };
            approvals
                .answer(&conversation, &request.call_id, decision)
                .await?;
            say(&format!("answered {}", request.call_id));
            Ok(())
        }
        Some("resume") => {
            let runner = runner(storage, Arc::clone(&calls), false)?;
            let resumed = runner.resume(raw()).await?;
            let outcome = resumed.into_outcome().ok_or("nothing to resume")?;
            let outcome = outcome.into_result()?;
            let reply = outcome
                .reply()
                .and_then(Message::content)
                .map(|text| text.render())
                .unwrap_or_default();
            say(&format!("model-calls {}", calls.load(Ordering::SeqCst)));
            say(&format!("reply {reply}"));
            Ok(())
        }
        _ => Err("usage: approval_turns ask | answer .. | resume".into()),
    }
}
