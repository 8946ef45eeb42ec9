//! A `StashKey<u32>` reads only a `u32`.
use adk::{Registry, StashKey};

const COUNT: StashKey<u32> = StashKey::__from_checked_literal("my-org.count");

fn main() {
    let stash = Registry::new();
    let count: Option<String> = stash.get(COUNT).unwrap_or_default();
    let _ = count;
}
