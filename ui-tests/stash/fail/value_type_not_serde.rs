//! A key type that is not serde data (`Instant`) is refused at the declaration, not at its
//! first `get` or `set`.
use std::time::Instant;

use adk::{StashKey, stash_key};

const STARTED: StashKey<Instant> = stash_key!("my-org.started-at" => Instant);

fn main() {
    let _ = STARTED.path();
}
