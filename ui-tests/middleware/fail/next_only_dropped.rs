//! Dropping `next` is not running it: the pipeline short-circuits.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = ctx;
    drop(next);
    Ok(())
}

fn main() {}
