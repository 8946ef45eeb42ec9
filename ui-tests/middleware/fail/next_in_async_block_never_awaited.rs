//! An `async move { next.run(ctx).await }` block that is never awaited.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let rest = async move { next.run(ctx).await };
    println!("history loaded");
    Ok(())
}

fn main() {}
