//! An associated fn (no `self`) inside an `impl` block: the unit struct cannot go there.
use adk::pipeline::{BoxError, Next};
use adk::TurnContext;

pub struct Agent;

impl Agent {
    #[adk::middleware(pipeline = turn_input)]
    pub async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
        let _ = next.run(ctx).await;
        Ok(())
    }

    pub fn name(&self) -> &'static str {
        "agent"
    }
}

fn main() {
    let _ = Agent.name();
}
