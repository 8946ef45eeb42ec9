//! `next.run(ctx)` as a statement, and bound but never awaited.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn as_statement(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    next.run(ctx);
    Ok(())
}

#[adk::middleware(pipeline = turn_output)]
async fn bound_never_awaited(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let pending = next.run(ctx);
    drop(pending);
    Ok(())
}

fn main() {}
