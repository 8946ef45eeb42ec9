//! The expansion names everything by absolute path and emits no warnings: prelude names shadowed,
//! a generic adapter, `#![deny(warnings)]`.

#![deny(warnings)]
#![allow(dead_code)]

struct Result;
struct Ok;
struct Err;
struct Vec;
struct String;
struct Box;
struct Option;
struct Send;
struct Future;
struct StorageAdapter;
struct StorageContext;
mod core {}
mod std {}

adk::storage_adapter! {
    /// An adapter generic over its connection pool.
    pub struct Pooled<P: ::core::marker::Send + ::core::marker::Sync + 'static> {
        pool: P,
    }

    impl {
        fetch_messages: self.fetch_messages,
        delete_message: |_, _| async { ::core::result::Result::Ok(()) },
        ..noop
    }
}

impl<P: ::core::marker::Send + ::core::marker::Sync + 'static> Pooled<P> {
    async fn fetch_messages(
        &self,
        _ctx: &adk::storage::StorageContext,
    ) -> ::core::result::Result<::std::vec::Vec<adk::primitives::Message>, adk::storage::StorageError> {
        let _ = &self.pool;
        ::core::result::Result::Ok(::std::vec::Vec::new())
    }
}

fn main() {
    fn assert_adapter<T: adk::storage::StorageAdapter>() {}
    assert_adapter::<Pooled<u32>>();
}
