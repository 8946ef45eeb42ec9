use adk::middleware_state::{MiddlewareState, Persistence, StateScope};
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, scope = session)]
struct Permissions {
    always_allowed: Vec<String>,
}

fn main() {
    assert_eq!(Permissions::PERSISTENCE, Persistence::Persistent(StateScope::Session));
}
