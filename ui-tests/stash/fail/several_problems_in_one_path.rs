use adk::{StashKey, stash_key};

// Every problem of the path is reported in one build, each with its own fix.
const COUNT: StashKey<u32> = stash_key!("my org..items.0" => u32);

fn main() {
    let _ = COUNT.path();
}
