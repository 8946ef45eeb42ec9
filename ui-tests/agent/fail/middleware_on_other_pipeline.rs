//! Registering `turn_input` middleware on `dispatch_input` through the `Agent` facade: the same
//! compile error as on the runner's builder.
use adk::Agent;
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn greet(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = Agent::builder("helper").dispatch_input(greet);
}
