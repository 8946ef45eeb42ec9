//! Middleware must return `Result<(), E>`.
use adk::pipeline::Next;
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) {
    let _ = next.run(ctx).await;
}

fn main() {}
