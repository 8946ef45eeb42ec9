use adk::middleware_state::{MiddlewareState, Persistence};

#[derive(MiddlewareState, Default, Clone)]
struct Breaker {
    failures: u32,
}

fn main() {
    assert_eq!(Breaker::PERSISTENCE, Persistence::Transient);
    assert_eq!(Breaker::VERSION, 1);
    assert!(Breaker::KEY.ends_with("::Breaker"), "{}", Breaker::KEY);
    assert!(!Breaker::DEFAULT_ON_MISMATCH);
}
