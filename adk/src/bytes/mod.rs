//! Bytes on their way into storage and the readers that hand them back.
//!
//! This module owns the byte-persistence vocabulary shared by the storage conduits and the
//! primitives: [`ConduitBytes`] (what a caller hands to a store), [`SpoolReader`] (line-oriented
//! text, the backing of a [`SpooledArtifact`](crate::primitives::SpooledArtifact)),
//! [`MediaReader`] (replayable media bytes, the backing of a [`Media`](crate::primitives::Media)),
//! the [`ByteStore`] contract, and two stores: [`InMemorySpoolStore`] and [`FileSpoolStore`].
//!
//! Readers are cheap handles (`Arc` inside) over a source trait ([`SpoolSource`],
//! [`MediaSource`]) so a database or object store can back them without the primitives knowing.
//!
//! ```
//! use adk::bytes::{ByteStore, InMemorySpoolStore};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store = InMemorySpoolStore::new();
//! let reader = store.write("notes", "first\nsecond".into()).await?;
//! assert_eq!(reader.line_count().await?, 2);
//! assert_eq!(reader.line(1).await?.as_deref(), Some("second"));
//! # Ok::<(), adk::bytes::ByteStoreError>(())
//! # }).unwrap();
//! ```

mod conduit;
mod error;
mod file;
mod in_memory;
pub(crate) mod lines;
mod media_reader;
mod spool_reader;
mod store;

pub use conduit::{ByteStream, ConduitBytes};
pub use error::ByteStoreError;
pub use file::{FileSpoolStore, MAX_ID_BYTES};
pub use in_memory::InMemorySpoolStore;
pub use media_reader::{MediaReader, MediaSource};
pub use spool_reader::{ReaderDescriptor, SpoolReader, SpoolSource};
pub use store::ByteStore;

/// The chunk size readers use when they stream bytes out: 64 KiB.
///
/// Large enough to keep system calls few, small enough that a stream never holds much.
pub const CHUNK_SIZE: usize = 64 * 1024;
