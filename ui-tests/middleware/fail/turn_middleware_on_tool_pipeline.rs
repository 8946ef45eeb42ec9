//! Registering `turn_input` middleware on `tool_execution`.
use adk::TurnContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder().tool_execution(load_history);
}
