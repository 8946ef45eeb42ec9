//! After a macro error, calling the middleware like a fn (as a wrapper or a unit test does) adds
//! no second error: only the mistyped pipeline is reported.
use adk::DispatchContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = dispatch_inptu)]
async fn load_history(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[adk::middleware(pipeline = dispatch_output)]
async fn wraps_load_history(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
    load_history(ctx, next).await
}

fn main() {}
