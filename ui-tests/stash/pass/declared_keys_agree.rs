//! Keys declared with `stash_key!` and `stash_keys!` are collected program-wide; a program
//! whose keys agree passes the one-line check.
#![forbid(unsafe_code)]
#![deny(warnings)]

use adk::{StashKey, stash_key, stash_keys};

const COUNT: StashKey<u32> = stash_key!("my-org.count" => u32);

stash_keys! {
    pub NAMES: "my-org.names" => Vec<String>,
}

fn main() {
    adk::stash::assert_declared_keys_agree();
    let declared: Vec<&str> = adk::declarations::all(adk::declarations::DeclarationKind::STASH_KEY)
        .map(|declaration| declaration.path)
        .collect();
    assert!(declared.contains(&COUNT.path()));
    assert!(declared.contains(&NAMES.path()));
}
