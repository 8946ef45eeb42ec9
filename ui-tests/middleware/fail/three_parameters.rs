//! An extra parameter after `next`.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>, limit: usize) -> Result<(), BoxError> {
    let _ = limit;
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
