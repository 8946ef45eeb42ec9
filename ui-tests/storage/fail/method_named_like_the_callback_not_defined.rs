// Without an inherent `delete_message`, `self.delete_message` must not resolve to the
// `StorageAdapter` method being generated (which would call itself forever).

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: self.delete_message,
        ..noop
    }
}

fn main() {}
