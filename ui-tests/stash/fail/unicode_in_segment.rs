//! A Latin letter with a diacritic gets its ASCII spelling (`größe` → `groesse`); a script
//! with no ASCII spelling gets no guess.
use adk::{StashKey, stash_key};

const SIZE: StashKey<u32> = stash_key!("my-org.größe" => u32);
const AMOUNT: StashKey<u32> = stash_key!("my-org.数量" => u32);

fn main() {
    let _ = (SIZE.path(), AMOUNT.path());
}
