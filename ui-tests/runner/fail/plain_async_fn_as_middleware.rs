//! A plain `async fn` registered as middleware, without `#[adk::middleware]`: the note says to
//! add the attribute.
use adk::TurnContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next};

async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder().turn_input(load_history);
}
