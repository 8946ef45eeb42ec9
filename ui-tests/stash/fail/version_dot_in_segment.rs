use adk::{StashKey, stash_key};

const RETRIES: StashKey<u32> = stash_key!("my-org.gpt-4.1" => u32);

fn main() {
    let _ = RETRIES.path();
}
