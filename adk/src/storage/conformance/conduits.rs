//! The byte conduits' part of the suite: each conduit written with text, binary bytes and a
//! chunked stream, read back byte for byte, rewritten, and kept apart per conversation. Every
//! write is read back twice: through the reader the write returned, and through a fresh
//! `read_*_bytes` call by id, so bytes that were never kept, or kept under the id alone, show.

use bytes::Bytes;

use super::Run;
use super::report::{ConformanceFailure, Partition, Step, Subject};
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::{Retrievable, TrustTier};
use crate::storage::{Primitive, StorageAdapter, StorageContext, StorageError};

impl<Adapter: StorageAdapter> Run<'_, Adapter> {
    pub(super) async fn retrievable_bytes(&mut self) -> Result<(), ConformanceFailure> {
        for (step, content) in conduit_inputs() {
            let id = self.conduit_id("retrievable", step);
            let reader = self.write_spool(step, &id, content.conduit_bytes()).await?;
            self.expect_spool(step, &id, &reader, &content.whole)
                .await?;
            let ctx = self.ctx;
            self.read_back_spool(step, ctx, &id, Some(&content.whole))
                .await?;
        }
        let id = self.conduit_id("retrievable", Step::Rewrite);
        self.write_spool(
            Step::Rewrite,
            &id,
            "first version, longer than the second".into(),
        )
        .await?;
        let reader = self
            .write_spool(Step::Rewrite, &id, "second".into())
            .await?;
        self.expect_spool(Step::Rewrite, &id, &reader, b"second")
            .await?;
        let ctx = self.ctx;
        self.read_back_spool(Step::Rewrite, ctx, &id, Some(b"second"))
            .await?;
        let never_written = self.conduit_id("retrievable", Step::ReadMissing);
        self.read_back_spool(Step::ReadMissing, ctx, &never_written, None)
            .await
    }

    pub(super) async fn media_bytes(&mut self) -> Result<(), ConformanceFailure> {
        for (step, content) in conduit_inputs() {
            let id = self.conduit_id("media", step);
            let reader = self.write_media(step, &id, content.conduit_bytes()).await?;
            self.expect_media(step, &id, &reader, &content.whole)
                .await?;
            let ctx = self.ctx;
            self.read_back_media(step, ctx, &id, Some(&content.whole))
                .await?;
        }
        let id = self.conduit_id("media", Step::Rewrite);
        self.write_media(Step::Rewrite, &id, vec![1_u8; 64].into())
            .await?;
        let reader = self
            .write_media(Step::Rewrite, &id, vec![2_u8; 3].into())
            .await?;
        self.expect_media(Step::Rewrite, &id, &reader, &[2, 2, 2])
            .await?;
        let ctx = self.ctx;
        self.read_back_media(Step::Rewrite, ctx, &id, Some(&[2, 2, 2]))
            .await?;
        let never_written = self.conduit_id("media", Step::ReadMissing);
        self.read_back_media(Step::ReadMissing, ctx, &never_written, None)
            .await
    }

    // Both conversations write different bytes under one id; each reader returns its own
    // conversation's bytes, and so does a fresh read by id in each. With retrievables persisted, each conversation also stores a
    // retrievable spooled under that id, and its fetch must read back its own text.
    pub(super) async fn bytes_per_partition(
        &mut self,
        partition: Partition,
        other: &StorageContext,
        retrievables_persisted: bool,
    ) -> Result<(), ConformanceFailure> {
        let step = Step::BytesPer(partition);
        let id = self.conduit_id(&format!("shared-{partition:?}"), Step::WriteText);
        let conversations = [
            (self.ctx, "the first partition's text\n".repeat(3)),
            (other, "the other's\n".to_owned()),
        ];
        let mut spools = Vec::new();
        let mut media = Vec::new();
        for (ctx, text) in &conversations {
            let spool = self
                .adapter
                .store_retrievable_bytes(ctx, id.clone(), text.clone().into())
                .await
                .map_err(|error| conduit_error(Subject::RetrievableBytes, step, &id, error))?;
            spools.push(spool);
            let reader = self
                .adapter
                .store_media_bytes(ctx, id.clone(), text.clone().into_bytes().into())
                .await
                .map_err(|error| conduit_error(Subject::MediaBytes, step, &id, error))?;
            media.push(reader);
        }
        for ((_, text), (spool, reader)) in conversations.iter().zip(spools.iter().zip(&media)) {
            self.expect_spool(step, &id, spool, text.as_bytes()).await?;
            self.expect_media(step, &id, reader, text.as_bytes())
                .await?;
        }
        // Only now, after both writes: bytes kept under the id alone read back as the other's.
        for (ctx, text) in &conversations {
            self.read_back_spool(step, ctx, &id, Some(text.as_bytes()))
                .await?;
            self.read_back_media(step, ctx, &id, Some(text.as_bytes()))
                .await?;
        }
        if !retrievables_persisted {
            return Ok(());
        }
        let subject = Subject::Primitive(Primitive::Retrievables);
        // Spooled under its own id, as auto-spooling does.
        let record_id = id;
        for ((ctx, text), spool) in conversations.iter().zip(&spools) {
            let record = Retrievable::new(&record_id, text.clone(), TrustTier::FirstParty)
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: "a valid sample retrievable to store".into(),
                    found: format!("the sample was rejected: {error}"),
                    error: None,
                })?
                .into_spooled(spool.clone());
            let outcome = self.adapter.store_retrievable(ctx, record).await;
            self.call_succeeded(subject, step, "store", &record_id, outcome)?;
        }
        for (ctx, text) in &conversations {
            let fetched = self
                .adapter
                .fetch_retrievables(ctx)
                .await
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: "the fetch to succeed".into(),
                    found: format!("the error \"{error}\""),
                    error: Some(error),
                })?;
            let Some(ours) = fetched.iter().find(|record| record.id() == record_id) else {
                return Err(ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the fetch to return `{record_id}`"),
                    found: "no such retrievable".into(),
                    error: None,
                });
            };
            let read = ours
                .content_string()
                .await
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the fetched `{record_id}` to read back its spooled text"),
                    found: format!("the error \"{error}\""),
                    error: None,
                })?;
            if read != *text {
                return Err(ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the fetched `{record_id}` to read {text:?}"),
                    found: format!("{read:?}"),
                    error: None,
                });
            }
            self.checks_passed += 1;
            let outcome = self
                .adapter
                .delete_retrievable(ctx, record_id.clone())
                .await;
            self.call_succeeded(subject, step, "delete", &record_id, outcome)?;
        }
        Ok(())
    }

    pub(super) fn conduit_id(&self, conduit: &str, step: Step) -> String {
        let step = step.to_string().replace(' ', "-");
        format!("{}-{conduit}-bytes-{step}", self.prefix)
    }

    pub(super) async fn write_spool(
        &mut self,
        step: Step,
        id: &str,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, ConformanceFailure> {
        self.adapter
            .store_retrievable_bytes(self.ctx, id.to_owned(), bytes)
            .await
            .map_err(|error| conduit_error(Subject::RetrievableBytes, step, id, error))
    }

    pub(super) async fn write_media(
        &mut self,
        step: Step,
        id: &str,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, ConformanceFailure> {
        self.adapter
            .store_media_bytes(self.ctx, id.to_owned(), bytes)
            .await
            .map_err(|error| conduit_error(Subject::MediaBytes, step, id, error))
    }

    // Reads `id` back in `ctx` through a fresh `read_retrievable_bytes` call: `written` must
    // come back, or, for `None`, nothing may be found.
    async fn read_back_spool(
        &mut self,
        step: Step,
        ctx: &StorageContext,
        id: &str,
        written: Option<&[u8]>,
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::RetrievableBytes;
        let found = self
            .adapter
            .read_retrievable_bytes(ctx, id.to_owned())
            .await
            .map_err(|error| read_error(subject, step, id, error))?;
        match self.found_as_written(subject, step, id, found, written)? {
            Some((reader, written)) => self
                .expect_spool(step, id, &reader, written)
                .await
                .map_err(read_back_failure),
            None => Ok(()),
        }
    }

    // What a fresh read by id must find: a reader where bytes were written (handed back with
    // them, for the caller to compare in its conduit's terms), nothing where none were.
    fn found_as_written<'w, Reader>(
        &mut self,
        subject: Subject,
        step: Step,
        id: &str,
        found: Option<Reader>,
        written: Option<&'w [u8]>,
    ) -> Result<Option<(Reader, &'w [u8])>, ConformanceFailure> {
        match (found, written) {
            (Some(reader), Some(written)) => Ok(Some((reader, written))),
            (None, None) => {
                self.checks_passed += 1;
                Ok(None)
            }
            (found, written) => Err(found_where_not(subject, step, id, found.is_some(), written)),
        }
    }

    // As `read_back_spool`, through a fresh `read_media_bytes` call.
    async fn read_back_media(
        &mut self,
        step: Step,
        ctx: &StorageContext,
        id: &str,
        written: Option<&[u8]>,
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::MediaBytes;
        let found = self
            .adapter
            .read_media_bytes(ctx, id.to_owned())
            .await
            .map_err(|error| read_error(subject, step, id, error))?;
        match self.found_as_written(subject, step, id, found, written)? {
            Some((reader, written)) => self
                .expect_media(step, id, &reader, written)
                .await
                .map_err(read_back_failure),
            None => Ok(()),
        }
    }

    pub(super) async fn expect_spool(
        &mut self,
        step: Step,
        id: &str,
        reader: &SpoolReader,
        written: &[u8],
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::RetrievableBytes;
        let read = reader
            .read_all()
            .await
            .map_err(|error| ConformanceFailure {
                subject,
                step,
                expected: format!("the reader for `{id}` to read back"),
                found: format!("the error \"{error}\""),
                error: Some(StorageError::from(error)),
            })?;
        expect_same_bytes(subject, step, id, written, &read)?;
        let length = reader
            .byte_length()
            .await
            .map_err(|error| ConformanceFailure {
                subject,
                step,
                expected: format!("the reader for `{id}` to report its length"),
                found: format!("the error \"{error}\""),
                error: Some(StorageError::from(error)),
            })?;
        if length != written.len() as u64 {
            return Err(ConformanceFailure {
                subject,
                step,
                expected: format!("the reader for `{id}` to report {} bytes", written.len()),
                found: format!("{length} bytes"),
                error: None,
            });
        }
        self.checks_passed += 1;
        Ok(())
    }

    pub(super) async fn expect_media(
        &mut self,
        step: Step,
        id: &str,
        reader: &MediaReader,
        written: &[u8],
    ) -> Result<(), ConformanceFailure> {
        let subject = Subject::MediaBytes;
        // Media readers must be replayable, so read twice and compare both with the input.
        for _ in 0..2 {
            let read = reader
                .read_all()
                .await
                .map_err(|error| ConformanceFailure {
                    subject,
                    step,
                    expected: format!("the reader for `{id}` to stream the bytes back"),
                    found: format!("the error \"{error}\""),
                    error: None,
                })?;
            expect_same_bytes(subject, step, id, written, &read)?;
        }
        if let Some(length) = reader.byte_length().await
            && length != written.len() as u64
        {
            return Err(ConformanceFailure {
                subject,
                step,
                expected: format!(
                    "the reader for `{id}` to report {} bytes (or an unknown length)",
                    written.len()
                ),
                found: format!("{length} bytes"),
                error: None,
            });
        }
        self.checks_passed += 1;
        Ok(())
    }
}

