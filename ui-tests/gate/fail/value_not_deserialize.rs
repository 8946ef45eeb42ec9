//! A gate's answer is decoded from JSON: waiting for a type without `Deserialize` is refused at
//! `wait_for`, naming the type and the derive it needs.
use adk::gate::GateRequest;
use adk::primitives::{Tool, ToolInvocation};

struct Approval {
    approved: bool,
}

fn main() {
    let _transfer = Tool::builder("transfer")
        .description("Transfers money once a human approves.")
        .at_most_once()
        .handler(|_args: serde_json::Value, invocation: ToolInvocation| async move {
            let approval: Approval = invocation
                .wait_for(GateRequest::new("confirm-transfer", "a human confirms every transfer"))
                .await?;
            Ok(if approval.approved { "transferred" } else { "declined" })
        })
        .build();
}
