use adk::state::StateKey;
use adk::state::contention::Add;

const NAME: StateKey<String, Add> = adk::state_key!("app:name" => String, on_conflict = add);

fn main() {
    let _ = NAME;
}
