//! The process the crash-injection suite (`tests/tests/crash_injection.rs`) kills:
//! `crash_turn run|resume STORE CONVERSATION EFFECTS_DIR`.
//!
//! STORE is `sqlite:PATH` or `postgres:SCHEMA` (the server named by `ADK_TEST_POSTGRES_URL`).
//! `run` runs one turn of CONVERSATION ("pay and notify") whose scripted model calls two
//! side-effecting tools, then replies:
//! - `deposit`, idempotent under a key derived from its arguments: it appends its key to
//!   `EFFECTS_DIR/deposits.log` unless the key is already there (the outside system honours the
//!   key), and every attempt, with the key it was handed, to `EFFECTS_DIR/attempts.log`;
//! - `notify`, at-most-once: it appends its call id to `EFFECTS_DIR/notifications.log`.
//!
//! `resume` continues the conversation's interrupted turn with `runner.resume`.
//!
//! The pause protocol: with `ADK_CRASH_PAUSES=1`, before and after every storage write, and
//! inside each tool before and after its effect, the process prints `pause LABEL` on stdout and
//! waits for a line on stdin before going on, so the test can SIGKILL it at exactly that step
//! boundary (or let it go on and kill it a moment later, at a random point). At the end it
//! prints `done STATUS`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use adk::TurnRunner;
use adk::bytes::{ConduitBytes, MediaReader, SpoolReader};
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ScriptedModel, Step};
use adk::postgres::{PostgresOptions, PostgresStorage};
use adk::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall};
use adk::sqlite::SqliteStorage;
use adk::storage::ledger::{ToolIntent, ToolRecord, ToolResult};
use adk::storage::{SharedStorage, StorageAdapter, StorageContext, StorageError};
use serde::{Deserialize, Serialize};

/// Prints `pause LABEL` and waits for the test's go-ahead, when pauses are on.
fn pause(label: &str) {
    if std::env::var_os("ADK_CRASH_PAUSES").is_none() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    // The test reads every line; a closed pipe means it is gone, and so should we be.
    if writeln!(stdout, "pause {label}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(3);
    }
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        std::process::exit(3);
    }
}

/// The real store, with a pause before and after every write.
struct Paused(SharedStorage);

macro_rules! reads {
    ($($name:ident($($argument:ident: $type:ty),*) -> $output:ty;)*) => {$(
        async fn $name(&self, ctx: &StorageContext $(, $argument: $type)*) -> Result<$output, StorageError> {
            self.0.$name(ctx $(, $argument)*).await
        }
    )*};
}

macro_rules! writes {
    ($($name:ident($($argument:ident: $type:ty),*) -> $output:ty;)*) => {$(
        async fn $name(&self, ctx: &StorageContext $(, $argument: $type)*) -> Result<$output, StorageError> {
            pause(concat!("before ", stringify!($name)));
            let written = self.0.$name(ctx $(, $argument)*).await;
            pause(concat!("after ", stringify!($name)));
            written
        }
    )*};
}

