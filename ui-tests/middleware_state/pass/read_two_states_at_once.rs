// Several states read together under one shared borrow, then written one after the other.
use adk::middleware_state::MiddlewareState;
use adk::TurnContext;

#[derive(MiddlewareState, Default, Clone)]
struct Failures {
    count: u32,
}

#[derive(MiddlewareState, Default, Clone)]
struct Limit {
    max: u32,
}

fn decide(ctx: &mut TurnContext) -> Result<bool, adk::middleware_state::MiddlewareStateError> {
    let states = ctx.middleware_states();
    let (failures, limit) = (states.get::<Failures>(), states.get::<Limit>());
    let open = failures.map_or(0, |f| f.count) >= limit.map_or(3, |l| l.max);
    ctx.update_middleware_state::<Failures>(|failures| failures.count += 1)?;
    Ok(open)
}

fn main() {
    let _ = decide;
}
