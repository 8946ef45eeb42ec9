use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(default_on_mismatch)]
struct Breaker {
    failures: u32,
}

fn main() {}
