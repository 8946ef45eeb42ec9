//! `next` handed to a helper whose result is never awaited: the helper's future is dropped
//! unrun.
use adk::TurnContext;
use adk::pipeline::{BoxError, Downstream, Next};

async fn run_rest(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Downstream {
    next.run(ctx).await
}

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = run_rest(ctx, next);
    Ok(())
}

fn main() {}
