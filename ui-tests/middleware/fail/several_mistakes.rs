//! Independent mistakes are all reported in one build.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_inptu)]
fn load_history(next: Next<'_, TurnContext>, ctx: &mut TurnContext) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
