adk::storage_adapter! {
    pub enum ChatStore {
        InMemory,
        OnDisk,
    }

    impl {
        ..noop
    }
}

fn main() {
    // The enum is still emitted, so its uses do not fail too.
    let _ = ChatStore::InMemory;
}
