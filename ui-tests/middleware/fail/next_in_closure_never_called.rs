//! `next` moved into a closure that is never called: the chain never runs.
use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let run_rest = move || next.run(ctx);
    println!("history loaded");
    Ok(())
}

fn main() {}
