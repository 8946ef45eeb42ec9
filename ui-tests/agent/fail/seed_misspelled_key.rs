//! Seeding the stash through a typed key: a misspelled key does not compile (a misspelled path
//! in `.stash(json!(..))` would be silently ignored).
use adk::context::RawTurnContext;

adk::stash_keys! {
    BUDGET_LIMIT: "my-agent.budget.limit" => u32,
}

fn main() {
    let _ = RawTurnContext::new("c", "p").seed(BUDGET_LIMT, 2);
}
