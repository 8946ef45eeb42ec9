//! Whatever deserializes into an owned value can answer a gate: a plain type, a derived struct,
//! raw JSON.
use adk::TurnContext;
use adk::gate::GateRequest;
use adk::pipeline::{BoxError, Next};

#[derive(serde::Deserialize)]
struct Approval {
    approved: bool,
    note: Option<String>,
}

#[adk::middleware(pipeline = turn_input)]
async fn approve(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let approval: Approval = ctx.wait_for(GateRequest::new("approve", "a human approves")).await?;
    let _confirmed = ctx.wait_for::<bool>(GateRequest::new("confirm", "confirm")).await?;
    let _raw: serde_json::Value = ctx.wait_for(GateRequest::new("raw", "anything")).await?;
    let _ = (approval.approved, approval.note);
    let _ = next.run(ctx).await;
    Ok(())
}

fn main() {
    let _ = adk::TurnRunner::builder().turn_input(approve);
}
