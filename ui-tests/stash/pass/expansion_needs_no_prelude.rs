//! The expansions name everything by absolute path, so they work without the prelude and
//! next to user items called `StashKey` or `adk`.
#![no_implicit_prelude]

mod adk {}

struct StashKey;

mod keys {
    ::adk::stash_keys! {
        /// A key declared without the prelude.
        pub COUNT: "my-org.count" => u32,
    }

    pub const POLICY: ::adk::StashKey<bool> = ::adk::stash_key!("my-org.policy" => bool);
}

fn main() {
    let _shadowing = StashKey;
    let _ = (keys::COUNT.path(), keys::POLICY.path());
}
