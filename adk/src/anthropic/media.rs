//! The content block each medium becomes in a Messages request. Gathering a request's media and
//! artifacts is shared with the OpenAI executor (`provider::Contents`).

use crate::primitives::{Media, MediaKind};
use serde_json::{Value, json};

/// The image types the Messages API takes.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

pub(crate) use crate::provider::{Contents, describe_media as describe, text_part as text_block};

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
