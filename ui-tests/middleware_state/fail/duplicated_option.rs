use adk::middleware_state::MiddlewareState;
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, version = 2)]
#[middleware_state(version = 3)]
struct Plan {
    step: u32,
}

fn main() {}
