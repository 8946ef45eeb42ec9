//! A method, with `self`.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

struct Loader;

impl Loader {
    #[adk::middleware(pipeline = turn_input)]
    async fn load_history(&self, ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
        let _ = next.run(ctx).await;
        Ok(())
    }
}

fn main() {
    let _ = Loader;
}
