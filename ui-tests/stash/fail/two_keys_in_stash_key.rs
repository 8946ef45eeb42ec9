use adk::{StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!("my-org.count" => u32, "my-org.total" => u32);

fn main() {
    let _ = COUNT.path();
}
