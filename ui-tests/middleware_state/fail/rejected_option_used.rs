// A derive rejected for a misspelled option is the only error: the uses below type-check
// against the bare impl the rejected derive still writes, so none of them adds "`Permissions`
// is not middleware state".
use adk::middleware_state::MiddlewareState;
use adk::TurnContext;

#[derive(MiddlewareState, Default, Clone)]
#[middleware_state(persistant)]
struct Permissions {
    allowed: Vec<String>,
}

fn allow(ctx: &mut TurnContext, tool: &str) -> Result<usize, adk::middleware_state::MiddlewareStateError> {
    let before = ctx.middleware_state::<Permissions>().map_or(0, |permissions| permissions.allowed.len());
    ctx.update_middleware_state::<Permissions>(|permissions| permissions.allowed.push(tool.to_owned()))?;
    Ok(before)
}

fn main() {
    let _ = allow;
    let _ = Permissions::KEY;
}
