adk::stash_keys! {
    pub CHUNKS: "my-org.retrieval.count" => u32,
    /// The same path as `CHUNKS`, read as another type.
    pub CHUNK_LABEL: "my-org.retrieval.count" => String,
}

fn main() {
    let _ = (CHUNKS.path(), CHUNK_LABEL.path());
}
