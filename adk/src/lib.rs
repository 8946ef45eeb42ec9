//! # adk — an agent development kit whose wiring mistakes are caught by `cargo check`
//!
//! A turn runs through four pipelines of middleware around an executor (the model call):
//! `turn_input` → dispatch loop (`dispatch_input` → executor → `dispatch_output`) → `turn_output`.
//! The runner itself has no behaviour: middleware loads history, retrieves and enforces policy,
//! a [`StorageAdapter`](storage::StorageAdapter) persists six primitives, and middleware passes
//! state sideways through the [stash](stash).
//!
//! Where the TypeScript original checks its wiring when the runner is built, adk checks it when
//! your crate compiles:
//! - [`stash_key!`] declares typed keys over the untyped stash and rejects malformed paths;
//! - `storage_adapter!` rejects a missing callback or a wrong signature;
//! - `#[middleware]` makes middleware that only fits its own pipeline.

// Lets the macros' `::adk::...` paths resolve inside this crate's own tests and doc-tests.
extern crate self as adk;

pub mod bytes;
pub mod primitives;
pub mod stash;
pub mod storage;

pub use stash::{Registry, StashError, StashKey};

/// Declares a typed key over the stash, checked at compile time.
///
/// ```
/// const COUNT: adk::StashKey<u32> = adk::stash_key!("my-org.count" => u32);
/// let mut stash = adk::Registry::new();
/// stash.set(COUNT, 5).unwrap();
/// assert_eq!(stash.get(COUNT).unwrap(), Some(5));
/// ```
pub use adk_macros::stash_key;

/// Declares a group of typed stash keys at once, rejecting duplicates and parent/child collisions.
///
/// ```
/// adk::stash_keys! {
///     /// How many chunks retrieval produced.
///     pub CHUNKS: "my-org.retrieval.chunks" => u32,
///     pub POLICY: "my-org.policy" => String,
/// }
/// assert_eq!(CHUNKS.path(), "my-org.retrieval.chunks");
/// ```
pub use adk_macros::stash_keys;
