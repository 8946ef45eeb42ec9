//! An error type that does not convert into `BoxError`.
use adk::pipeline::Next;
use adk::TurnContext;

#[derive(Debug)]
struct NotAnError;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), NotAnError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
