//! A typed key fixes the type on both sides; a string path lets the caller choose it.
#![deny(warnings)]

use adk::{Registry, StashError, StashKey};

// Built by hand only in tests: users write `adk::stash_key!("my-org.count" => u32)`.
const COUNT: StashKey<u32> = StashKey::__from_checked_literal("my-org.count");

fn main() -> Result<(), StashError> {
    let mut stash = Registry::new();
    stash.set(COUNT, 5)?;
    let count = stash.get(COUNT)?;
    let _: Option<u32> = count;

    let as_u64 = stash.get::<u64>("my-org.count")?;
    let as_f64: Option<f64> = stash.get(String::from("my-org.count"))?;
    let path = String::from("my-org.count");
    let as_json: Option<serde_json::Value> = stash.get(&path)?;
    let _ = (as_u64, as_f64, as_json);

    stash.set("my-org.label", "any serializable value")?;
    assert!(stash.has(COUNT) && stash.has("my-org.label"));
    Ok(())
}
