//! Closures are middleware through `from_fn`, without the attribute, and sit beside macro
//! middleware in one stack.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, BoxFuture, Next, Stack, TurnInput, from_fn};

// `from_fn` puts no `Fn` bound on its argument, so nothing tells the closure that its future
// borrows both parameters for one lifetime; this identity fn states that signature.
fn turn_closure<F>(closure: F) -> F
where
    F: for<'a> Fn(&'a mut TurnContext, Next<'a, TurnContext>) -> BoxFuture<'a, Result<(), BoxError>>,
{
    closure
}

#[adk::middleware(pipeline = turn_input)]
async fn from_macro(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(from_fn(turn_closure(|ctx, next| {
        Box::pin(async move {
            let _ = next.run(ctx).await;
            Ok(())
        })
    })));
    stack.push(from_macro);
    assert_eq!(stack.len(), 2);
}
