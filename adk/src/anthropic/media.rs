//! What a request's media and artifacts read as, gathered before the body is built (reading is
//! async; building is not), and the content block each medium becomes.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::context::Collection;
use crate::primitives::{
    Media, MediaKind, Message, Role, SpooledArtifact, ToolCall, ToolCallResults,
};

/// The image types the Messages API takes.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Blocks keyed by media id, texts keyed by artifact reader id.
#[derive(Debug, Default)]
pub(crate) struct Contents {
    media: HashMap<String, Value>,
    artifacts: HashMap<String, String>,
}

impl Contents {
    pub(crate) async fn read(
        messages: &Collection<Message>,
        tool_calls: &Collection<ToolCall>,
    ) -> Self {
        let mut contents = Self::default();
        for message in messages
            .iter()
            .filter(|message| message.role() == Role::User)
        {
            for media in message.attachments() {
                contents.add_media(media).await;
            }
        }
        for call in tool_calls.iter().filter(|call| call.is_complete()) {
            match call.results() {
                Some(ToolCallResults::Media(media)) => contents.add_media(media).await,
                Some(ToolCallResults::MediaList(list)) => {
                    for media in list {
                        contents.add_media(media).await;
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

    async fn add_media(&mut self, media: &Media) {
        if !self.media.contains_key(media.id()) {
            let block = media_block(media).await;
            self.media.insert(media.id().to_owned(), block);
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

    /// The block `media` became.
    pub(crate) fn media(&self, media: &Media) -> Value {
        self.media
            .get(media.id())
            .cloned()
            .unwrap_or_else(|| text_block(format!("[{} was not read]", describe(media))))
    }

    /// The text `artifact` read as.
    pub(crate) fn artifact(&self, artifact: &SpooledArtifact) -> String {
        self.artifacts
            .get(artifact.reader().id())
            .cloned()
            .unwrap_or_default()
    }
}

pub(crate) fn text_block(text: String) -> Value {
    json!({"type": "text", "text": text})
}

pub(crate) fn describe(media: &Media) -> String {
    format!("{} ({})", media.filename(), media.mime_type())
}

/// The content block for `media`:
/// - an image (JPEG, PNG, GIF, WebP) as an `image` block: by URL when its source is an
///   `http(s)` URL, otherwise its bytes in base64;
/// - a PDF as a `document` block of its bytes in base64, titled with the file name;
/// - a text document (`text/*`, JSON, XML, YAML) as a `document` block of plain text;
/// - anything else as a `text` block saying what was left out and why.
///
/// Bytes that cannot be read become a `text` block naming the media and the error.
pub(crate) async fn media_block(media: &Media) -> Value {
    let mime = media.mime_type().to_ascii_lowercase();
    let unreadable = |error: std::io::Error| {
        text_block(format!("[{} could not be read: {error}]", describe(media)))
    };
    if media.kind() == MediaKind::Image && IMAGE_TYPES.contains(&mime.as_str()) {
        if let Some(url) = media.source().filter(|source| is_http_url(source)) {
            return json!({"type": "image", "source": {"type": "url", "url": url}});
        }
        return match media.as_base64().await {
            Ok(data) => json!({"type": "image", "source": {
                "type": "base64", "media_type": mime, "data": data}}),
            Err(error) => unreadable(error),
        };
    }
    if mime == "application/pdf" {
        return match media.as_base64().await {
            Ok(data) => json!({"type": "document", "title": media.filename(), "source": {
                "type": "base64", "media_type": "application/pdf", "data": data}}),
            Err(error) => unreadable(error),
        };
    }
    let is_text = mime.starts_with("text/")
        || ["application/json", "application/xml", "application/yaml"]
            .iter()
            .any(|kind| mime.starts_with(kind));
    if is_text {
        return match media.as_bytes().await {
            Ok(bytes) => json!({"type": "document", "title": media.filename(), "source": {
                "type": "text", "media_type": "text/plain",
                "data": String::from_utf8_lossy(&bytes)}}),
            Err(error) => unreadable(error),
        };
    }
    text_block(format!(
        "[{} not sent: the Messages API takes JPEG, PNG, GIF and WebP images, PDF and text \
         documents]",
        describe(media)
    ))
}

fn is_http_url(source: &str) -> bool {
    reqwest::Url::parse(source).is_ok_and(|url| matches!(url.scheme(), "http" | "https"))
}
