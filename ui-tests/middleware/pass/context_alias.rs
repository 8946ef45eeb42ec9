//! Aliases of the right context pass; the type system checks what the macro cannot see.
#![deny(warnings)]

use adk::pipeline::{BoxError, Next, Stack, TurnInput};

type Ctx = adk::TurnContext;
type Outcome = Result<(), BoxError>;

#[adk::middleware(pipeline = turn_input)]
async fn aliased(ctx: &mut Ctx, next: Next<'_, Ctx>) -> Outcome {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(aliased);
    assert_eq!(stack.len(), 1);
}
