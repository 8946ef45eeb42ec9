//! [`FileSpoolStore`]: byte records kept as files in one folder.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use bytes::BytesMut;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    ByteStore, ByteStoreError, ByteStream, CHUNK_SIZE, ConduitBytes, ReaderDescriptor, SpoolReader,
    SpoolSource,
};

/// The descriptor store name of file-backed readers.
const STORE_NAME: &str = "file";

/// Names of files still being written start with this; ids may not, so a half-written file can
/// never be mistaken for a record.
const PARTIAL_PREFIX: &str = ".adk-partial-";

/// A [`ByteStore`] keeping each record as a file named after its id, in one folder.
///
/// - Writes are atomic: bytes go to a temporary file in the same folder, are flushed to disk,
///   and the file is renamed over the record, so a reader never sees half a write and a crash
///   leaves the old record intact.
/// - Stream input is written chunk by chunk; the payload is never held whole in memory.
/// - Ids that could leave the folder (empty, `.`, `..`, path separators, absolute paths, NUL)
///   are refused with [`ByteStoreError::InvalidId`] naming the id, and so are ids some file
///   system would refuse as a file name: longer than [`MAX_ID_BYTES`] bytes, containing a
///   control character or one of `< > : " | ? *`, ending in a dot or a space, or a reserved
///   device name (`CON`, `NUL`, `COM1`, …). The rules are the same on every platform, so a
///   store folder can be copied between systems. Ids are checked before any byte is read from
///   the input, so a refused write costs nothing and leaves nothing behind.
/// - Readers read the file currently stored under their id, chunk by chunk: a later rewrite is
///   visible to them, and after a delete their reads fail with [`ByteStoreError::Missing`].
///
/// ```
/// use adk::bytes::{ByteStore, FileSpoolStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let folder = std::env::temp_dir().join(format!("adk-doc-file-store-{}", std::process::id()));
/// let store = FileSpoolStore::open(&folder).await?;
/// let reader = store.write("report", "line one\nline two\n".into()).await?;
/// assert_eq!(reader.line_count().await?, 3);
/// assert_eq!(reader.line(1).await?.as_deref(), Some("line two"));
/// assert!(store.delete("report").await?);
/// # std::fs::remove_dir_all(&folder).ok();
/// # Ok::<(), adk::bytes::ByteStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FileSpoolStore {
    folder: Arc<PathBuf>,
}

impl FileSpoolStore {
    /// A store over `folder`, creating the folder (and its parents) when missing.
    pub async fn open(folder: impl AsRef<Path>) -> Result<Self, ByteStoreError> {
        let folder = folder.as_ref().to_path_buf();
        tokio::fs::create_dir_all(&folder)
            .await
            .map_err(|source| ByteStoreError::Io {
                id: folder.display().to_string(),
                operation: "creating the store folder",
                source,
            })?;
        Ok(Self {
            folder: Arc::new(folder),
        })
    }

    /// The folder the records live in.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// The ids of the stored records, sorted. Files being written are not listed.
    pub async fn ids(&self) -> Result<Vec<String>, ByteStoreError> {
        let listing_error = |source| ByteStoreError::Io {
            id: self.folder.display().to_string(),
            operation: "listing the store folder",
            source,
        };
        let mut entries = tokio::fs::read_dir(self.folder.as_path())
            .await
            .map_err(listing_error)?;
        let mut ids = Vec::new();
        while let Some(entry) = entries.next_entry().await.map_err(listing_error)? {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let is_file = entry.file_type().await.map_err(listing_error)?.is_file();
            if is_file && !name.starts_with(PARTIAL_PREFIX) {
                ids.push(name);
            }
        }
        ids.sort();
        Ok(ids)
    }

    fn path_for(&self, id: &str) -> Result<PathBuf, ByteStoreError> {
        validate_id(id)?;
        Ok(self.folder.join(id))
    }

    fn reader(&self, id: &str, path: PathBuf) -> SpoolReader {
        SpoolReader::new(FileSpool {
            id: id.to_owned(),
            path,
        })
    }

