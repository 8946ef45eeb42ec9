//! `next` before the context.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(next: Next<'_, TurnContext>, ctx: &mut TurnContext) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
