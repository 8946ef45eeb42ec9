use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(persistant)]
struct Permissions {
    allowed: Vec<String>,
}

fn main() {}
