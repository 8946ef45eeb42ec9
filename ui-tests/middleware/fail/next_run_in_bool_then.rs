//! `cond.then(|| next.run(ctx))` makes the chain's future and drops it unrun.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let enabled = !ctx.is_aborted();
    enabled.then(|| next.run(ctx));
    Ok(())
}

fn main() {}
