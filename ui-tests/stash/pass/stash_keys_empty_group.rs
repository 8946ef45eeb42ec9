//! An empty group is allowed, so keys can be added one at a time.
adk::stash_keys! {}

fn main() {}
