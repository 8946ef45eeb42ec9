use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default)]
struct Breaker {
    failures: u32,
}

fn main() {}