// The three input shapes a conduit must accept, each with the bytes it should store.
pub(super) struct ConduitInput {
    whole: Vec<u8>,
    shape: InputShape,
}

pub(super) enum InputShape {
    Text,
    Bytes,
    Stream,
}

impl ConduitInput {
    fn conduit_bytes(&self) -> ConduitBytes {
        match self.shape {
            InputShape::Text => {
                ConduitBytes::from(String::from_utf8_lossy(&self.whole).into_owned())
            }
            InputShape::Bytes => ConduitBytes::from(self.whole.clone()),
            InputShape::Stream => {
                let chunks: Vec<std::io::Result<Bytes>> = self
                    .whole
                    .chunks(7)
                    .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
                    .collect();
                ConduitBytes::from_stream(futures_util::stream::iter(chunks))
            }
        }
    }
}

pub(super) fn conduit_inputs() -> [(Step, ConduitInput); 3] {
    // Text keeps `\r\n`, a trailing newline and non-ASCII text; bytes include NUL and bytes
    // that are not UTF-8; the stream splits multi-byte characters across chunks.
    [
        (
            Step::WriteText,
            ConduitInput {
                whole: "first line\r\nsecond — línea\n\nlast line\n"
                    .as_bytes()
                    .to_vec(),
                shape: InputShape::Text,
            },
        ),
        (
            Step::WriteBytes,
            ConduitInput {
                whole: vec![0x00, 0xff, 0xfe, b'\n', 0x80, 0x00, b'x'],
                shape: InputShape::Bytes,
            },
        ),
        (
            Step::WriteStream,
            ConduitInput {
                whole: "streamed ✓ across chunks\n".repeat(40).into_bytes(),
                shape: InputShape::Stream,
            },
        ),
    ]
}

