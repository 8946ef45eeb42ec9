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
