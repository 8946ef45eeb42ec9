use adk::state::StateKey;

const THEME: StateKey<String> = adk::state_key!("user:" => String);

fn main() {
    let _ = THEME;
}
