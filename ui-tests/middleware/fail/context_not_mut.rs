//! The context taken by shared reference.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &TurnContext, _next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = ctx;
    Ok(())
}

fn main() {}
