//! A `next.run(ctx)` future stored in a variable that is never awaited or handed on.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let rest = next.run(ctx);
    println!("history loaded");
    Ok(())
}

fn main() {}
