//! A typed tool's arguments are decoded from the model's JSON: a type without `Deserialize` is
//! refused at `Tool::typed`, once (the builder's later methods add nothing).
use adk::primitives::Tool;

#[derive(schemars::JsonSchema)]
struct Refund {
    order: String,
}

fn main() {
    let _refund = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .at_most_once()
        .idempotent_by(|args: &Refund| args.order.clone())
        .handler(|args: Refund, _| async move { Ok(format!("refunded {}", args.order)) })
        .build();
}
