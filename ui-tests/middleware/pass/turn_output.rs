//! `turn_output` middleware with a post-step only.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnOutput};

#[adk::middleware(pipeline = turn_output)]
async fn filter_output(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    if ctx.is_aborted() {
        return Err("the output was withheld".into());
    }
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnOutput>::new();
    stack.push(filter_output);
    assert_eq!(stack.len(), 1);
}
