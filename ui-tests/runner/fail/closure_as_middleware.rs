//! A closure given straight to `.turn_input(..)`: a note names the fix (`from_fn`).
use adk::TurnRunner;
use adk::context::TurnContext;
use adk::pipeline::{BoxError, Next};

fn main() {
    let _ = TurnRunner::builder().turn_input(|ctx: &mut TurnContext, next: Next<'_, TurnContext>| async move {
        let _ = next.run(ctx).await;
        Ok::<(), BoxError>(())
    });
}
