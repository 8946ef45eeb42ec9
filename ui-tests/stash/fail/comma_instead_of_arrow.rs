use adk::{StashKey, stash_key};

const NAMES: StashKey<Vec<String>> = stash_key!("my-org.names", Vec<String>);

fn main() {
    let _ = NAMES.path();
}
