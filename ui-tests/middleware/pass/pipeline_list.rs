//! One function serving both dispatch pipelines.
#![deny(warnings)]

use adk::DispatchContext;
use adk::pipeline::{BoxError, DispatchInput, DispatchOutput, Next, Stack};

#[adk::middleware(pipeline = [dispatch_input, dispatch_output])]
pub(crate) async fn count_iterations(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
    let outcome = next.run(ctx).await;
    if outcome == adk::pipeline::Downstream::Failed {
        ctx.abort("an iteration failed");
    }
    Ok(())
}

fn main() {
    let mut input = Stack::<DispatchInput>::new();
    let mut output = Stack::<DispatchOutput>::new();
    input.push(count_iterations);
    output.push(count_iterations);
    assert_eq!(input.len() + output.len(), 2);
}
