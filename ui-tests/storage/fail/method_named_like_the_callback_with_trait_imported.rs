// With `StorageAdapter` imported, the missing inherent method is still a compile error (an
// ambiguity naming `MissingDeleteMessageMethod`), never a call of the method being generated.

#[allow(unused_imports)]
use adk::storage::StorageAdapter;

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: self.delete_message,
        ..noop
    }
}

fn main() {}