impl StorageAdapter for Paused {
    reads! {
        fetch_memories() -> Vec<Memory>;
        fetch_messages() -> Vec<Message>;
        fetch_thoughts() -> Vec<Thought>;
        fetch_tool_calls() -> Vec<ToolCall>;
        fetch_tools() -> Vec<Tool>;
        fetch_retrievables() -> Vec<Retrievable>;
        refresh_standing_instructions() -> Vec<StandingInstruction>;
        read_media_bytes(id: String) -> Option<MediaReader>;
        read_retrievable_bytes(id: String) -> Option<SpoolReader>;
    }
    writes! {
        store_memory(memory: Memory) -> ();
        mutate_memory(memory: Memory) -> ();
        delete_memory(id: String) -> ();
        store_message(message: Message) -> ();
        mutate_message(message: Message) -> ();
        delete_message(id: String) -> ();
        store_thought(thought: Thought) -> ();
        mutate_thought(thought: Thought) -> ();
        delete_thought(id: String) -> ();
        store_tool_call(tool_call: ToolCall) -> ();
        mutate_tool_call(tool_call: ToolCall) -> ();
        delete_tool_call(id: String) -> ();
        store_retrievable(retrievable: Retrievable) -> ();
        mutate_retrievable(retrievable: Retrievable) -> ();
        delete_retrievable(id: String) -> ();
        store_standing_instruction(instruction: StandingInstruction) -> ();
        mutate_standing_instruction(instruction: StandingInstruction) -> ();
        delete_standing_instruction(instruction: StandingInstruction) -> ();
        store_media_bytes(id: String, bytes: ConduitBytes) -> MediaReader;
        store_retrievable_bytes(id: String, bytes: ConduitBytes) -> SpoolReader;
        replace_tool_call_group(ids: Vec<String>, replacements: Vec<ToolCall>) -> ();
        record_tool_intent(intent: ToolIntent) -> Option<ToolRecord>;
        record_tool_result(call_id: String, result: ToolResult) -> ();
        mutate_tool_call_with_result(tool_call: ToolCall, result: ToolResult) -> ();
    }
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Deposit {
    /// The account credited.
    account: String,
    /// The amount, in cents.
    cents: u64,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct Notify {
    /// Who is told.
    to: String,
}

fn append(path: &Path, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // One `write` of one short line: a kill lands before or after it, never inside.
    file.write_all(format!("{line}\n").as_bytes())
}

fn tools(effects: &Path) -> Result<[Tool; 2], Box<dyn std::error::Error>> {
    let deposits = effects.join("deposits.log");
    let attempts = effects.join("attempts.log");
    let deposit = Tool::typed::<Deposit>("deposit")
        .description("Credits an account; the bank drops a repeated key.")
        .idempotent_by(|args: &Deposit| format!("deposit-{}-{}", args.account, args.cents))
        .handler(move |args: Deposit, invocation| {
            let (deposits, attempts) = (deposits.clone(), attempts.clone());
            async move {
                let key = invocation.idempotency_key().unwrap_or("no key").to_owned();
                pause("deposit: before effect");
                append(&attempts, &format!("{} {key}", invocation.call_id()))?;
                let seen = std::fs::read_to_string(&deposits).unwrap_or_default();
                if !seen.lines().any(|line| line == key) {
                    append(&deposits, &key)?;
                }
                pause("deposit: after effect");
                Ok(format!("credited {} cents to {}", args.cents, args.account))
            }
        })
        .build()?;
    let notifications = effects.join("notifications.log");
    let notify = Tool::typed::<Notify>("notify")
        .description("Sends a notification; it cannot be taken back or deduplicated.")
        .at_most_once()
        .handler(move |args: Notify, invocation| {
            let notifications = notifications.clone();
            async move {
                pause("notify: before effect");
                append(&notifications, invocation.call_id())?;
                pause("notify: after effect");
                Ok(format!("notified {}", args.to))
            }
        })
        .build()?;
    Ok([deposit, notify])
}

/// Calls `deposit`, then `notify`, then replies, whatever the turn already holds.
fn model() -> ScriptedModel {
    ScriptedModel::from_fn(|ctx: &DispatchContext| {
        let called = |tool: &str| ctx.tool_calls.iter().any(|call| call.tool() == tool);
        if !called("deposit") {
            Step::call(
                "deposit",
                Deposit {
                    account: ctx.storage_context().conversation_id().to_string(),
                    cents: 500,
                },
            )
        } else if !called("notify") {
            Step::call(
                "notify",
                Notify {
                    to: "ada".to_owned(),
                },
            )
        } else {
            Step::reply("Paid and notified.")
        }
    })
}

async fn storage(store: &str) -> Result<SharedStorage, Box<dyn std::error::Error>> {
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
    Err(format!("unknown store {store:?}: sqlite:PATH or postgres:SCHEMA").into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [mode, store, conversation, effects] = arguments.as_slice() else {
        return Err("usage: crash_turn run|resume STORE CONVERSATION EFFECTS_DIR".into());
    };
    let effects = PathBuf::from(effects);
    let runner = TurnRunner::builder()
        .storage(Paused(storage(store).await?))
        .executor(model())
        .tools(tools(&effects)?)
        .build();
    let raw = RawTurnContext::new(conversation.as_str(), "You pay and notify.");
    let status = match mode.as_str() {
        "run" => {
            let outcome = runner.run(raw.user_message("Pay Ada 5 euros.")).await?;
            format!("{:?}", outcome.status)
        }
        "resume" => match runner.resume(raw).await?.into_outcome() {
            Some(outcome) => format!("{:?}", outcome.status),
            None => "nothing to resume".to_owned(),
        },
        other => return Err(format!("unknown mode {other:?}: run or resume").into()),
    };
    println!("done {status}");
    Ok(())
}
