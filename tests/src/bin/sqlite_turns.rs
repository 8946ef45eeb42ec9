//! Runs turns against a SQLite database until killed, for the crash test in
//! `tests/tests/sqlite.rs`: `sqlite_turns DATABASE CONVERSATION`.
//!
//! Each turn's executor stores one message, `turn-N`, and acknowledges. Only after the turn
//! completed (so the write was committed) does this print `turn-N` on its own line, so every
//! printed id is an acknowledged write.

use std::io::Write;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::primitives::Message;
use adk::sqlite::SqliteStorage;

// Bounds the run in case nobody kills it.
const MOST_TURNS: u64 = 1_000_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let (Some(database), Some(conversation)) = (arguments.next(), arguments.next()) else {
        return Err("usage: sqlite_turns DATABASE CONVERSATION".into());
    };
    let storage = SqliteStorage::open(&database).await?;
    let runner = TurnRunner::builder()
        .storage(storage)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                let turn: u64 = ctx.stash.get("crash.number")?.ok_or("no turn number")?;
                ctx.store_message(Message::assistant(
                    format!("turn-{turn}"),
                    format!("reply {turn}"),
                )?)
                .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let mut stdout = std::io::stdout().lock();
    for turn in 0..MOST_TURNS {
        let raw = RawTurnContext::new(conversation.as_str(), "You are a crash test.")
            .stash(serde_json::json!({ "crash": { "number": turn } }));
        let outcome = runner.run(raw).await?;
        if !outcome.is_completed() {
            return Err(format!("turn {turn} did not complete: {outcome:?}").into());
        }
        writeln!(stdout, "turn-{turn}")?;
        stdout.flush()?;
    }
    Ok(())
}