pub(super) fn expect_same_bytes(
    subject: Subject,
    step: Step,
    id: &str,
    written: &[u8],
    read: &[u8],
) -> Result<(), ConformanceFailure> {
    if written == read {
        return Ok(());
    }
    let first_difference = written
        .iter()
        .zip(read)
        .position(|(left, right)| left != right)
        .unwrap_or(written.len().min(read.len()));
    Err(ConformanceFailure {
        subject,
        step,
        expected: format!(
            "the reader for `{id}` to return the {} bytes written",
            written.len()
        ),
        found: format!(
            "{} bytes, first differing at byte {first_difference}",
            read.len()
        ),
        error: None,
    })
}

// The name of the read that goes with a conduit, as failures spell it.
fn read_call(subject: Subject) -> &'static str {
    match subject {
        Subject::MediaBytes => "read_media_bytes",
        _ => "read_retrievable_bytes",
    }
}

fn read_error(subject: Subject, step: Step, id: &str, error: StorageError) -> ConformanceFailure {
    ConformanceFailure {
        subject,
        step,
        expected: format!("a fresh `{}` of `{id}` to succeed", read_call(subject)),
        found: format!("the error \"{error}\""),
        error: Some(error),
    }
}

// A reader found by a fresh read departed from the bytes written: say it was the fresh read.
fn read_back_failure(mut failure: ConformanceFailure) -> ConformanceFailure {
    failure.expected = format!(
        "{}, read back by id through a fresh `{}`",
        failure.expected,
        read_call(failure.subject)
    );
    failure
}

// A fresh read found bytes where none were written, or none where some were.
fn found_where_not(
    subject: Subject,
    step: Step,
    id: &str,
    found: bool,
    written: Option<&[u8]>,
) -> ConformanceFailure {
    let read = read_call(subject);
    let (expected, found) = match (found, written) {
        (false, Some(written)) => (
            format!(
                "a fresh `{read}` of `{id}` to find the {} bytes written under it",
                written.len()
            ),
            "nothing stored under the id: the bytes were not kept".to_owned(),
        ),
        _ => (
            format!("a fresh `{read}` of `{id}`, never written, to find nothing"),
            "a reader".to_owned(),
        ),
    };
    ConformanceFailure {
        subject,
        step,
        expected,
        found,
        error: None,
    }
}

pub(super) fn conduit_error(
    subject: Subject,
    step: Step,
    id: &str,
    error: StorageError,
) -> ConformanceFailure {
    ConformanceFailure {
        subject,
        step,
        expected: format!("the write of `{id}` to succeed"),
        found: format!("the error \"{error}\""),
        error: Some(error),
    }
}
