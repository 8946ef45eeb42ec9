//! A syntax error inside the body (what an IDE sees while the user types) gives rustc's own
//! error only: the struct and its impls are still emitted, so the registration stays quiet.
use adk::TurnContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let limit = ;
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder().turn_input(load_history);
}
