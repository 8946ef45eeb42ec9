//! A `next.run(ctx)` future handed to another future (here a timeout) is the user's to await.
#![deny(warnings)]

use std::time::Duration;

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

#[adk::middleware(pipeline = turn_input)]
async fn with_deadline(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let rest = next.run(ctx);
    let _ = tokio::time::timeout(Duration::from_secs(30), rest).await?;
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(with_deadline);
    assert_eq!(stack.len(), 1);
}
