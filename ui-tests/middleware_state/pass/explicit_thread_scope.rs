use adk::middleware_state::{MiddlewareState, Persistence, StateScope};
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, scope = thread)]
struct Progress {
    completed_steps: u32,
}

fn main() {
    assert_eq!(Progress::PERSISTENCE, Persistence::Persistent(StateScope::Thread));
}
