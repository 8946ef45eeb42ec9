use adk::{StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!("my-org.count" =>);

fn main() {
    let _ = COUNT.path();
}
