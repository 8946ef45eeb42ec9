//! Registering `turn_input` middleware on `dispatch_input`.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

// Stands in for the runner builder's `.dispatch_input(m)` until it exists.
fn register_on_dispatch_input(_: impl adk::pipeline::Middleware<adk::pipeline::DispatchInput>) {}

fn main() {
    register_on_dispatch_input(load_history);
}
