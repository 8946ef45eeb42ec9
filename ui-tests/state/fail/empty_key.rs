use adk::state::StateKey;

const NOTHING: StateKey<u32> = adk::state_key!("" => u32);

fn main() {
    let _ = NOTHING;
}
