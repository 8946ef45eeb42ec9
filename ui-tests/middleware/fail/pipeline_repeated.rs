//! The `pipeline` key given twice.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input, pipeline = turn_output)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
