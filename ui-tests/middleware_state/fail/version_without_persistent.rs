use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(version = 2)]
struct Breaker {
    failures: u32,
}

fn main() {}
