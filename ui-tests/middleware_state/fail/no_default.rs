use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Clone)]
struct Breaker {
    failures: u32,
}

fn main() {}
