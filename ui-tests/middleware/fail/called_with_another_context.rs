//! A `turn_input` middleware called directly from a `dispatch_input` one, with the dispatch's
//! context: it runs only with the context its first pipeline hands it.

use adk::pipeline::{BoxError, Next};
use adk::{DispatchContext, TurnContext};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = dispatch_input)]
async fn trim_prompt(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    load_history(ctx, next).await
}

fn main() {}
