//! A type parameter cannot become a unit struct.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history<T: Default>(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = T::default();
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
