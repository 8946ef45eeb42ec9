//! Only the context, no `next`.
use adk::pipeline::BoxError;
use adk::DispatchContext;

#[adk::middleware(pipeline = dispatch_input)]
async fn pack_prompt(ctx: &mut DispatchContext) -> Result<(), BoxError> {
    let _ = ctx;
    Ok(())
}

fn main() {}
