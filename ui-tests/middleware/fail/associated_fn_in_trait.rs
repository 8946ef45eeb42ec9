//! A default fn inside a `trait` block: the unit struct cannot go there either.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

pub trait Steps {
    #[adk::middleware(pipeline = turn_input)]
    async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
        let _ = next.run(ctx).await;
        Ok(())
    }
}

fn main() {}
