use adk::middleware_state::MiddlewareState;
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, scope = branch)]
struct Progress {
    completed_steps: u32,
}

fn main() {}
