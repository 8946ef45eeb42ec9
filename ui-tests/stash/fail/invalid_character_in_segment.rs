use adk::{StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!("my-org.retrieval/count" => u32);

fn main() {
    let _ = COUNT.path();
}
