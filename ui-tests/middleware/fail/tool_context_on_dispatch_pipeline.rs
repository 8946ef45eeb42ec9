//! A tool call's context on a dispatch pipeline, caught from the type's name.
use adk::pipeline::{BoxError, Next};
use adk::ToolContext;

#[adk::middleware(pipeline = dispatch_input)]
async fn audit_calls(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
