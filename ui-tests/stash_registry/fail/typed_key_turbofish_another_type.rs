//! Naming another type than the key's is refused at the key.
use adk::{Registry, StashKey};

const COUNT: StashKey<u32> = StashKey::__from_checked_literal("my-org.count");

fn main() {
    let stash = Registry::new();
    let _ = stash.get::<String>(COUNT);
}
