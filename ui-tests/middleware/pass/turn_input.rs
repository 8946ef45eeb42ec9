//! The documented shape: pre-step, `next.run(ctx).await`, post-step, on `turn_input`.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

/// Loads the conversation history before the dispatch.
#[adk::middleware(pipeline = turn_input)]
pub async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    if ctx.is_aborted() {
        return Err("the turn was aborted before its history loaded".into());
    }
    let outcome = next.run(ctx).await;
    if !outcome.is_completed() {
        ctx.abort("the history was not committed");
    }
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(load_history);
    // The fn keeps its docs and is an ordinary (`Copy`) value, named as written.
    let copied = load_history;
    stack.push(copied);
    assert_eq!(stack.len(), 2);
    assert_eq!(
        adk::pipeline::Middleware::<TurnInput>::name(&load_history),
        "load_history"
    );
}
