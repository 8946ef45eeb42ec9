//! One function cannot serve a turn pipeline and a dispatch pipeline.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = [turn_input, dispatch_input])]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