    async fn write_through_temporary_file(
        &self,
        id: &str,
        target: &Path,
        bytes: ConduitBytes,
    ) -> Result<(), ByteStoreError> {
        let io_error = |operation: &'static str| {
            move |source| ByteStoreError::Io {
                id: id.to_owned(),
                operation,
                source,
            }
        };
        let temporary = PartialFile::new(
            self.folder
                .join(format!("{PARTIAL_PREFIX}{}", uuid::Uuid::now_v7())),
        );
        let mut file = tokio::fs::File::create(temporary.path())
            .await
            .map_err(io_error("creating a temporary file for"))?;
        let mut stream = bytes.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|source| ByteStoreError::InputStream {
                id: id.to_owned(),
                source,
            })?;
            file.write_all(&chunk).await.map_err(io_error("writing"))?;
        }
        file.flush().await.map_err(io_error("writing"))?;
        file.sync_all()
            .await
            .map_err(io_error("flushing to disk"))?;
        drop(file);
        tokio::fs::rename(temporary.path(), target)
            .await
            .map_err(io_error("renaming the temporary file onto"))?;
        temporary.keep();
        self.sync_folder()
            .await
            .map_err(io_error("flushing the folder of"))
    }

    /// Makes the rename itself durable: on Unix a rename is recorded in the folder's entry,
    /// which is only on disk once the folder is synced.
    async fn sync_folder(&self) -> io::Result<()> {
        #[cfg(unix)]
        {
            tokio::fs::File::open(self.folder.as_path())
                .await?
                .sync_all()
                .await?;
        }
        Ok(())
    }
}

impl ByteStore for FileSpoolStore {
    type Reader = SpoolReader;

    async fn write(&self, id: &str, bytes: ConduitBytes) -> Result<SpoolReader, ByteStoreError> {
        let target = self.path_for(id)?;
        self.write_through_temporary_file(id, &target, bytes)
            .await?;
        Ok(self.reader(id, target))
    }

    async fn read(&self, id: &str) -> Result<Option<SpoolReader>, ByteStoreError> {
        let path = self.path_for(id)?;
        match tokio::fs::metadata(&path).await {
            Ok(metadata) if metadata.is_file() => Ok(Some(self.reader(id, path))),
            Ok(_) => Ok(None),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ByteStoreError::Io {
                id: id.to_owned(),
                operation: "reading",
                source,
            }),
        }
    }

    async fn delete(&self, id: &str) -> Result<bool, ByteStoreError> {
        let path = self.path_for(id)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(ByteStoreError::Io {
                id: id.to_owned(),
                operation: "deleting",
                source,
            }),
        }
    }
}

/// The longest id a [`FileSpoolStore`] accepts, in UTF-8 bytes: the file-name limit of
/// ext4, APFS, NTFS and most other file systems.
pub const MAX_ID_BYTES: usize = 255;

// Names Windows reserves for devices, with or without an extension.
const RESERVED_NAMES: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// Refuses every id that is not one plain file name inside the folder, valid on every common
/// file system.
fn validate_id(id: &str) -> Result<(), ByteStoreError> {
    let refuse = |reason| {
        Err(ByteStoreError::InvalidId {
            id: id.to_owned(),
            reason,
        })
    };
    if id.is_empty() {
        return refuse("it is empty");
    }
    if id == "." || id == ".." {
        return refuse("it names the store folder or its parent");
    }
    if id.contains('\0') {
        return refuse("it contains a NUL byte");
    }
    if id.contains('/') || id.contains('\\') {
        return refuse("it contains a path separator");
    }
    if id.starts_with(PARTIAL_PREFIX) {
        return refuse("names starting with `.adk-partial-` are reserved for files being written");
    }
    if id.len() > MAX_ID_BYTES {
        return refuse("it is longer than 255 bytes, the longest file name file systems accept");
    }
    if id.chars().any(char::is_control) {
        return refuse("it contains a control character, which some file systems refuse");
    }
    if id.contains(['<', '>', ':', '"', '|', '?', '*']) {
        return refuse("it contains one of < > : \" | ? *, which some file systems refuse");
    }
    if id.ends_with('.') || id.ends_with(' ') {
        return refuse("it ends in a dot or a space, which some file systems drop or refuse");
    }
    let stem = id.split('.').next().unwrap_or(id);
    if RESERVED_NAMES
        .iter()
        .any(|reserved| stem.eq_ignore_ascii_case(reserved))
    {
        return refuse("it is a device name some file systems reserve (CON, NUL, COM1, …)");
    }
    let mut components = Path::new(id).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(_)), None) => Ok(()),
        _ => refuse("it is not a plain file name (it could resolve outside the store folder)"),
    }
}

