use adk::state::StateKey;

const THEME: StateKey<String> = adk::state_key!(user:theme => String);

fn main() {
    let _ = THEME;
}
