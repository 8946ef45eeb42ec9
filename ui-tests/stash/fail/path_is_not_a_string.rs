use adk::{StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!(42 => u32);

fn main() {
    let _ = COUNT.path();
}
