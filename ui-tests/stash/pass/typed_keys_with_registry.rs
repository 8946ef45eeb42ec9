//! A key reads and writes its own type through the registry, with no turbofish.
#![deny(warnings)]

use adk::{Registry, StashError, StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!("my-org.retrieval.count" => u32);

adk::stash_keys! {
    /// Documents kept after ranking.
    KEPT: "my-org.retrieval.kept" => Vec<String>,
}

fn main() -> Result<(), StashError> {
    let mut stash = Registry::new();
    stash.set(COUNT, 5u32)?;
    stash.set(&KEPT, vec!["a".to_owned()])?;
    let count = stash.get(COUNT)?;
    let kept = stash.get(KEPT)?;
    assert_eq!(count, Some(5));
    assert_eq!(kept, Some(vec!["a".to_owned()]));
    Ok(())
}
