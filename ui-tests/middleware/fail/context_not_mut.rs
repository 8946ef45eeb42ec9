//! The context taken by shared reference.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = ctx;
    drop(next);
    Ok(())
}

fn main() {}
