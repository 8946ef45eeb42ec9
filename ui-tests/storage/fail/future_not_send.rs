use std::rc::Rc;

use adk::storage::{StorageContext, StorageError};

async fn hold_rc_across_await(_ctx: &StorageContext, _id: String) -> Result<(), StorageError> {
    let held = Rc::new(1);
    std::future::ready(()).await;
    drop(held);
    Ok(())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: hold_rc_across_await,
        ..noop
    }
}

fn main() {}
