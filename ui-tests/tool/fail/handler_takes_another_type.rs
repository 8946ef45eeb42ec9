//! A typed tool's handler must take the type named in `Tool::typed`: one that takes another
//! struct is refused at the handler, naming the type it must take.
use adk::primitives::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Cancel {
    order: String,
}

fn main() {
    let _refund = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .at_most_once()
        .handler(|args: Cancel, _| async move { Ok(format!("refunded {}", args.order)) })
        .build();
}
