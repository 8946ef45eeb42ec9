//! `migrate =` names a function of the wrong signature: refused at the path, stating the one it
//! must have.
use adk::middleware_state::MiddlewareState;
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, version = 2, migrate = Plan::upgrade)]
struct Plan {
    steps_done: Vec<String>,
}

impl Plan {
    // Takes the JSON only and returns an Option: neither is a migration's signature.
    fn upgrade(json: serde_json::Value) -> Option<Self> {
        serde_json::from_value(json).ok()
    }
}

fn main() {}
