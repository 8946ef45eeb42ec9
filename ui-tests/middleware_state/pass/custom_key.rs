use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(key = "acme.circuit_breaker")]
struct Breaker {
    failures: u32,
}

fn main() {
    assert_eq!(Breaker::KEY, "acme.circuit_breaker");
}
