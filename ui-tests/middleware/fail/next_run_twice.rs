//! Running the rest of the pipeline twice is a use after move.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
