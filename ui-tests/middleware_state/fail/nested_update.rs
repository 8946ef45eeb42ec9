// HPD.Agent throws at run time when an update runs inside another update's transform; here the
// borrow checker refuses it: the outer update holds the context mutably.
use adk::middleware_state::MiddlewareState;
use adk::TurnContext;

#[derive(MiddlewareState, Default, Clone)]
struct Failures {
    count: u32,
}

#[derive(MiddlewareState, Default, Clone)]
struct Breaker {
    open: bool,
}

fn record_failure(ctx: &mut TurnContext) {
    let _ = ctx.update_middleware_state::<Failures>(|failures| {
        failures.count += 1;
        let _ = ctx.update_middleware_state::<Breaker>(|breaker| breaker.open = true);
    });
}

fn main() {
    let _ = record_failure;
}
