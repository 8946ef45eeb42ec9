//! Returning the error type itself instead of a `Result`.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> BoxError {
    let _ = next.run(ctx).await;
    "done".into()
}

fn main() {}
