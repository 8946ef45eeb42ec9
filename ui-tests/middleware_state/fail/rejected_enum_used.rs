// A rejected derive is the only error: the uses below type-check against the bare impl the
// rejected derive still writes, so none of them adds "`Mode` is not middleware state".
use adk::middleware_state::MiddlewareState;
use adk::TurnContext;

#[derive(MiddlewareState, Default, Clone)]
enum Mode {
    #[default]
    Open,
    Closed,
}

fn close(ctx: &mut TurnContext) -> Result<bool, adk::middleware_state::MiddlewareStateError> {
    let was_open = matches!(ctx.middleware_state::<Mode>(), Some(Mode::Open));
    ctx.update_middleware_state::<Mode>(|mode| *mode = Mode::Closed)?;
    Ok(was_open)
}

fn main() {
    let _ = close;
    let _ = Mode::KEY;
}
