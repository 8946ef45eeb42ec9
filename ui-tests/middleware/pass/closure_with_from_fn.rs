//! Closures are middleware through `from_fn`, without the attribute, and sit beside macro
//! middleware in one stack.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput, from_fn};

#[adk::middleware(pipeline = turn_input)]
async fn from_macro(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(from_fn(|ctx: &mut TurnContext, next| {
        Box::pin(async move {
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    }));
    stack.push(from_macro);
    assert_eq!(stack.len(), 2);
}
