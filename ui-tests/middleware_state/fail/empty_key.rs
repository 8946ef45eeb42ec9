use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(key = "")]
struct Breaker {
    failures: u32,
}

fn main() {}
