//! A misspelt argument key gets a suggestion.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
