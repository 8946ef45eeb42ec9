use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
enum Mode {
    #[default]
    Open,
    Closed,
}

fn main() {}
