//! `impl { ..noop }` is an adapter that stores nothing, on a unit struct.

adk::storage_adapter! {
    pub struct Forgetful;

    impl { ..noop }
}

fn main() {
    let _storage = adk::storage::SharedStorage::new(Forgetful);
}