/// A temporary file removed on drop unless kept, so a failed or cancelled write leaves nothing.
struct PartialFile {
    path: Option<PathBuf>,
}

impl PartialFile {
    fn new(path: PathBuf) -> Self {
        Self { path: Some(path) }
    }

    fn path(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(""))
    }

    fn keep(mut self) {
        self.path = None;
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            // Best effort: the write already failed and reports its own error.
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A record read back from its file, chunk by chunk.
struct FileSpool {
    id: String,
    path: PathBuf,
}

impl FileSpool {
    fn error(&self, operation: &'static str, source: io::Error) -> ByteStoreError {
        if source.kind() == io::ErrorKind::NotFound {
            ByteStoreError::Missing {
                id: self.id.clone(),
            }
        } else {
            ByteStoreError::Io {
                id: self.id.clone(),
                operation,
                source,
            }
        }
    }
}

enum FileStreamState {
    Unopened(PathBuf, String),
    Open(tokio::fs::File),
    Finished,
}

impl SpoolSource for FileSpool {
    fn id(&self) -> &str {
        &self.id
    }

    fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
        Box::pin(async move {
            tokio::fs::metadata(&self.path)
                .await
                .map(|metadata| metadata.len())
                .map_err(|source| self.error("reading the length of", source))
        })
    }

    fn stream(&self) -> ByteStream {
        let initial = FileStreamState::Unopened(self.path.clone(), self.id.clone());
        Box::pin(futures_util::stream::unfold(initial, |state| async move {
            let mut file = match state {
                FileStreamState::Finished => return None,
                FileStreamState::Open(file) => file,
                FileStreamState::Unopened(path, id) => match tokio::fs::File::open(&path).await {
                    Ok(file) => file,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {
                        let missing = ByteStoreError::Missing { id }.into_io();
                        return Some((Err(missing), FileStreamState::Finished));
                    }
                    Err(error) => return Some((Err(error), FileStreamState::Finished)),
                },
            };
            let mut buffer = BytesMut::with_capacity(CHUNK_SIZE);
            match file.read_buf(&mut buffer).await {
                Ok(0) => None,
                Ok(_) => Some((Ok(buffer.freeze()), FileStreamState::Open(file))),
                Err(error) => Some((Err(error), FileStreamState::Finished)),
            }
        }))
    }

    fn read_all(&self) -> BoxFuture<'_, Result<bytes::Bytes, ByteStoreError>> {
        Box::pin(async move {
            tokio::fs::read(&self.path)
                .await
                .map(bytes::Bytes::from)
                .map_err(|source| self.error("reading", source))
        })
    }

    fn describe(&self) -> Option<ReaderDescriptor> {
        Some(ReaderDescriptor::new(STORE_NAME, self.id.clone()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_leave_the_folder_are_refused() {
        for id in [
            "",
            ".",
            "..",
            "../x",
            "/etc/passwd",
            "a/b",
            "a\\b",
            "nul\0byte",
        ] {
            let error = validate_id(id).unwrap_err();
            assert!(
                matches!(error, ByteStoreError::InvalidId { id: ref refused, .. } if refused == id),
                "{id:?} should be refused"
            );
        }
    }

    #[test]
    fn names_some_file_system_refuses_are_refused() {
        let too_long = "é".repeat(128);
        for id in [
            too_long.as_str(),
            "tab\there",
            "a:b",
            "what?",
            "star*",
            "pipe|",
            "quote\"",
            "<angle>",
            "trailing.",
            "trailing ",
            "CON",
            "nul.txt",
            "com1",
        ] {
            assert!(validate_id(id).is_err(), "{id:?} should be refused");
        }
        assert!(validate_id(&"a".repeat(MAX_ID_BYTES)).is_ok());
    }

    #[test]
    fn plain_names_including_dotted_ones_are_accepted() {
        for id in [
            "report",
            "report.txt",
            ".hidden",
            "a..b",
            "ünïcode",
            "console",
            "com10",
        ] {
            assert!(validate_id(id).is_ok(), "{id:?} should be accepted");
        }
    }

    #[test]
    fn the_partial_file_prefix_is_reserved() {
        assert!(validate_id(".adk-partial-123").is_err());
    }
}
