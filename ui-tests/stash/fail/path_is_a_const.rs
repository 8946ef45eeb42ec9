use adk::{StashKey, stash_key};

const COUNT_PATH: &str = "my-org.count";
const COUNT: StashKey<u32> = stash_key!(COUNT_PATH => u32);

fn main() {
    let _ = COUNT.path();
}
