//! The expansion uses absolute paths: shadowing prelude names in the user's module changes nothing.
#![deny(warnings)]
#![allow(dead_code)]

use adk::TurnContext;
use adk::pipeline::{Next, Stack, TurnInput};

struct Box;
struct Clone;
struct Copy;
struct Debug;
struct Default;
struct Ok;
struct Into;

#[adk::middleware(pipeline = turn_input)]
async fn tolerant(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> core::result::Result<(), adk::pipeline::BoxError> {
    let _ = next.run(ctx).await;
    core::result::Result::Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(tolerant);
    assert_eq!(stack.len(), 1);
}
