//! A dispatch context behind an alias, caught by the type system at the alias.
use adk::DispatchContext;
use adk::pipeline::{BoxError, Next};

type Ctx = DispatchContext;

#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut Ctx, next: Next<'_, Ctx>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
