//! Guides, rendered from `docs/` so every example in them is compiled and run as a doc-test.

#[doc = include_str!("../../docs/getting-started.md")]
pub mod getting_started {}

#[doc = include_str!("../../docs/middleware.md")]
pub mod middleware {}

/// The README's examples, compiled and run so the front page cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;
