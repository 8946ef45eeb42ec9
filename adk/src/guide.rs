//! Guides, rendered from `docs/` so every example in them is compiled and run as a doc-test.

#[doc = include_str!("../../docs/getting-started.md")]
pub mod getting_started {}

#[doc = include_str!("../../docs/middleware.md")]
pub mod middleware {}
