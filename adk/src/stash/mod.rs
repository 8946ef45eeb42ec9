//! The stash: a per-context scratchpad of JSON values addressed by dot-paths.
//!
//! This module owns the [`Registry`] (the nested store), [`StashKey`] (a typed path checked at
//! compile time), the [`StashPath`] forms a path can take, and [`StashError`].
//!
//! The guide below is `docs/stash.md`.
//!
#![doc = include_str!("../../docs/stash.md")]

mod error;
mod key;
mod path;
mod registry;
mod serialize;
mod shape;

pub use error::{JsonKind, KeyLocation, KeyProblem, RejectedValue, StashError};
pub use key::StashKey;
pub use path::StashPath;
pub use registry::Registry;

/// The deepest a stash tree may nest: 64 levels, counting the segments of a value's path plus
/// the containers (objects and arrays) nested inside the value.
///
/// `set("a.b", json!({"c": [1]}))` uses 4 levels: `a`, `b`, the object, the array. Paths,
/// values and seeds beyond the limit are refused with a [`StashError`]. The limit keeps every
/// stored tree safe to clone, compare, drop and serialize on a 2 MiB tokio worker stack (those
/// operations recurse once per level in serde_json), and leaves room for a stash persisted as
/// JSON text to be parsed back under serde_json's own limit of 128 levels.
///
/// ```
/// use adk::stash::MAX_DEPTH;
///
/// let mut stash = adk::Registry::new();
/// let deepest = vec!["a"; MAX_DEPTH].join(".");
/// assert!(stash.set(deepest.as_str(), 1).is_ok());
/// let too_deep = vec!["a"; MAX_DEPTH + 1].join(".");
/// assert!(stash.set(too_deep.as_str(), 1).is_err());
/// ```
pub const MAX_DEPTH: usize = 64;

/// Checks every stash key the program declares with `stash_key!` or `stash_keys!`, wherever it
/// is declared: no path with two types, no path declared twice at two places, no path under
/// another declared path (setting the parent would replace the child's value). The runner runs
/// this when it is built, in every build profile (`try_build` returns the report); [`assert_declared_keys_agree`] is the one-line test.
///
/// ```rust,standalone_crate
/// const COUNT: adk::StashKey<u32> = adk::stash_key!("my-org.count" => u32);
/// const TOTAL: adk::StashKey<u64> = adk::stash_key!("my-org.total" => u64);
///
/// assert!(adk::stash::check_declared_keys().is_ok());
/// ```
pub fn check_declared_keys() -> Result<(), crate::declarations::Conflicts> {
    crate::declarations::check(crate::declarations::DeclarationKind::STASH_KEY)
}

/// Panics with the report of [`check_declared_keys`] when two declared stash keys disagree.
/// Call it from one test of your suite, `#[test] fn stash_keys_agree()`:
///
/// ```
/// adk::stash::assert_declared_keys_agree();
/// ```
///
/// # Panics
///
/// When two declarations disagree; the message names both, with their `file:line`.
#[track_caller]
pub fn assert_declared_keys_agree() {
    if let Err(conflicts) = check_declared_keys() {
        panic!("{conflicts}");
    }
}
