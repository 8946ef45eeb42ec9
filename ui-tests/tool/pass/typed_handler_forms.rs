//! Every way of writing a typed tool's handler that takes the right type compiles: a closure
//! with its parameters annotated or not (the invocation's methods still resolve), and an
//! `async fn`.
use adk::primitives::{Tool, ToolError, ToolInvocation};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: String,
}

async fn refund(args: Refund, invocation: ToolInvocation) -> Result<String, ToolError> {
    Ok(format!("refunded {} in {}", args.order, invocation.tool_name()))
}

fn main() -> Result<(), adk::primitives::PrimitiveError> {
    let _annotated = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .at_most_once()
        .handler(|args: Refund, invocation: ToolInvocation| async move {
            Ok(format!("refunded {} in {}", args.order, invocation.tool_name()))
        })
        .build()?;
    let _inferred = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .idempotent_by(|args| args.order.clone())
        .handler(|args, invocation| async move {
            let key = invocation.idempotency_key().unwrap_or_default().to_owned();
            Ok(format!("refunded {} under {key}", args.order))
        })
        .build()?;
    let _function = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .at_most_once()
        .handler(refund)
        .build()?;
    Ok(())
}
