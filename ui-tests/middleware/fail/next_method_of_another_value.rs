//! `iter().next()` is a method named `next`, not a use of the `next` parameter.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn first_tag(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let tags = ["support", "billing"];
    let first = tags.iter().next();
    let _ = (ctx, first);
    Ok(())
}

fn main() {}
