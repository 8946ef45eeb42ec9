//! Only `ctx.abort(reason)`, on the middleware's own context, refuses the rest of the pipeline.
//! Aborting anything else — here a spawned task — leaves the turn running, so this path returns
//! `Ok` without running `next`: every turn would fail with E_PIPELINE_SHORT_CIRCUITED.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn warm_cache(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    if history_is_cached(ctx) {
        tokio::spawn(async {}).abort();
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

fn history_is_cached(_: &TurnContext) -> bool {
    false
}

fn main() {}
