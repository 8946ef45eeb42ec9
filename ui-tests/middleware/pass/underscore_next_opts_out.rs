//! A middleware that refuses on purpose names its parameter `_next` and aborts.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

#[adk::middleware(pipeline = turn_input)]
async fn refuse_everything(ctx: &mut TurnContext, _next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    ctx.abort("this deployment is read-only");
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(refuse_everything);
    assert_eq!(stack.len(), 1);
}
