use adk::middleware_state::MiddlewareState;
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, default_on_mismatch)]
struct Cache {
    hits: u64,
}

fn main() {
    assert!(Cache::DEFAULT_ON_MISMATCH);
}
