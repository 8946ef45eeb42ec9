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

adk::storage_adapter! {
    /// Bounds in a where-clause reach the generated impl and helpers too.
    pub struct Bounded<P>
    where
        P: ::core::marker::Send + ::core::marker::Sync + 'static,
    {
        pool: P,
    }

    impl {
        fetch_messages: self.fetch_messages,
        ..noop
    }
}

impl<P> Bounded<P>
where
    P: ::core::marker::Send + ::core::marker::Sync + 'static,
{
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
    assert_adapter::<Bounded<u32>>();

    // Inside a function body too, where items cannot be reached by path from outside.
    adk::storage_adapter! {
        struct Local;
        impl {
            fetch_messages: self.fetch_messages,
            ..noop
        }
    }
    impl Local {
        async fn fetch_messages(
            &self,
            _ctx: &adk::storage::StorageContext,
        ) -> ::core::result::Result<::std::vec::Vec<adk::primitives::Message>, adk::storage::StorageError> {
            ::core::result::Result::Ok(::std::vec::Vec::new())
        }
    }
    assert_adapter::<Local>();
}
