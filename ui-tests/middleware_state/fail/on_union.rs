use adk::middleware_state::MiddlewareState;

#[derive(MiddlewareState)]
union Bits {
    word: u32,
    bytes: [u8; 4],
}

fn main() {}
