use adk::middleware_state::MiddlewareState;
use serde::{Deserialize, Serialize};

#[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
#[middleware_state(persistent, version = 2, migrate = Plan::upgrade)]
struct Plan {
    steps_done: Vec<String>,
}

impl Plan {
    // Version 1 stored a count; version 2 names the steps.
    fn upgrade(from_version: u32, json: serde_json::Value) -> Result<Self, String> {
        match from_version {
            1 => Ok(Self {
                steps_done: vec!["(unnamed)".to_owned(); json["count"].as_u64().unwrap_or(0) as usize],
            }),
            other => Err(format!("no migration from version {other}")),
        }
    }
}

fn main() {
    assert_eq!(Plan::VERSION, 2);
}
