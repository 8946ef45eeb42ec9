//! The checkers of the two byte conduits: `store_media_bytes` and `store_retrievable_bytes`,
//! which take an id and the bytes and return a reader.

// The table expands to trait definitions naming the markers, `sealed::Never`, `CallbackFuture`
// and the callbacks' argument and output types, all of which the parent module holds.
use super::*;

// The messages are spelt out because diagnostic attributes take only literals. A unit test in
// adk-macros checks every label against the signature table the macro uses.
checkers! {
    store_media_bytes {
        callback: StoreMediaBytesCallback,
        method: StoreMediaBytesMethod,
        future: StoreMediaBytesFuture,
        parameters: (id: String, bytes: ConduitBytes),
        output: MediaReader,
        callback_message: "`{Self}` is not a valid `store_media_bytes` callback",
        callback_label: "expected `async fn(&StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id, bytes| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreMediaBytesParameters,
        output_check: StoreMediaBytesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_media_bytes` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String, bytes: ConduitBytes)`",
        parameters_note: "a `store_media_bytes` callback is `async fn(ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>`",
        output_message: "this `store_media_bytes` callback resolves to `{Self}`, expected `Result<MediaReader, StorageError>`",
        output_label: "expected `Result<MediaReader, StorageError>`",
        exists: StoreMediaBytesExists,
        exists_message: "`{State}` has no method `store_media_bytes`",
        exists_label: "`self.store_media_bytes` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_media_bytes(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_media_bytes` method",
        method_label: "expected `async fn(&self, &StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>`",
    },
    store_retrievable_bytes {
        callback: StoreRetrievableBytesCallback,
        method: StoreRetrievableBytesMethod,
        future: StoreRetrievableBytesFuture,
        parameters: (id: String, bytes: ConduitBytes),
        output: SpoolReader,
        callback_message: "`{Self}` is not a valid `store_retrievable_bytes` callback",
        callback_label: "expected `async fn(&StorageContext, String, ConduitBytes) -> Result<SpoolReader, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id, bytes| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreRetrievableBytesParameters,
        output_check: StoreRetrievableBytesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_retrievable_bytes` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String, bytes: ConduitBytes)`",
        parameters_note: "a `store_retrievable_bytes` callback is `async fn(ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>`",
        output_message: "this `store_retrievable_bytes` callback resolves to `{Self}`, expected `Result<SpoolReader, StorageError>`",
        output_label: "expected `Result<SpoolReader, StorageError>`",
        exists: StoreRetrievableBytesExists,
        exists_message: "`{State}` has no method `store_retrievable_bytes`",
        exists_label: "`self.store_retrievable_bytes` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_retrievable_bytes(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_retrievable_bytes` method",
        method_label: "expected `async fn(&self, &StorageContext, String, ConduitBytes) -> Result<SpoolReader, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>`",
    }
}
