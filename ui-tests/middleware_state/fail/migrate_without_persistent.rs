use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(version = 2, migrate = Breaker::upgrade)]
struct Breaker {
    failures: u32,
}

impl Breaker {
    fn upgrade(_from: u32, _json: serde_json::Value) -> Result<Self, String> {
        Ok(Self::default())
    }
}

fn main() {}
