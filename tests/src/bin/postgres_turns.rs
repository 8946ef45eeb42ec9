//! Runs turns against a PostgreSQL database, for the multi-process test in
//! `tests/tests/postgres.rs`: `postgres_turns URL SCHEMA WORKER TURNS CONVERSATIONS`.
//!
//! Turn `n` runs in conversation `shared-{n % CONVERSATIONS}`, which every worker shares. Its
//! executor stores this worker's own message `w{WORKER}-{n}`, prints `mid {n}` (the moment the
//! test kills a worker: half of the turn is written), then tries to store the contested message
//! `contested-{n}`, which every worker tries to store in its own turn `n`. Only after the turn
//! completed does this print `ack w{WORKER}-{n}` and either `ack contested-{n}` (this worker
//! stored it) or `refused contested-{n}` (another had: the store reported a conflict). So every
//! `ack` line is an acknowledged write, and every contested write is accounted for.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::postgres::{PostgresOptions, PostgresStorage};
use adk::primitives::Message;
use adk::storage::StorageError;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [url, schema, worker, turns, conversations] = arguments.as_slice() else {
        return Err("usage: postgres_turns URL SCHEMA WORKER TURNS CONVERSATIONS".into());
    };
    let worker: u64 = worker.parse()?;
    let turns: u64 = turns.parse()?;
    let conversations: u64 = conversations.parse()?;
    let options = PostgresOptions::from_url(url)?
        .schema(schema.as_str())?
        .pool_size(4);
    let storage = PostgresStorage::connect_with(options).await?;

    // Turns run one after another in this process, so one flag carries the contested store's
    // outcome from the executor to the acknowledgement below.
    let contested_stored = Arc::new(AtomicBool::new(false));
    let outcome = Arc::clone(&contested_stored);
    let runner = TurnRunner::builder()
        .storage(storage)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let outcome = Arc::clone(&outcome);
            Box::pin(async move {
                let turn: u64 = ctx.stash.get("multi.turn")?.ok_or("no turn number")?;
                ctx.store_message(Message::user(format!("w{worker}-{turn}"), "mine")?)
                    .await?;
                {
                    let mut stdout = std::io::stdout().lock();
                    writeln!(stdout, "mid {turn}")?;
                    stdout.flush()?;
                }
                // Long enough for the test to kill this process between the two writes.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let contested = Message::assistant(format!("contested-{turn}"), "first wins")?;
                match ctx.store_message(contested).await {
                    Ok(()) => outcome.store(true, Ordering::SeqCst),
                    Err(StorageError::Conflict { .. }) => outcome.store(false, Ordering::SeqCst),
                    Err(other) => return Err(other.into()),
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();

    for turn in 0..turns {
        let conversation = format!("shared-{}", turn % conversations);
        let raw = RawTurnContext::new(conversation.as_str(), "You are a concurrency test.")
            .stash(serde_json::json!({ "multi": { "turn": turn } }));
        let outcome = runner.run(raw).await?;
        if !outcome.is_completed() {
            return Err(format!("turn {turn} did not complete: {outcome:?}").into());
        }
        let verdict = if contested_stored.load(Ordering::SeqCst) {
            "ack"
        } else {
            "refused"
        };
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ack w{worker}-{turn}")?;
        writeln!(stdout, "{verdict} contested-{turn}")?;
        stdout.flush()?;
    }
    Ok(())
}
