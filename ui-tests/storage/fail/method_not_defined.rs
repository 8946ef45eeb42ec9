adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: self.forget,
        ..noop
    }
}

fn main() {}
