use adk::state::StateKey;
use adk::state::contention::Add;

const VISITS: StateKey<u64, Add> = adk::state_key!("app:visits" => u64, on_conflict = ad);

fn main() {
    let _ = VISITS;
}
