//! A dispatch context on a turn pipeline, caught from the type's name.
use adk::pipeline::{BoxError, Next};
use adk::DispatchContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
