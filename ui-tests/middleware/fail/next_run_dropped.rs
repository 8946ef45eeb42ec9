//! `drop(next.run(ctx))` throws the future away unawaited.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    drop(next.run(ctx));
    Ok(())
}

fn main() {}
