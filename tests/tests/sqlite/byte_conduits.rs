//! Byte conduits: text, bytes and streams across a reopen, failing and stalled streams, and a
//! 20 MiB stream in bounded chunks.

use super::*;

fn chunked(parts: &[&'static [u8]]) -> ConduitBytes {
    let chunks: Vec<std::io::Result<Bytes>> = parts
        .iter()
        .map(|part| Ok(Bytes::from_static(part)))
        .collect();
    ConduitBytes::from_stream(futures_util::stream::iter(chunks))
}

/// An id, a way to make the input, and the bytes it should store.
type ConduitInput = (&'static str, fn() -> ConduitBytes, &'static [u8]);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_conduits_keep_text_bytes_and_streams_across_a_reopen() {
    let (folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("bytes");
    let inputs: [ConduitInput; 3] = [
        (
            "text",
            || "línea uno\r\nline two\n".into(),
            "línea uno\r\nline two\n".as_bytes(),
        ),
        (
            "bytes",
            || vec![0_u8, 0xff, b'\n', 0x80].into(),
            &[0, 0xff, b'\n', 0x80],
        ),
        (
            "stream",
            || chunked(&[b"str", b"eam\xe2", b"\x9c\x93"]),
            "stream✓".as_bytes(),
        ),
    ];
    for (id, input, expected) in inputs {
        let spool = storage
            .store_retrievable_bytes(&ctx, id.into(), input())
            .await
            .unwrap();
        assert_eq!(&spool.read_all().await.unwrap()[..], expected, "{id}");
        assert_eq!(spool.describe().unwrap().store(), "sqlite");
        let media = storage
            .store_media_bytes(&ctx, id.into(), input())
            .await
            .unwrap();
        assert_eq!(&media.read_all().await.unwrap()[..], expected, "{id}");
        assert_eq!(media.byte_length().await, Some(expected.len() as u64));
    }

    let reopened = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    for (id, _, expected) in inputs {
        let spool = reopened
            .retrievable_reader(&ctx, id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&spool.read_all().await.unwrap()[..], expected, "{id}");
        let media = reopened.media_reader(&ctx, id).await.unwrap().unwrap();
        assert_eq!(&media.read_all().await.unwrap()[..], expected, "{id}");
    }
    assert!(
        reopened
            .media_reader(&ctx, "absent")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_stream_stores_nothing_and_keeps_the_earlier_bytes() {
    let (_folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("bytes");
    storage
        .store_retrievable_bytes(&ctx, "doc".into(), "kept".into())
        .await
        .unwrap();
    let failing = ConduitBytes::from_stream(futures_util::stream::iter(vec![
        Ok(Bytes::from_static(b"partial")),
        Err(std::io::Error::other("the upload broke")),
    ]));
    let error = storage
        .store_retrievable_bytes(&ctx, "doc".into(), failing)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the upload broke"), "{error}");
    let kept = storage
        .retrievable_reader(&ctx, "doc")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&kept.read_all().await.unwrap()[..], b"kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetched_retrievable_reads_its_spooled_text_after_a_reopen() {
    let (folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("spooled");
    let chunk = Retrievable::new("manual", "step one\nstep two", TrustTier::FirstParty).unwrap();
    let text = chunk.spoolable_text().unwrap();
    let reader = storage
        .store_retrievable_bytes(&ctx, chunk.id().to_owned(), text.into())
        .await
        .unwrap();
    storage
        .store_retrievable(&ctx, chunk.into_spooled(reader))
        .await
        .unwrap();

    let reopened = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    let fetched = reopened.fetch_retrievables(&ctx).await.unwrap();
    assert!(matches!(
        fetched[0].content(),
        RetrievableContent::Artifact(artifact) if !artifact.reader().is_detached()
    ));
    assert_eq!(
        fetched[0].content_string().await.unwrap(),
        "step one\nstep two"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_stops_a_stalled_stream_and_frees_the_writer() {
    let (_folder, storage) = open_fresh().await;
    let cancellation = tokio_util::sync::CancellationToken::new();
    let ctx = StorageContext::new("stalled").with_cancellation(cancellation.clone());
    // One chunk, then the turn is cancelled and the stream never yields again.
    let stalled = futures_util::stream::once(async { Ok(Bytes::from_static(b"partial")) }).chain(
        futures_util::stream::once(async move {
            cancellation.cancel();
            std::future::pending::<std::io::Result<Bytes>>().await
        }),
    );

    let error = storage
        .store_media_bytes(&ctx, "upload".into(), ConduitBytes::from_stream(stalled))
        .await
        .unwrap_err();

    assert!(matches!(error, StorageError::Cancelled { .. }), "{error}");
    assert!(
        storage
            .media_reader(&ctx, "upload")
            .await
            .unwrap()
            .is_none()
    );
    storage
        .store_message(&ctx, Message::user("after", "still writable").unwrap())
        .await
        .unwrap();
}

/// A payload produced one chunk at a time; each chunk reports when it is dropped, so the source
/// knows the most bytes of its payload held at any moment.
struct CountingSource {
    alive: Arc<AtomicUsize>,
    most_alive: Arc<AtomicUsize>,
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

const LARGE_PAYLOAD: usize = 20 * 1024 * 1024;

fn payload_byte(position: usize) -> u8 {
    if position % 1000 == 999 {
        b'\n'
    } else {
        b'a' + (position % 26) as u8
    }
}

impl CountingSource {
    fn new() -> Self {
        Self {
            alive: Arc::new(AtomicUsize::new(0)),
            most_alive: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn stream(&self) -> ConduitBytes {
        let alive = Arc::clone(&self.alive);
        let most_alive = Arc::clone(&self.most_alive);
        let chunks = (0..LARGE_PAYLOAD).step_by(CHUNK_SIZE).map(move |start| {
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
async fn a_20_mib_stream_goes_through_with_a_bounded_number_of_chunks_held() {
    let (_folder, storage) = open_fresh().await;
    let ctx = StorageContext::new("large");
    let source = CountingSource::new();

    let reader = storage
        .store_retrievable_bytes(&ctx, "large".into(), source.stream())
        .await
        .unwrap();

    let most_alive = source.most_alive.load(Ordering::SeqCst);
    assert!(
        most_alive <= 8 * CHUNK_SIZE,
        "{most_alive} bytes of the stream were held at once"
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
        "read a chunk of {largest_chunk} bytes"
    );
    assert_eq!(
        reader.line_count().await.unwrap(),
        (LARGE_PAYLOAD / 1000 + 1) as u64
    );
}
