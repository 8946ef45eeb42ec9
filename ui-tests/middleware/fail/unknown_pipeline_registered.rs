//! A misspelt pipeline gives the did-you-mean error only: the registration stays quiet.
use adk::DispatchContext;
use adk::TurnRunner;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = dispatch_inptu)]
async fn pack_prompt(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = TurnRunner::builder().dispatch_input(pack_prompt);
}
