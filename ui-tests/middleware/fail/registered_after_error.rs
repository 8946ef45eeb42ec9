//! After a macro error, registering the middleware adds no second error.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = ctx;
    Ok(())
}

fn register_on_turn_input(_: impl adk::pipeline::Middleware<adk::pipeline::TurnInput>) {}

fn main() {
    register_on_turn_input(load_history);
}
