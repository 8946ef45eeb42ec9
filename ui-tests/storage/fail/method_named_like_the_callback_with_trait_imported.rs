// With `StorageAdapter` imported, the missing inherent method is still a compile error, never a
// call of the method being generated. It is rustc's ambiguity (E0034): a trait in scope cannot be
// hidden from generated code, and the trait's method and an inherent one are found by the same
// lookup step. The guard it names is named to say what is wrong:
// `ChatStore_has_no_method_delete_message`, shown at the user's `self.delete_message`.

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
