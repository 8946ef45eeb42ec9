//! Runs turns against a PostgreSQL database, for the multi-process test in
//! `tests/tests/postgres.rs`: `postgres_turns URL SCHEMA WORKER TURNS CONVERSATIONS`.
//!
//! Turn `n` runs in conversation `shared-{n % CONVERSATIONS}`, which every worker shares. Its
//! executor stores this worker's own message `w{WORKER}-{n}`, prints `mid {n}` (the moment the
//! test kills a worker: half of the turn is written), then tries to store the contested message
//! `contested-{n}`, which every worker tries to store in its own turn `n`, and increments two
//! session-state counters: `user:turns`, which every worker's turns share, and the session key
//! `w{WORKER}_turns`, which only this worker writes. Only after the turn ended does this print
//! `ack w{WORKER}-{n}` and either `ack contested-{n}` (this worker stored it) or
//! `refused contested-{n}` (another had: the store reported a conflict), and then
//! `state-ack {n}` (the state commit landed) or `state-stale {n}` (another process changed
//! `user:turns` after this turn loaded it, and the whole commit was refused with
//! `E_STATE_STALE`). So every `ack` line is an acknowledged write, every contested write is
//! accounted for, and every state commit is either counted or reported refused.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
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
    let sessions = storage.session_store().await?;

    // Turns run one after another in this process, so two flags carry the executor's outcome
    // (it stored both messages; it stored the contested one) to the acknowledgement below.
    let contested_stored = Arc::new(AtomicBool::new(false));
    let messages_stored = Arc::new(AtomicBool::new(false));
    let (outcome, stored) = (Arc::clone(&contested_stored), Arc::clone(&messages_stored));
    let own_counter = format!("w{worker}_turns");
    let runner = TurnRunner::builder()
        .storage(storage)
        .session_store(sessions)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let (outcome, stored) = (Arc::clone(&outcome), Arc::clone(&stored));
            let own_counter = own_counter.clone();
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
                stored.store(true, Ordering::SeqCst);
                for counter in ["user:turns", own_counter.as_str()] {
                    let count = ctx
                        .state()
                        .value(counter)
                        .and_then(serde_json::Value::as_u64);
                    ctx.state_mut()
                        .set_value(counter, serde_json::json!(count.unwrap_or(0) + 1))?;
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
        messages_stored.store(false, Ordering::SeqCst);
        let outcome = runner.run(raw).await?;
        let state = match outcome.error().map(adk::events::TurnError::code) {
            None if outcome.is_completed() => "state-ack",
            Some(ErrorCode::StaleState) => "state-stale",
            _ => return Err(format!("turn {turn} did not complete: {outcome:?}").into()),
        };
        if !messages_stored.load(Ordering::SeqCst) {
            return Err(
                format!("turn {turn} ended before its executor stored its messages").into(),
            );
        }
        let verdict = if contested_stored.load(Ordering::SeqCst) {
            "ack"
        } else {
            "refused"
        };
        let mut stdout = std::io::stdout().lock();
        // The messages were stored by calls that returned, whatever became of the state.
        writeln!(stdout, "ack w{worker}-{turn}")?;
        writeln!(stdout, "{verdict} contested-{turn}")?;
        writeln!(stdout, "{state} {turn}")?;
        stdout.flush()?;
    }
    Ok(())
}
