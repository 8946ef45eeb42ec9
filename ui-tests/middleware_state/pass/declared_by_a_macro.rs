// A derive inside a `macro_rules!` expansion: the generated code's own names (`self`, the
// migration's arguments) must not take the caller's hygiene.
use adk::middleware_state::MiddlewareState;
use serde::{Deserialize, Serialize};

macro_rules! counter {
    ($name:ident) => {
        #[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
        #[middleware_state(persistent, version = 2, migrate = $name::upgrade)]
        struct $name {
            count: u64,
        }

        impl $name {
            fn upgrade(_from_version: u32, _json: serde_json::Value) -> Result<Self, String> {
                Ok(Self::default())
            }
        }
    };
}

counter!(Requests);
counter!(Retries);

fn main() {
    assert_ne!(Requests::KEY, Retries::KEY);
}
