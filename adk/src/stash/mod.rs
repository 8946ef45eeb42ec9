//! The stash: a per-context scratchpad of JSON values addressed by dot-paths.
//!
//! PLACEHOLDER — owned by the stash work; see issue 2.

mod key;

pub use key::StashKey;

/// Placeholder; replaced by the real registry.
#[derive(Debug, Default, Clone)]
pub struct Registry;

/// Placeholder; replaced by the real error.
#[derive(Debug, thiserror::Error)]
#[error("placeholder")]
pub struct StashError;
