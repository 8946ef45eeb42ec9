// Each way of declaring a typed tool's effect builds, before or after the handler; an untyped
// tool builds without one (it is at-most-once).
use adk::primitives::{EffectKind, Tool, ToolEffect};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: String,
}

fn refund() -> adk::primitives::ToolBuilder<
    adk::primitives::ToolHandler,
    adk::primitives::Typed<Refund>,
> {
    Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .handler(|args: Refund, _| async move { Ok(format!("refunded {}", args.order)) })
}

fn main() -> Result<(), adk::primitives::PrimitiveError> {
    let keyed = refund().idempotent_by(|args: &Refund| format!("refund-{}", args.order)).build()?;
    assert_eq!(keyed.effect().kind(), EffectKind::Idempotent);
    let _ = refund().read_only().build()?;
    let _ = refund().at_most_once().build()?;
    let _ = refund().idempotent_on_arguments().build()?;
    let _ = refund().idempotent_per_call().build()?;
    let _ = refund().effect(ToolEffect::at_most_once()).build()?;
    let untyped = Tool::builder("ping")
        .description("Pings.")
        .handler(|_, _| async { Ok("pong") })
        .build()?;
    assert_eq!(untyped.effect().kind(), EffectKind::AtMostOnce);
    Ok(())
}
