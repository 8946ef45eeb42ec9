//! Middleware with state implements the trait by hand and sits beside macro middleware.
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, BoxFuture, Middleware, Next, Stack, TurnInput};

struct Greeting {
    text: String,
}

impl Middleware<TurnInput> for Greeting {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        next: Next<'a, TurnContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            if self.text.is_empty() {
                ctx.abort("no greeting configured");
            }
            let _ = next.run(ctx).await;
            Ok(())
        })
    }
}

#[adk::middleware(pipeline = turn_input)]
async fn after_greeting(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(Greeting { text: "hello".to_owned() });
    stack.push(after_greeting);
    assert_eq!(stack.len(), 2);
}
