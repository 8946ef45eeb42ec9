//! The same mistake with the handler written as an `async fn`.
use adk::primitives::{Tool, ToolError, ToolInvocation};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Cancel {
    order: String,
}

async fn cancel(args: Cancel, _invocation: ToolInvocation) -> Result<String, ToolError> {
    Ok(format!("cancelled {}", args.order))
}

fn main() {
    let _refund = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .at_most_once()
        .handler(cancel)
        .build();
}
