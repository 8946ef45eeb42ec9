//! The attribute without its pipeline says the four choices and the syntax.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
