//! Registering `tool_execution` middleware on `turn_input`.
use adk::ToolContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = tool_execution)]
async fn audit_calls(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder().turn_input(audit_calls);
}
