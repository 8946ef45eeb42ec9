//! `stash_key!` is a constant expression of `StashKey<T>` for any `T`.
#![deny(warnings)]

use std::collections::HashMap;

use adk::{StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!("my-org.count" => u32);
static POLICY: StashKey<String> = stash_key!("my-org.policy" => String);
const NAMES: StashKey<Vec<String>> = stash_key!("my-org.retrieval.names" => Vec<String>);
const SCORES: StashKey<HashMap<String, f64>> =
    stash_key!("my-org.scores" => HashMap<String, f64>);
const PAIR: StashKey<(u32, Option<bool>)> = stash_key!("my-org.pair" => (u32, Option<bool>));
const FULL_PATH: StashKey<std::time::Duration> =
    stash_key!("my_org.Budgets.input-tokens_2" => std::time::Duration);
const RAW: StashKey<u8> = stash_key!(r"my-org.raw" => u8);
const MODEL: StashKey<bool> = stash_key!("my-org.gpt-4-1" => bool);

/// A key can feed other constant expressions.
const COUNT_PATH: &str = COUNT.path();

fn main() {
    let local = stash_key!("my-org.local" => i64);
    let inferred: StashKey<u16> = stash_key!("my-org.inferred" => _);
    assert_eq!(local.path(), "my-org.local");
    assert_eq!(inferred.path(), "my-org.inferred");
    assert_eq!(COUNT_PATH, "my-org.count");
    assert_eq!(POLICY.path(), "my-org.policy");
    assert_eq!(NAMES.path(), "my-org.retrieval.names");
    assert_eq!(SCORES.path(), "my-org.scores");
    assert_eq!(PAIR.path(), "my-org.pair");
    assert_eq!(FULL_PATH.path(), "my_org.Budgets.input-tokens_2");
    assert_eq!(RAW.path(), "my-org.raw");
    assert_eq!(MODEL.to_string(), "my-org.gpt-4-1");
}
