//! A `let next` that shadows the parameter is another value; the parameter is never run.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let next = ctx.is_aborted();
    if next {
        return Err("aborted".into());
    }
    Ok(())
}

fn main() {}
