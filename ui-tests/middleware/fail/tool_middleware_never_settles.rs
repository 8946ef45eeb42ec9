//! A tool middleware with a path that neither runs `next` nor settles the call.
use adk::pipeline::{BoxError, Next};
use adk::ToolContext;

#[adk::middleware(pipeline = tool_execution)]
async fn only_small_refunds(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
    if ctx.args()["amount"].as_u64() > Some(100) {
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
