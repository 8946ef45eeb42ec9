//! `dispatch_input` middleware, naming the context through the crate root path.
#![deny(warnings)]

use adk::pipeline::{BoxError, DispatchInput, Next, Stack};

#[adk::middleware(pipeline = dispatch_input)]
async fn pack_prompt(
    ctx: &mut adk::DispatchContext,
    next: Next<'_, adk::DispatchContext>,
) -> Result<(), BoxError> {
    if ctx.is_aborted() {
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let mut stack = Stack::<DispatchInput>::new();
    stack.push(pack_prompt);
    assert_eq!(stack.len(), 1);
}
