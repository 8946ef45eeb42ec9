//! A `StashKey<u32>` accepts only a `u32`.
use adk::{Registry, StashKey};

const COUNT: StashKey<u32> = StashKey::__from_checked_literal("my-org.count");

fn main() {
    let mut stash = Registry::new();
    let _ = stash.set(COUNT, "five");
}
