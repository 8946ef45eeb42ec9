//! The same in a middleware, through `TurnContext::wait_for`, with the type named in a turbofish.
//! The first error is at the type; rustc repeats it for the call and its `.await` (the bound of
//! an `async fn` is checked for each), in the same words.
use adk::TurnContext;
use adk::gate::GateRequest;
use adk::pipeline::{BoxError, Next};

struct Approval {
    approved: bool,
}

#[adk::middleware(pipeline = turn_input)]
async fn approve(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let approval = ctx
        .wait_for::<Approval>(GateRequest::new("approve-turn", "a human approves each turn"))
        .await?;
    if !approval.approved {
        ctx.abort("the turn was not approved");
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {}
