//! A closure given straight to `.turn_input(..)`: the fix (`from_fn`) leads the notes.
use adk::TurnRunner;
use adk::context::TurnContext;
use adk::pipeline::{BoxError, Next};

fn main() {
    let _ = TurnRunner::builder().turn_input(|ctx: &mut TurnContext, next: Next<'_, TurnContext>| async move {
        let _ = next.run(ctx).await;
        Ok::<(), BoxError>(())
    });
}
