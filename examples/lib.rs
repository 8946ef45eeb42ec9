//! The examples of `checked-adk` (library `adk`), one file each beside this one; run them from
//! the workspace root with `cargo run --example NAME`. This library is empty: a package needs a
//! target of its own, and the examples are the point.
