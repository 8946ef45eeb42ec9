adk::storage_adapter! {
    pub struct ChatStore {
        path: std::path::PathBuf,
    }
}

fn main() {}
