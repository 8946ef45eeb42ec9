//! Byte stores keep bytes faithfully, replace on rewrite, refuse ids that could escape their
//! folder, and (for the file store) never hold a whole streamed payload in memory.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::bytes::{
    ByteStore, ByteStoreError, CHUNK_SIZE, ConduitBytes, FileSpoolStore, InMemorySpoolStore,
    MediaReader, SpoolReader,
};
use bytes::Bytes;
use futures_util::StreamExt;

const BINARY: &[u8] = &[0, 0xff, b'\r', b'\n', 0xc3, 0x28, b'\n', 0x80, b'x'];

fn chunked(parts: &[&'static [u8]]) -> ConduitBytes {
    let chunks: Vec<io::Result<Bytes>> = parts
        .iter()
        .map(|part| Ok(Bytes::from_static(part)))
        .collect();
    ConduitBytes::from_stream(futures_util::stream::iter(chunks))
}

async fn file_store() -> (tempfile::TempDir, FileSpoolStore) {
    let folder = tempfile::tempdir().unwrap();
    let store = FileSpoolStore::open(folder.path()).await.unwrap();
    (folder, store)
}

/// Runs `check` against both stores, so every rule below holds for each of them.
async fn for_each_store<Check, Output>(check: Check)
where
    Check: Fn(Box<dyn DynStore>) -> Output,
    Output: std::future::Future<Output = ()>,
{
    check(Box::new(InMemorySpoolStore::new())).await;
    let (_folder, store) = file_store().await;
    check(Box::new(store)).await;
}

/// The two stores behind one object-safe face, for the shared rules.
trait DynStore {
    fn put<'a>(
        &'a self,
        id: &'a str,
        bytes: ConduitBytes,
    ) -> futures_util::future::BoxFuture<'a, Result<SpoolReader, ByteStoreError>>;
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Option<SpoolReader>, ByteStoreError>>;
    fn remove<'a>(
        &'a self,
        id: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<bool, ByteStoreError>>;
}

impl<Store: ByteStore<Reader = SpoolReader>> DynStore for Store {
    fn put<'a>(
        &'a self,
        id: &'a str,
        bytes: ConduitBytes,
    ) -> futures_util::future::BoxFuture<'a, Result<SpoolReader, ByteStoreError>> {
        Box::pin(ByteStore::write(self, id, bytes))
    }
    fn get<'a>(
        &'a self,
        id: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Option<SpoolReader>, ByteStoreError>> {
        Box::pin(ByteStore::read(self, id))
    }
    fn remove<'a>(
        &'a self,
        id: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<bool, ByteStoreError>> {
        Box::pin(ByteStore::delete(self, id))
    }
}

#[tokio::test]
async fn text_is_stored_as_utf8_and_read_back_unchanged() {
    for_each_store(|store| async move {
        let text = "héllo\r\nwörld\n";
        let reader = store.put("text", text.into()).await.unwrap();
        assert_eq!(&reader.read_all().await.unwrap()[..], text.as_bytes());
        assert_eq!(reader.byte_length().await.unwrap(), text.len() as u64);
        assert_eq!(reader.line_count().await.unwrap(), 3);
        assert_eq!(reader.line(0).await.unwrap().as_deref(), Some("héllo\r"));
        assert_eq!(reader.line(2).await.unwrap().as_deref(), Some(""));
        assert_eq!(reader.line(3).await.unwrap(), None);
    })
    .await;
}

#[tokio::test]
async fn binary_bytes_are_read_back_byte_for_byte() {
    for_each_store(|store| async move {
        let reader = store.put("binary", BINARY.into()).await.unwrap();
        assert_eq!(&reader.read_all().await.unwrap()[..], BINARY);
        let streamed = ConduitBytes::Stream(reader.stream())
            .collect()
            .await
            .unwrap();
        assert_eq!(&streamed[..], BINARY);
    })
    .await;
}

