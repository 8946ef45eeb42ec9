//! Guides, rendered from `docs/` so every example in them is compiled and run as a doc-test.
//!
//! `adk/docs` is a symbolic link to the workspace's `docs/`: the guides stay where the README
//! links them, and `cargo package` copies them into the published crate, where these
//! `include_str!` paths must resolve.

#[doc = include_str!("../docs/getting-started.md")]
pub mod getting_started {}

#[doc = include_str!("../docs/middleware.md")]
pub mod middleware {}

#[doc = include_str!("../docs/dispatch.md")]
pub mod dispatch {}

#[doc = include_str!("../docs/tools.md")]
pub mod tools {}

#[doc = include_str!("../docs/gates.md")]
pub mod gates {}

#[doc = include_str!("../docs/durability.md")]
pub mod durability {}

#[doc = include_str!("../docs/context.md")]
pub mod context {}

#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
#[doc = include_str!("../docs/observability.md")]
pub mod observability {}

/// The README's examples, compiled and run so the front page cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;
