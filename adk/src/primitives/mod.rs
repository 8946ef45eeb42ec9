//! The six persisted primitives and their byte readers. PLACEHOLDER — issue 3.
