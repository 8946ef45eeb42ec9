// A typed tool must say what running it does; `build` without an effect does not compile.
use adk::primitives::Tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order: String,
}

fn main() {
    let _refund = Tool::typed::<Refund>("refund")
        .description("Refunds an order.")
        .handler(|args: Refund, _| async move { Ok(format!("refunded {}", args.order)) })
        .build();
}
