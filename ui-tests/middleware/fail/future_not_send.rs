//! A body holding an `Rc` across `.await` makes a future the runner cannot move between threads.
use std::rc::Rc;

use adk::TurnContext;
use adk::pipeline::{BoxError, Next};

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let shared = Rc::new(1);
    let _ = next.run(ctx).await;
    drop(shared);
    Ok(())
}

fn main() {}
