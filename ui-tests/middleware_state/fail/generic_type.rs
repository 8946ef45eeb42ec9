use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
struct Window<T> {
    items: Vec<T>,
}

fn main() {}
