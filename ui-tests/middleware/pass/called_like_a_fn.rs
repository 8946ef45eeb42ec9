//! A middleware is called like the fn it was written as: one middleware can run another with its
//! own `ctx` and `next`, and the call's error is boxed.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

#[derive(Debug)]
struct HistoryUnavailable;

impl std::fmt::Display for HistoryUnavailable {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("history unavailable")
    }
}

impl std::error::Error for HistoryUnavailable {}

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), HistoryUnavailable> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn load_history_unless_aborted(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    if ctx.is_aborted() {
        return Ok(());
    }
    let result: Result<(), BoxError> = load_history(ctx, next).await;
    result
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(load_history_unless_aborted);
    stack.push(load_history);
}
