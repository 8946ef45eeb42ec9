adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_mesage: |_ctx, _message| async { Ok(()) },
        ..noop
    }
}

fn main() {}
