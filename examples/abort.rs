//! Cancelling a turn mid-dispatch with a `CancellationToken`.
//!
//! The caller gives the turn a token (`RawTurnContext::cancellation`) and cancels it while a
//! slow model is still streaming its answer. The model watches `ctx.cancellation()` and stops at
//! once; the turn ends as aborted, nothing the cancelled iteration did is kept, and the caller
//! sees `TurnStatus::Aborted(AbortReason::Cancelled)`.
//!
//! ```sh
//! cargo run --example abort
//! ```

use std::io::Write;
use std::time::Duration;

use adk::TurnRunner;
use adk::context::{Aborted, CancellationToken, DispatchContext, RawTurnContext};
use adk::dispatch::Executor;
use adk::pipeline::{BoxError, BoxFuture};
use adk::primitives::Message;
use adk::runner::TurnStatus;
use adk::storage::NoopStorage;

/// A model that streams a long answer one word every `pause`.
pub struct SlowModel {
    /// The time between two words.
    pub pause: Duration,
}

const ANSWER: &str = "Once upon a time there was a model that took its time with every single \
                      word, and this answer would take a long while to finish.";

impl Executor for SlowModel {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let cancelled = ctx.cancellation().clone();
            let words: Vec<&str> = ANSWER.split_inclusive(' ').collect();
            for (index, word) in words.iter().enumerate() {
                tokio::select! {
                    () = cancelled.cancelled() => {
                        println!();
                        return Err(Aborted::new("cancelled while streaming").into());
                    }
                    () = tokio::time::sleep(self.pause) => {}
                }
                let content = ctx.report_message("answer-1", word, index + 1 == words.len())?;
                print!("{}", content.delta);
                // A failed flush only delays the words.
                let _ = std::io::stdout().flush();
            }
            println!();
            ctx.store_message(Message::assistant("answer-1", ANSWER)?)
                .await?;
            ctx.ack()?;
            Ok(())
        })
    }
}

/// Starts a turn, cancels it after `cancel_after`, and returns how it ended and how many
/// messages the turn kept.
pub async fn run(pause: Duration, cancel_after: Duration) -> Result<(String, usize), BoxError> {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(SlowModel { pause })
        .build();
    let token = CancellationToken::new();
    let raw = RawTurnContext::new("abort-example", "Take your time.").cancellation(token.clone());
    let turn = tokio::spawn(async move { runner.run(raw).await });

    tokio::time::sleep(cancel_after).await;
    println!("\n[cancelling the turn after {cancel_after:?}]");
    token.cancel();
    let outcome = turn.await??;

    let ended = match &outcome.status {
        TurnStatus::Aborted(reason) => format!("aborted: {reason}"),
        TurnStatus::Completed => "completed before the cancel".to_owned(),
        TurnStatus::DispatchAborted(reason) => format!("the dispatch was aborted: {reason}"),
        TurnStatus::Failed(error) => format!("failed: {}", error.message()),
    };
    let kept = outcome.context.messages.len();
    println!("turn {ended}; messages kept: {kept}");
    Ok((ended, kept))
}

fn main() -> Result<(), BoxError> {
    let quick = std::env::args().any(|arg| arg == "--quick")
        || std::env::var_os("ADK_EXAMPLE_QUICK").is_some();
    let (pause, cancel_after) = if quick {
        (Duration::from_millis(20), Duration::from_millis(70))
    } else {
        (Duration::from_millis(150), Duration::from_millis(1200))
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(pause, cancel_after))?;
    Ok(())
}
