//! What a request's media and artifacts read as, gathered before a provider builds its body
//! (reading is async; building is not). Both executors collect the same records the same way;
//! only the part a medium becomes differs, so each passes its own conversion.

use std::collections::HashMap;
use std::future::Future;

use serde_json::{Value, json};

use crate::context::Collection;
use crate::primitives::{Media, Message, Role, SpooledArtifact, ToolCall, ToolCallResults};

/// Parts keyed by media id, texts keyed by artifact reader id.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    media: HashMap<String, Value>,
    artifacts: HashMap<String, String>,
}

impl Contents {
    /// Reads the user messages' attachments and the completed tool calls' media and artifacts;
    /// each distinct medium becomes `part(media)`, each artifact its text.
    pub(crate) async fn read<'m, Part, PartFuture>(
        messages: &'m Collection<Message>,
        tool_calls: &'m Collection<ToolCall>,
        part: Part,
    ) -> Self
    where
        Part: Fn(&'m Media) -> PartFuture,
        PartFuture: Future<Output = Value>,
    {
        let mut contents = Self::default();
        for message in messages
            .iter()
            .filter(|message| message.role() == Role::User)
        {
            for media in message.attachments() {
                contents.add_media(media, &part).await;
            }
        }
        for call in tool_calls.iter().filter(|call| call.is_complete()) {
            match call.results() {
                Some(ToolCallResults::Media(media)) => contents.add_media(media, &part).await,
                Some(ToolCallResults::MediaList(list)) => {
                    for media in list {
                        contents.add_media(media, &part).await;
                    }
                }
                Some(ToolCallResults::Artifact(artifact)) => contents.add_artifact(artifact).await,
                Some(ToolCallResults::Artifacts(list)) => {
                    for artifact in list {
                        contents.add_artifact(artifact).await;
                    }
                }
                Some(ToolCallResults::Text(_)) | None => {}
            }
        }
        contents
    }

    async fn add_media<'m, Part, PartFuture>(&mut self, media: &'m Media, part: &Part)
    where
        Part: Fn(&'m Media) -> PartFuture,
        PartFuture: Future<Output = Value>,
    {
        if !self.media.contains_key(media.id()) {
            let part = part(media).await;
            self.media.insert(media.id().to_owned(), part);
        }
    }

    async fn add_artifact(&mut self, artifact: &SpooledArtifact) {
        let id = artifact.reader().id().to_owned();
        if self.artifacts.contains_key(&id) {
            return;
        }
        let text = match artifact.reader().read_all().await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) => format!("[artifact {id} could not be read: {error}]"),
        };
        self.artifacts.insert(id, text);
    }

    /// The part `media` became.
    pub(crate) fn media(&self, media: &Media) -> Value {
        self.media
            .get(media.id())
            .cloned()
            .unwrap_or_else(|| text_part(format!("[{} was not read]", describe_media(media))))
    }

    /// The text `artifact` read as.
    pub(crate) fn artifact(&self, artifact: &SpooledArtifact) -> String {
        self.artifacts
            .get(artifact.reader().id())
            .cloned()
            .unwrap_or_default()
    }
}

/// A text part, the same JSON in both providers' formats.
pub(crate) fn text_part(text: String) -> Value {
    json!({"type": "text", "text": text})
}

/// A medium as a person reads it: its file name and type.
pub(crate) fn describe_media(media: &Media) -> String {
    format!("{} ({})", media.filename(), media.mime_type())
}
