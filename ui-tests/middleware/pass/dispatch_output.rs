//! `dispatch_output` middleware that awaits `next` in a `return` expression.
#![deny(warnings)]

use adk::DispatchContext;
use adk::pipeline::{BoxError, DispatchOutput, Downstream, Next, Stack};

#[adk::middleware(pipeline = dispatch_output)]
async fn inspect_reply(ctx: &mut DispatchContext, next: Next<'_, DispatchContext>) -> Result<(), BoxError> {
    if ctx.is_aborted() {
        return Ok(());
    }
    let future = next.run(ctx);
    match future.await {
        Downstream::Failed => Err("the rest of the pipeline failed".into()),
        _ => Ok(()),
    }
}

fn main() {
    let mut stack = Stack::<DispatchOutput>::new();
    stack.push(inspect_reply);
    assert_eq!(stack.len(), 1);
}
