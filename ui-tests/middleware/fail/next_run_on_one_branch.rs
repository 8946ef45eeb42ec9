//! The chain runs when the condition holds; otherwise the middleware returns `Ok` without
//! running it, aborting or failing. Each unsettled path is reported where it leaves.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn if_without_else(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    if !history_is_cached(ctx) {
        let _ = next.run(ctx).await;
    }
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn early_return(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    if history_is_cached(ctx) {
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = turn_input)]
async fn one_match_arm(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    match history_is_cached(ctx) {
        false => {
            let _ = next.run(ctx).await;
        }
        true => {}
    }
    Ok(())
}

fn history_is_cached(_: &TurnContext) -> bool {
    false
}

fn main() {}
