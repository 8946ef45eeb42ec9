//! `stash_keys!` carries docs, attributes and every visibility onto the generated consts.
#![deny(warnings, missing_docs)]

//! Crate docs, required by `missing_docs`.

mod keys {
    use std::collections::HashMap;

    adk::stash_keys! {
        /// How many chunks retrieval produced.
        pub CHUNKS: "my-org.retrieval.chunks" => u32,
        /// The policy in force for this turn.
        #[allow(dead_code)]
        pub(crate) POLICY: "my-org.policy" => String,
        /// Scores by document id.
        pub(super) SCORES: "my-org.retrieval.scores" => HashMap<String, f64>,
        /// Private to this module.
        PRIVATE: "my-org.private" => (u8, Vec<bool>),
        /// Shares a prefix with `POLICY` but not a dot boundary.
        pub POLICY_MODE: "my-org.policy-mode" => bool
    }

    pub(crate) fn private_path() -> &'static str {
        PRIVATE.path()
    }
}

/// Keys can also be associated consts of a type.
pub struct Retrieval;

impl Retrieval {
    adk::stash_keys! {
        /// Documents kept after ranking.
        pub KEPT: "my-org.retrieval.kept" => Vec<String>,
    }
}

fn main() {
    adk::stash_keys! {
        LOCAL: "my-org.local" => i64,
    }
    assert_eq!(keys::CHUNKS.path(), "my-org.retrieval.chunks");
    assert_eq!(keys::POLICY.path(), "my-org.policy");
    assert_eq!(keys::SCORES.path(), "my-org.retrieval.scores");
    assert_eq!(keys::POLICY_MODE.path(), "my-org.policy-mode");
    assert_eq!(keys::private_path(), "my-org.private");
    assert_eq!(LOCAL.path(), "my-org.local");
    assert_eq!(Retrieval::KEPT.path(), "my-org.retrieval.kept");
}
