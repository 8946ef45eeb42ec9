use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(persistent)]
struct Progress {
    completed_steps: u32,
}

fn main() {}
