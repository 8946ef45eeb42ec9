adk::stash_keys! {
    /// Chunks retrieved this turn.
    pub CHUNKS: "my-org.retrieval.count" => u32,
    pub POLICY: "my-org.policy" => String,
    /// Meant to be a different counter, but pasted with the same path.
    pub DOCUMENTS: "my-org.retrieval.count" => u32,
}

fn main() {
    let _ = (CHUNKS.path(), POLICY.path(), DOCUMENTS.path());
}
