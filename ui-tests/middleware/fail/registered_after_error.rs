//! After a macro error, registering the middleware adds no second error.
use adk::TurnContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = ctx;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder().turn_input(load_history);
}
