// A rejected derive is the only error, for a generic type too: the uses below type-check
// against the bare impl the rejected derive still writes.
use adk::middleware_state::MiddlewareState;
use adk::TurnContext;

#[derive(MiddlewareState, Default, Clone)]
struct Window<T> {
    items: Vec<T>,
}

fn remember(ctx: &mut TurnContext, item: String) -> usize {
    let _ = ctx.update_middleware_state::<Window<String>>(|window| window.items.push(item));
    ctx.middleware_state::<Window<String>>()
        .map_or(0, |window| window.items.len())
}

fn main() {
    let _ = remember;
}
