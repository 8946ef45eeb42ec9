//! `tool_execution` middleware: refusing or answering settles the call without running `next`.
use adk::ToolContext;
use adk::TurnRunner;
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, Next};
use adk::storage::NoopStorage;

#[adk::middleware(pipeline = tool_execution)]
async fn only_small_refunds(ctx: &mut ToolContext, next: Next<'_, ToolContext>) -> Result<(), BoxError> {
    if ctx.args()["amount"].as_u64() > Some(100) {
        ctx.refuse("refunds over 100 need a human");
        return Ok(());
    }
    if ctx.tool_name() == "ping" {
        ctx.respond("pong");
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut adk::DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .tool_execution(only_small_refunds)
        .build();
}
