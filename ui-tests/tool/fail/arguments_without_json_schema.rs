//! A typed tool's schema is derived from its argument type: a type without `JsonSchema` is
//! refused at `Tool::typed`.
use adk::primitives::Tool;

#[derive(serde::Deserialize)]
struct Refund {
    order: String,
}

fn main() {
    let _refund = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .at_most_once()
        .handler(|args: Refund, _| async move { Ok(format!("refunded {}", args.order)) })
        .build();
}
