// An idempotency key is derived from the tool's own arguments: a closure over another type is
// refused where it is written.
use adk::primitives::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    invoice: String,
}

fn main() {
    let _refund = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .idempotent_by(|args: &Payment| args.invoice.clone())
        .handler(|args: Refund, _| async move { Ok(format!("refunded {}", args.order)) })
        .build();
}