#[tokio::test]
async fn stream_input_is_read_back_byte_for_byte() {
    for_each_store(|store| async move {
        let reader = store
            .put(
                "streamed",
                chunked(&[&BINARY[..3], &BINARY[3..], b"", b"tail"]),
            )
            .await
            .unwrap();
        let mut expected = BINARY.to_vec();
        expected.extend_from_slice(b"tail");
        assert_eq!(&reader.read_all().await.unwrap()[..], &expected[..]);
    })
    .await;
}

#[tokio::test]
async fn empty_content_has_no_lines() {
    for_each_store(|store| async move {
        let reader = store.put("empty", "".into()).await.unwrap();
        assert_eq!(reader.byte_length().await.unwrap(), 0);
        assert_eq!(reader.line_count().await.unwrap(), 0);
        assert_eq!(reader.line(0).await.unwrap(), None);
    })
    .await;
}

#[tokio::test]
async fn rewriting_an_id_replaces_its_bytes() {
    for_each_store(|store| async move {
        store.put("page", "first version".into()).await.unwrap();
        store.put("page", "second".into()).await.unwrap();
        let reader = store.get("page").await.unwrap().unwrap();
        assert_eq!(&reader.read_all().await.unwrap()[..], b"second");
    })
    .await;
}

#[tokio::test]
async fn unknown_ids_read_as_none_and_delete_as_false() {
    for_each_store(|store| async move {
        assert!(store.get("nothing").await.unwrap().is_none());
        assert!(!store.remove("nothing").await.unwrap());
        store.put("something", "x".into()).await.unwrap();
        assert!(store.remove("something").await.unwrap());
        assert!(store.get("something").await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn a_failing_input_stream_stores_nothing() {
    for_each_store(|store| async move {
        let broken = ConduitBytes::from_stream(futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"partial")),
            Err(io::Error::other("upload interrupted")),
        ]));
        let error = store.put("broken", broken).await.unwrap_err();
        assert!(matches!(error, ByteStoreError::InputStream { ref id, .. } if id == "broken"));
        assert!(store.get("broken").await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn in_memory_readers_are_snapshots() {
    let store = InMemorySpoolStore::new();
    let before = store.write("doc", "old".into()).await.unwrap();
    store.write("doc", "new".into()).await.unwrap();
    store.delete("doc").await.unwrap();
    assert_eq!(&before.read_all().await.unwrap()[..], b"old");
}

#[tokio::test]
async fn in_memory_store_counts_and_clears_its_records() {
    let store = InMemorySpoolStore::new();
    store.write("a", "1".into()).await.unwrap();
    store.write("b", "2".into()).await.unwrap();
    assert_eq!(store.len(), 2);
    store.clear();
    assert!(store.is_empty());
}

#[tokio::test]
async fn file_readers_see_the_current_file_and_report_it_missing_after_delete() {
    let (_folder, store) = file_store().await;
    let reader = store.write("doc", "old".into()).await.unwrap();
    store.write("doc", "new".into()).await.unwrap();
    assert_eq!(&reader.read_all().await.unwrap()[..], b"new");
    store.delete("doc").await.unwrap();
    let error = reader.read_all().await.unwrap_err();
    assert!(matches!(error, ByteStoreError::Missing { ref id } if id == "doc"));
    assert!(matches!(
        reader.line(0).await.unwrap_err(),
        ByteStoreError::Missing { .. }
    ));
}

#[tokio::test]
async fn file_store_refuses_ids_that_could_escape_its_folder() {
    let (folder, store) = file_store().await;
    for id in [
        "",
        ".",
        "..",
        "../outside",
        "/etc/passwd",
        "nested/id",
        "back\\slash",
        "nul\0",
    ] {
        let error = store.write(id, "x".into()).await.unwrap_err();
        match &error {
            ByteStoreError::InvalidId { id: refused, .. } => assert_eq!(refused, id),
            other => panic!("{id:?} should be refused as an invalid id, got {other:?}"),
        }
        assert!(error.to_string().contains(&format!("{id:?}")), "{error}");
        assert!(store.read(id).await.is_err());
        assert!(store.delete(id).await.is_err());
    }
    let parent = folder.path().parent().unwrap();
    assert!(!parent.join("outside").exists());
    assert!(store.ids().await.unwrap().is_empty());
}

// A stream that counts how often it was polled, to show a write was refused before reading it.
fn counted_stream(polls: Arc<AtomicUsize>) -> ConduitBytes {
    let chunks = (0..3).map(|_| Ok(Bytes::from_static(b"payload")));
    ConduitBytes::from_stream(futures_util::stream::iter(chunks).inspect(move |_| {
        polls.fetch_add(1, Ordering::SeqCst);
    }))
}

#[tokio::test]
async fn file_store_refuses_an_id_over_255_bytes_before_reading_any_input() {
    let (folder, store) = file_store().await;
    let polls = Arc::new(AtomicUsize::new(0));
    // 256 bytes: 128 two-byte characters.
    let id = "é".repeat(128);
    let error = store
        .write(&id, counted_stream(Arc::clone(&polls)))
        .await
        .unwrap_err();
    assert!(matches!(error, ByteStoreError::InvalidId { .. }), "{error}");
    assert!(
        error.to_string().contains("longer than 255 bytes"),
        "{error}"
    );
    assert_eq!(polls.load(Ordering::SeqCst), 0, "the input was read");
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);

    let longest = "a".repeat(adk::bytes::MAX_ID_BYTES);
    store.write(&longest, "fits".into()).await.unwrap();
}

#[tokio::test]
async fn file_store_refuses_names_some_file_system_refuses_before_reading_any_input() {
    let (folder, store) = file_store().await;
    for id in [
        "a:b",
        "why?",
        "bell\u{7}",
        "trailing.",
        "trailing ",
        "CON",
        "lpt1.log",
    ] {
        let polls = Arc::new(AtomicUsize::new(0));
        let error = store
            .write(id, counted_stream(Arc::clone(&polls)))
            .await
            .unwrap_err();
        match &error {
            ByteStoreError::InvalidId { id: refused, .. } => assert_eq!(refused, id),
            other => panic!("{id:?} should be refused as an invalid id, got {other:?}"),
        }
        assert_eq!(
            polls.load(Ordering::SeqCst),
            0,
            "{id:?}: the input was read"
        );
    }
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn file_store_keeps_each_record_as_a_file_named_by_its_id() {
    let (folder, store) = file_store().await;
    store.write("report.txt", "body".into()).await.unwrap();
    assert_eq!(
        std::fs::read(folder.path().join("report.txt")).unwrap(),
        b"body"
    );
    assert_eq!(store.ids().await.unwrap(), ["report.txt"]);
}

#[tokio::test]
async fn file_spool_readers_can_back_media() {
    let (_folder, store) = file_store().await;
    let reader = store.write("photo", BINARY.into()).await.unwrap();
    let media = MediaReader::from_spool(reader);
    assert_eq!(media.byte_length().await, Some(BINARY.len() as u64));
    assert_eq!(&media.read_all().await.unwrap()[..], BINARY);
    assert_eq!(&media.read_all().await.unwrap()[..], BINARY);
}

/// A 50 MiB payload produced one chunk at a time. Every chunk reports when it is dropped, so
/// the source knows the most bytes of its payload alive at any moment; and before producing a
/// chunk it measures how much of what it already produced is still not in the store's folder,
/// which stays small only if the store writes each chunk out before asking for the next.
struct CountingSource {
    folder: std::path::PathBuf,
    alive: Arc<AtomicUsize>,
    most_alive: Arc<AtomicUsize>,
    most_not_on_disk: Arc<AtomicUsize>,
}

struct CountedChunk {
    bytes: Vec<u8>,
    alive: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for CountedChunk {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for CountedChunk {
    fn drop(&mut self) {
        self.alive.fetch_sub(self.bytes.len(), Ordering::SeqCst);
    }
}

const LARGE_PAYLOAD: usize = 50 * 1024 * 1024;

/// The byte at `position` of the large payload: varied, with a newline every 1000 bytes.
fn payload_byte(position: usize) -> u8 {
    if position % 1000 == 999 {
        b'\n'
    } else {
        b'a' + (position % 26) as u8
    }
}

impl CountingSource {
    fn new(folder: &std::path::Path) -> Self {
        Self {
            folder: folder.to_path_buf(),
            alive: Arc::new(AtomicUsize::new(0)),
            most_alive: Arc::new(AtomicUsize::new(0)),
            most_not_on_disk: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn stream(&self) -> ConduitBytes {
        let alive = Arc::clone(&self.alive);
        let most_alive = Arc::clone(&self.most_alive);
        let most_not_on_disk = Arc::clone(&self.most_not_on_disk);
        let folder = self.folder.clone();
        let chunks = (0..LARGE_PAYLOAD).step_by(CHUNK_SIZE).map(move |start| {
            let on_disk: u64 = std::fs::read_dir(&folder)
                .unwrap()
                .map(|entry| {
                    entry
                        .unwrap()
                        .metadata()
                        .map_or(0, |metadata| metadata.len())
                })
                .sum();
            let not_on_disk = start.saturating_sub(on_disk as usize);
            most_not_on_disk.fetch_max(not_on_disk, Ordering::SeqCst);
            let end = (start + CHUNK_SIZE).min(LARGE_PAYLOAD);
            let bytes: Vec<u8> = (start..end).map(payload_byte).collect();
            let now_alive = alive.fetch_add(bytes.len(), Ordering::SeqCst) + bytes.len();
            most_alive.fetch_max(now_alive, Ordering::SeqCst);
            Ok(Bytes::from_owner(CountedChunk {
                bytes,
                alive: Arc::clone(&alive),
            }))
        });
        ConduitBytes::from_stream(futures_util::stream::iter(chunks))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mib_stream_is_written_and_read_back_one_chunk_at_a_time() {
    let (folder, store) = file_store().await;
    let source = CountingSource::new(folder.path());

    let reader = store.write("large", source.stream()).await.unwrap();

    assert_eq!(
        source.most_alive.load(Ordering::SeqCst),
        CHUNK_SIZE,
        "the store held more than one input chunk at a time"
    );
    let most_not_on_disk = source.most_not_on_disk.load(Ordering::SeqCst);
    assert!(
        most_not_on_disk <= 2 * CHUNK_SIZE,
        "{most_not_on_disk} bytes were taken from the stream but not yet written out"
    );
    assert_eq!(source.alive.load(Ordering::SeqCst), 0);
    assert_eq!(reader.byte_length().await.unwrap(), LARGE_PAYLOAD as u64);

    let mut stream = reader.stream();
    let mut position = 0;
    let mut largest_chunk = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        largest_chunk = largest_chunk.max(chunk.len());
        for (offset, byte) in chunk.iter().enumerate() {
            assert_eq!(
                *byte,
                payload_byte(position + offset),
                "byte {}",
                position + offset
            );
        }
        position += chunk.len();
    }
    assert_eq!(position, LARGE_PAYLOAD);
    assert!(
        largest_chunk <= CHUNK_SIZE,
        "read chunk of {largest_chunk} bytes"
    );

    assert_eq!(
        reader.line_count().await.unwrap(),
        (LARGE_PAYLOAD / 1000 + 1) as u64
    );
    let last_line = reader
        .line((LARGE_PAYLOAD / 1000) as u64)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last_line.len(), LARGE_PAYLOAD % 1000);

    let entries: Vec<String> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(entries, ["large"], "temporary files were left behind");
}

#[tokio::test]
async fn a_failed_file_write_leaves_no_temporary_file() {
    let (folder, store) = file_store().await;
    let broken = ConduitBytes::from_stream(futures_util::stream::iter(vec![
        Ok(Bytes::from_static(b"partial")),
        Err(io::Error::other("upload interrupted")),
    ]));
    assert!(store.write("broken", broken).await.is_err());
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_failed_rewrite_keeps_the_previous_record() {
    let (_folder, store) = file_store().await;
    store.write("doc", "kept".into()).await.unwrap();
    let broken = chunked(&[b"new"]);
    let broken = ConduitBytes::from_stream(broken.into_stream().chain(futures_util::stream::once(
        async { Err(io::Error::other("cut")) },
    )));
    assert!(store.write("doc", broken).await.is_err());
    let reader = store.read("doc").await.unwrap().unwrap();
    assert_eq!(&reader.read_all().await.unwrap()[..], b"kept");
}
