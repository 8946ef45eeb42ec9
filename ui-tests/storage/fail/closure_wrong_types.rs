adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: |_ctx, id: u64| async move {
            let _ = id;
            Ok(())
        },
        fetch_messages: |_ctx| async { Ok(vec![1, 2, 3]) },
        ..noop
    }
}

fn main() {}
