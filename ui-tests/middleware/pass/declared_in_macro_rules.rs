//! `#[middleware]` on fns written by a `macro_rules!` macro: the generated code still finds its
//! own `ctx` and `next` (the user's tokens carry the macro's hygiene).
#![deny(warnings)]

use adk::TurnContext;
use adk::pipeline::{BoxError, Next, Stack, TurnInput};

macro_rules! pass_through {
    ($($name:ident),*) => {$(
        #[adk::middleware(pipeline = turn_input)]
        async fn $name(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
            let _ = next.run(ctx).await;
            Ok(())
        }
    )*};
}

pass_through!(first_step, second_step);

fn main() {
    let mut stack = Stack::<TurnInput>::new();
    stack.push(first_step);
    stack.push(second_step);
}
