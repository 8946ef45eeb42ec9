adk::storage_adapter! {
    pub struct ChatStore;

    impl StorageAdapter {
        ..noop
    }
}

fn main() {
    let _ = ChatStore;
}
